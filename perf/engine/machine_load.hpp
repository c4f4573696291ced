// SPDX-License-Identifier: Apache-2.0
/// \file
/// How busy the machine was with other processes while a benchmark ran (Linux: /proc/stat,
/// /proc/loadavg, getrusage), so that a report can say how far its numbers can be trusted.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

namespace ferry_perf::overhead {

/// CPU seconds summed over all CPUs, from /proc/stat (Linux); nullopt elsewhere.
struct cpu_times {
    double busy = 0;
    double total = 0;
};
inline std::optional<cpu_times> machine_cpu() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
        cpu != "cpu") {
        return std::nullopt;
    }
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double busy = user + nice + system + irq + softirq + steal;
    return cpu_times{busy / tick, (busy + idle + iowait) / tick};
}

/// CPU seconds this process has used.
inline double own_cpu() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
    return secs(ru.ru_utime) + secs(ru.ru_stime);
}

/// How busy the machine was with other processes: the benchmark shares it, so this says how far
/// the numbers can be trusted. Fractions of all CPUs; negative when unknown.
struct machine_load {
    double before = -1;  ///< in the 0.5 s before the first run
    double during = -1;  ///< during the whole benchmark, minus this process's own CPU time
    std::string loadavg;

    void sample_before() {
        const auto a = machine_cpu();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        const auto b = machine_cpu();
        if (a && b && b->total > a->total) before = (b->busy - a->busy) / (b->total - a->total);
        std::ifstream in("/proc/loadavg");
        std::getline(in, loadavg);
    }
    void start() {
        start_ = machine_cpu();
        own0_ = own_cpu();
    }
    void stop() {
        const auto end = machine_cpu();
        if (!start_ || !end || end->total <= start_->total) return;
        const double others = (end->busy - start_->busy) - (own_cpu() - own0_);
        during = std::max(0.0, others / (end->total - start_->total));
    }

  private:
    std::optional<cpu_times> start_;
    double own0_ = 0;
};

}  // namespace ferry_perf::overhead
