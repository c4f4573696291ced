// SPDX-License-Identifier: Apache-2.0
/// \file
/// failure_log: a burst of lines per stage and window, then a count of the rest.

#include "failure_log.hpp"

#include "ferry/detail/redact.hpp"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

namespace ferry::detail {

failure_log::failure_log(logger sink, int burst, std::chrono::milliseconds window)
    : sink_(std::move(sink)), burst_(std::max(0, burst)), window_(window) {
    if (!sink_) {
        sink_ = [](log_level level, std::string_view line) {
            const char* tag = level == log_level::error     ? "error"
                              : level == log_level::warning ? "warning"
                                                            : "info";
            std::fprintf(stderr, "ferry %s: %.*s\n", tag, static_cast<int>(line.size()),
                         line.data());
        };
    }
}

void failure_log::log(const std::string& stage, log_level level, const std::string& line) {
    std::string summary;
    bool print = false;
    {
        std::lock_guard lock(mutex_);
        auto& w = windows_[stage];
        const auto now = std::chrono::steady_clock::now();
        if (now - w.start >= window_) {
            summary = summary_line(stage, w);
            w.start = now;
            w.printed = 0;
            w.suppressed = 0;
        }
        if (w.printed < burst_) {
            ++w.printed;
            print = true;
        } else {
            ++w.suppressed;
        }
    }
    emit(log_level::warning, summary);
    if (print) emit(level, line);
}

void failure_log::flush() {
    std::vector<std::string> lines;
    {
        std::lock_guard lock(mutex_);
        for (auto& [stage, w] : windows_) {
            lines.push_back(summary_line(stage, w));
            w.suppressed = 0;
        }
    }
    for (auto& l : lines) emit(log_level::warning, l);
}

std::string failure_log::summary_line(const std::string& stage, const window& w) const {
    if (w.suppressed == 0) return {};
    return "stage '" + stage + "': " + std::to_string(w.suppressed) +
           " more failures not shown (see pipeline::failures())";
}

void failure_log::emit(log_level level, const std::string& line) {
    if (line.empty()) return;
    try {
        // The last line of defence for log lines: no URL's credential, no control character
        // (a forged line, a terminal escape) reaches the sink, whoever wrote the message.
        sink_(level, redact_text(line));
    } catch (...) {
        // A throwing logger must not take the pipeline down.
    }
}

}  // namespace ferry::detail
