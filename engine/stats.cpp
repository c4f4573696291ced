// SPDX-License-Identifier: Apache-2.0
/// \file
/// The stats table: one row per stage, and the line that names the bottleneck.

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>

#include "ferry/stats.hpp"

namespace ferry {
namespace {

std::string duration_text(std::chrono::nanoseconds d) {
    char buf[32];
    const auto ns = static_cast<double>(d.count());
    if (ns < 1e3) {
        std::snprintf(buf, sizeof buf, "%.0fns", ns);
    } else if (ns < 1e6) {
        std::snprintf(buf, sizeof buf, "%.1fus", ns / 1e3);
    } else if (ns < 1e9) {
        std::snprintf(buf, sizeof buf, "%.1fms", ns / 1e6);
    } else {
        std::snprintf(buf, sizeof buf, "%.2fs", ns / 1e9);
    }
    return buf;
}

std::string percent(double f) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", f * 100.0);
    return buf;
}

/// The stage whose call has run longest among those in progress, or null.
const stage_stats* longest_running(const std::vector<stage_stats>& stages) {
    const stage_stats* best = nullptr;
    for (const auto& s : stages) {
        if (s.running > 0 && (best == nullptr || s.oldest_running > best->oldest_running)) {
            best = &s;
        }
    }
    return best;
}

/// "4.1 s", "250 ms": durations in the stall line.
std::string seconds_text(std::chrono::nanoseconds d) {
    char buf[32];
    const double s = static_cast<double>(d.count()) / 1e9;
    if (s < 1) {
        std::snprintf(buf, sizeof buf, "%.0f ms", s * 1e3);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f s", s);
    }
    return buf;
}

}  // namespace

std::string pipeline_stats::stall() const {
    if (consumer_waiting < std::chrono::milliseconds(100)) return {};
    const stage_stats* s = longest_running(stages);
    if (s == nullptr) return {};
    return "output waits for item " + std::to_string(s->oldest_item) + " in stage '" + s->name +
           "' (running " + seconds_text(s->oldest_running) + "; the consumer has waited " +
           seconds_text(consumer_waiting) + ")";
}

std::string pipeline_stats::bottleneck() const {
    // A stall: the consumer waits, and a call has been running: that stage holds everything up,
    // however idle its other slots look.
    if (!stall().empty()) return longest_running(stages)->name;
    // Full most of the time and the consumer rarely waiting: the training loop sets the pace. Full
    // while the consumer waits means items are piling up in front of a slow stage instead.
    const double waited = elapsed.count() > 0
                              ? static_cast<double>((consumer_wait + consumer_waiting).count()) /
                                    static_cast<double>(elapsed.count())
                              : 0.0;
    if (full > 0.5 && waited < 0.5) return "consumer";
    double best_util = 0;
    for (const auto& s : stages) best_util = std::max(best_util, s.utilization);
    if (best_util < 0.5) return "none";
    const stage_stats* best = nullptr;
    for (const auto& s : stages) {
        if (best == nullptr || s.utilization > best->utilization) best = &s;
    }
    return best != nullptr ? best->name : std::string("none");
}

std::ostream& operator<<(std::ostream& os, const tuning_decision& d) {
    char head[160];
    std::snprintf(head, sizeof head, "%.1f s: ", static_cast<double>(d.at.count()) / 1e9);
    os << head << d.stage << ' ' << d.from << " -> " << d.to << " (" << d.why << ")";
    char rates[96];
    if (d.rate_after > 0 || d.undone) {
        std::snprintf(rates, sizeof rates, ": %.0f -> %.0f items/s", d.rate_before, d.rate_after);
    } else {
        std::snprintf(rates, sizeof rates, ": %.0f items/s before", d.rate_before);
    }
    os << rates;
    if (d.undone) os << ", undone";
    return os;
}

