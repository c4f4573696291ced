// SPDX-License-Identifier: Apache-2.0
/// \file
/// engine_overhead's parts (engine_overhead.cpp has the method): the command line, the five ways
/// of moving items (overhead_runs.cpp), the rates each gathers, and the report
/// (overhead_report.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry_perf::overhead {

using u64 = std::uint64_t;

struct config {
    u64 items = 1'000'000;
    int reps = 5;
    std::vector<int> threads{1, 2};
    int concurrency = 0;        // 0 = the thread count
    std::size_t in_flight = 0;  // 0 = what ferry derives
    bool stats = false;
    bool json = false;
    std::vector<std::string> variants;  // --variants; empty = all
};

/// What one run saw: the consumer's count and sum (checked), and the timed seconds.
struct run_result {
    double seconds = 0;
    u64 count = 0;
    u64 sum = 0;
};

enum class variant_kind {
    ferry_ordered,
    ferry_unordered,
    flow,
    flow_ungated,
    flow_limiter,
    pipeline
};

struct variant {
    variant_kind kind;
    const char* name;
    const char* flag;  ///< its name for --variants
};

inline constexpr variant kVariants[] = {
    {variant_kind::ferry_ordered, "ferry", "ferry"},
    {variant_kind::ferry_unordered, "ferry unordered", "ferry-unordered"},
    {variant_kind::flow, "tbb::flow", "flow"},
    {variant_kind::flow_ungated, "tbb::flow ungated", "flow-ungated"},
    {variant_kind::flow_limiter, "tbb::flow+limiter", "flow-limiter"},
    {variant_kind::pipeline, "parallel_pipeline", "pipeline"},
};

struct series {
    int threads = 0;
    int concurrency = 0;
    std::size_t in_flight = 0;
    const variant* v = nullptr;
    std::vector<double> rates;  // items/s, one per repetition

    [[nodiscard]] std::vector<double> sorted() const {
        auto s = rates;
        std::sort(s.begin(), s.end());
        return s;
    }
    [[nodiscard]] double median() const {
        auto s = sorted();
        if (s.empty()) return 0;
        const std::size_t m = s.size() / 2;
        return s.size() % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
    }
    [[nodiscard]] double min() const { return sorted().front(); }
    [[nodiscard]] double max() const { return sorted().back(); }
};

/// The in_flight ferry derives for this pipeline (what the bounded baselines use by default).
std::size_t ferry_in_flight(int t, int c);

/// One timed run of `s`'s variant over `n` items; `print_stats` prints ferry's stats table to
/// stderr after it (ferry variants only).
run_result run_variant(const series& s, u64 n, bool print_stats);

struct machine_load;

/// The results as a Markdown table with the ratios and the verdict against the target.
void print_markdown(const config& cfg, const std::vector<series>& all, const machine_load& load);

/// The results as JSON, one object per series.
void print_json(const config& cfg, const std::vector<series>& all, const machine_load& load);

}  // namespace ferry_perf::overhead
