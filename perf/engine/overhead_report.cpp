// SPDX-License-Identifier: Apache-2.0
/// \file
/// engine_overhead's report: medians, ratios against each oneTBB baseline (of medians, and the
/// median of per-repetition ratios), the machine's load, and the verdict against the issue's
/// target, as a Markdown table or as JSON.

#include <oneapi/tbb/version.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "machine_load.hpp"
#include "overhead.hpp"

namespace ferry_perf::overhead {

namespace {

std::string rate_text(double r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f M", r / 1e6);
    return buf;
}

std::string ratio_text(double num, double den) {
    if (den <= 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * num / den);
    return buf;
}

/// The median items/s of a variant at `threads`, or 0 when it was not run (--variants).
double median_of(const std::vector<series>& all, int threads, variant_kind k) {
    for (const auto& s : all) {
        if (s.threads == threads && s.v->kind == k) return s.median();
    }
    return 0;
}

const series* find_series(const std::vector<series>& all, int threads, variant_kind k) {
    for (const auto& s : all) {
        if (s.threads == threads && s.v->kind == k) return &s;
    }
    return nullptr;
}

/// Median of the per-repetition ratios a[i] / b[i]: runs of one repetition sit next to each
/// other in time, so this pairing cancels slow drifts in machine load better than a ratio of
/// medians does.
double paired_ratio(const series& a, const series& b) {
    std::vector<double> r;
    for (std::size_t i = 0; i < a.rates.size() && i < b.rates.size(); ++i) {
        if (b.rates[i] > 0) r.push_back(a.rates[i] / b.rates[i]);
    }
    if (r.empty()) return 0;
    std::sort(r.begin(), r.end());
    const std::size_t m = r.size() / 2;
    return r.size() % 2 == 1 ? r[m] : (r[m - 1] + r[m]) / 2;
}

std::string percent_text(double f) {
    if (f < 0) return "unknown";
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * f);
    return buf;
}

/// A ratio for JSON: null when the baseline was not run.
std::string json_ratio(double num, double den) {
    return den > 0 ? std::to_string(num / den) : std::string("null");
}

}  // namespace

void print_markdown(const config& cfg, const std::vector<series>& all, const machine_load& load) {
    std::printf(
        "engine_overhead: source -> 3 no-op maps -> consumer; %llu items, %d rep(s), "
        "median items/s (min-max); %u hardware threads; oneTBB %s\n",
        static_cast<unsigned long long>(cfg.items), cfg.reps, std::thread::hardware_concurrency(),
        TBB_runtime_version());
    std::printf(
        "Machine: other processes used %s of the CPUs during the benchmark (%s just before); "
        "load average %s\n",
        percent_text(load.during).c_str(), percent_text(load.before).c_str(),
        load.loadavg.empty() ? "unknown" : load.loadavg.c_str());
    if (load.during > 0.1 || load.before > 0.1) {
        std::printf(
            "WARNING: the machine was busy with other work; absolute numbers are unreliable and "
            "ratios are skewed (spinning engines suffer most). Rerun on an idle machine.\n");
    }
    std::printf(
        "\n| threads | conc | in_flight | variant | median items/s | min - max | "
        "vs tbb::flow | vs flow+limiter | vs parallel_pipeline |\n");
    std::printf("|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for (const auto& s : all) {
        const double m = s.median();
        const std::string bound =
            s.v->kind == variant_kind::flow || s.v->kind == variant_kind::flow_ungated
                ? "unbounded"
                : std::to_string(s.in_flight);
        std::printf("| %d | %d | %s | %s | %s | %s - %s | %s | %s | %s |\n", s.threads,
                    s.concurrency, bound.c_str(), s.v->name, rate_text(m).c_str(),
                    rate_text(s.min()).c_str(), rate_text(s.max()).c_str(),
                    ratio_text(m, median_of(all, s.threads, variant_kind::flow)).c_str(),
                    ratio_text(m, median_of(all, s.threads, variant_kind::flow_limiter)).c_str(),
                    ratio_text(m, median_of(all, s.threads, variant_kind::pipeline)).c_str());
    }
    std::printf("\nTarget (issue): ferry >= 50%% of tbb::flow in the same run (goal 80%%).\n");
    for (int t : cfg.threads) {
        const series* raw = find_series(all, t, variant_kind::flow);
        if (raw == nullptr) continue;
        for (auto k : {variant_kind::ferry_ordered, variant_kind::ferry_unordered}) {
            const series* f = find_series(all, t, k);
            if (f == nullptr) continue;
            const double r = f->median() / raw->median();
            std::printf("threads=%d: %s / tbb::flow = %.2f (median of per-rep ratios %.2f): %s\n",
                        t, f->v->name, r, paired_ratio(*f, *raw),
                        r >= 0.8   ? "meets the 80% goal"
                        : r >= 0.5 ? "meets the 50% floor, below the 80% goal"
                                   : "BELOW the 50% floor");
        }
    }
    // ferry builds a map whose concurrency is at least its threads without TBB's gate: against
    // the same graph ungated, what is left is ferry's own bookkeeping and hand-off.
    for (int t : cfg.threads) {
        const series* ungated = find_series(all, t, variant_kind::flow_ungated);
        const series* f = find_series(all, t, variant_kind::ferry_ordered);
        if (ungated == nullptr || f == nullptr || f->concurrency < t) continue;
        std::printf(
            "threads=%d: ferry / tbb::flow ungated = %.2f (median of per-rep ratios %.2f)\n", t,
            f->median() / ungated->median(), paired_ratio(*f, *ungated));
    }
}