std::ostream& operator<<(std::ostream& os, const pipeline_stats& s) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "%-16s %-9s %4s %9s %9s %6s %6s %6s %9s %9s %9s %5s %7s %7s %6s\n", "stage",
                  "kind", "conc", "in", "out", "failed", "retry", "filtrd", "mean", "p50", "p99",
                  "util", "starved", "backpr", "queue");
    os << line;
    for (const auto& r : s.stages) {
        char conc[16];
        // A tuned stage: its concurrency now, marked "t".
        std::snprintf(conc, sizeof conc, "%d%s%s", r.concurrency, r.tuned_hi > 0 ? "t" : "",
                      r.io ? "io" : "");
        std::string name = r.name.size() > 16 ? r.name.substr(0, 15) + "~" : r.name;
        std::snprintf(
            line, sizeof line,
            "%-16s %-9s %4s %9llu %9llu %6llu %6llu %6llu %9s %9s %9s %5s %7s %7s %6.1f\n",
            name.c_str(), r.kind.c_str(), conc, static_cast<unsigned long long>(r.items_in),
            static_cast<unsigned long long>(r.items_out), static_cast<unsigned long long>(r.failed),
            static_cast<unsigned long long>(r.retries), static_cast<unsigned long long>(r.filtered),
            duration_text(r.task_mean).c_str(), duration_text(r.task_p50).c_str(),
            duration_text(r.task_p99).c_str(), percent(r.utilization).c_str(),
            percent(r.starved).c_str(), percent(r.backpressured).c_str(), r.queue_mean);
        os << line;
    }
    const double secs = static_cast<double>(s.elapsed.count()) / 1e9;
    std::snprintf(
        line, sizeof line,
        "items: %llu produced = %llu delivered + %llu filtered + %llu failed + %llu "
        "cancelled + %llu pending; %llu outputs in %.2fs (%.0f items/s); threads %d, "
        "in_flight %zu, full %s, consumer waited %s, first output after %s",
        static_cast<unsigned long long>(s.produced), static_cast<unsigned long long>(s.delivered),
        static_cast<unsigned long long>(s.filtered), static_cast<unsigned long long>(s.failed),
        static_cast<unsigned long long>(s.cancelled), static_cast<unsigned long long>(s.pending),
        static_cast<unsigned long long>(s.outputs), secs,
        secs > 0 ? static_cast<double>(s.delivered) / secs : 0.0, s.threads, s.in_flight,
        percent(s.full).c_str(), duration_text(s.consumer_wait).c_str(),
        duration_text(s.first_output).c_str());
    os << line;
    if (s.epochs > 1 && s.first_output_max > s.first_output) {
        os << " (longest " << duration_text(s.first_output_max) << ")";
    }
    if (s.consumer_cpu.count() > 0) {
        os << "; the consumer's CPU between next() calls " << duration_text(s.consumer_cpu);
    }
    os << '\n';
    for (const auto& r : s.stages) {
        if (r.running == 0 && r.timeouts == 0 && r.truncated == 0 && r.counters.empty() &&
            r.padded_cost <= 0) {
            continue;
        }
        os << "stage '" << r.name << "': ";
        const char* sep = "";
        if (r.running > 0) {
            os << r.running << " call" << (r.running == 1 ? "" : "s")
               << " in progress, the oldest running " << seconds_text(r.oldest_running)
               << " on item " << r.oldest_item;
            sep = "; ";
        }
        if (r.timeouts > 0) {
            os << sep << r.timeouts << " call" << (r.timeouts == 1 ? "" : "s") << " timed out";
            sep = "; ";
        }
        if (r.truncated > 0) {
            os << sep << r.truncated << " result" << (r.truncated == 1 ? "" : "s")
               << " truncated (input cut or damaged; decoded up to where it ends)";
            sep = "; ";
        }
        if (r.padded_cost > 0) {
            os << sep << "batches cost " << r.cost << " of " << r.padded_cost
               << " padded to their largest element (padding "
               << percent((r.padded_cost - r.cost) / r.padded_cost) << ")";
            sep = "; ";
        }
        for (const auto& [name, n] : r.counters) {
            os << sep << name << " " << n;
            sep = ", ";
        }
        os << '\n';
    }
    if (!s.tuning.empty()) {
        // The tuner: its ranges and its last decisions.
        os << "tuned:";
        for (const auto& r : s.stages) {
            if (r.tuned_hi > 0) {
                os << ' ' << r.name << ' ' << r.concurrency << " (" << r.tuned_lo << '-'
                   << r.tuned_hi << ')';
            }
        }
        os << "; " << s.tuning.size() << " decision" << (s.tuning.size() == 1 ? "" : "s")
           << ", the last:\n";
        const std::size_t shown = std::min<std::size_t>(s.tuning.size(), 5);
        for (std::size_t i = s.tuning.size() - shown; i < s.tuning.size(); ++i) {
            os << "  " << s.tuning[i] << '\n';
        }
    }
    const std::string b = s.bottleneck();
    if (const std::string stalled = s.stall(); !stalled.empty()) {
        os << "bottleneck: " << b << " (stalled: " << stalled << ")\n";
    } else if (b == "consumer") {
        os << "bottleneck: consumer (the pipeline was full " << percent(s.full)
           << " of the time: loading outpaces the training loop)\n";
    } else if (b == "none") {
        os << "bottleneck: none saturated (no stage was busy half of the time): the source, the "
              "consumer's pace or per-item hand-off costs set the rate\n";
    } else {
        const auto it = std::find_if(s.stages.begin(), s.stages.end(),
                                     [&](const stage_stats& r) { return r.name == b; });
        os << "bottleneck: " << b;
        if (it != s.stages.end()) {
            os << " (busy " << percent(it->utilization) << " of its " << it->concurrency << " slot"
               << (it->concurrency == 1 ? "" : "s");
            if (it->tuned_hi > 0 && it->concurrency >= it->tuned_hi) {
                os << ", the top of its tuned range: raise the top)";  // the tuner can do no more
            } else if (it->tuned_hi > 0) {
                os << "; the tuner moves it)";
            } else {
                os << "; raise its concurrency or threads)";
            }
        }
        os << '\n';
    }
    return os;
}

}  // namespace ferry