void print_json(const config& cfg, const std::vector<series>& all, const machine_load& load) {
    std::ostringstream os;
    os << "{\n  \"benchmark\": \"engine_overhead\",\n  \"items\": " << cfg.items
       << ",\n  \"reps\": " << cfg.reps
       << ",\n  \"hardware_threads\": " << std::thread::hardware_concurrency() << ",\n  \"tbb\": \""
       << TBB_runtime_version() << "\",\n  \"other_cpu_before\": " << load.before
       << ",\n  \"other_cpu_during\": " << load.during << ",\n  \"results\": [\n";
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto& s = all[i];
        const double m = s.median();
        const series* flow = find_series(all, s.threads, variant_kind::flow);
        const std::string paired =
            flow != nullptr ? std::to_string(paired_ratio(s, *flow)) : std::string("null");
        os << "    {\"threads\": " << s.threads << ", \"concurrency\": " << s.concurrency
           << ", \"in_flight\": "
           << (s.v->kind == variant_kind::flow || s.v->kind == variant_kind::flow_ungated
                   ? 0
                   : s.in_flight)
           << ", \"variant\": \"" << s.v->flag << "\", \"median\": " << m
           << ", \"min\": " << s.min() << ", \"max\": " << s.max()
           << ", \"vs_flow\": " << json_ratio(m, median_of(all, s.threads, variant_kind::flow))
           << ", \"paired_vs_flow\": " << paired << ", \"vs_flow_ungated\": "
           << json_ratio(m, median_of(all, s.threads, variant_kind::flow_ungated))
           << ", \"vs_flow_limiter\": "
           << json_ratio(m, median_of(all, s.threads, variant_kind::flow_limiter))
           << ", \"vs_parallel_pipeline\": "
           << json_ratio(m, median_of(all, s.threads, variant_kind::pipeline)) << ", \"rates\": [";
        for (std::size_t k = 0; k < s.rates.size(); ++k) os << (k ? ", " : "") << s.rates[k];
        os << "]}" << (i + 1 < all.size() ? "," : "") << '\n';
    }
    os << "  ]\n}\n";
    std::fputs(os.str().c_str(), stdout);
}

}  // namespace ferry_perf::overhead
