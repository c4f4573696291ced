// SPDX-License-Identifier: Apache-2.0
/// \file
/// sampler: what ferry's O(1)-memory shuffle costs against a materialised permutation.
///
///  * `ferry::sampler` over n = 10^9 items (shuffled, world size 8): resident memory before and
///    after making it and reading its first index, the time to that first index, and the cost
///    per index over 10^7 consecutive indices of one rank's epoch (cycle walking included);
///  * the baseline, measured in the same run: a permutation held in memory as PyTorch's samplers
///    hold one (`randperm`, 8 bytes per item): a `std::vector<std::uint64_t>` of 10^7 indices
///    filled and `std::shuffle`d with `std::mt19937_64`, its memory, the time until its first
///    index can be read, and the cost of reading the 10^7 indices afterwards. Its memory and
///    time at 10^9 items are extrapolated linearly (8 GB; the shuffle's time at least 100x, more
///    once the table no longer fits any cache).
///
/// Repetitions alternate the two; the table gives the median and the range. Links ferry::core
/// only: the sampler needs no engine.
///
/// Usage: sampler [--n N] [--indices K] [--baseline-n M] [--reps R]
///   --n           dataset size for ferry's sampler (default 1000000000)
///   --indices     indices read per measurement (default 10000000)
///   --baseline-n  size of the materialised permutation (default 10000000)
///   --reps        repetitions (default 5)

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/sampling.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

/// Resident set size in bytes (VmRSS in /proc/self/status).
std::int64_t rss_bytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
    }
    return -1;
}

double ns_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}

/// Keeps a value alive so that the loop computing it is not optimised away.
volatile std::uint64_t sink = 0;

struct result {
    double memory_bytes = 0;
    double first_index_ns = 0;
    double per_index_ns = 0;
};

result measure_ferry(std::uint64_t n, std::uint64_t indices, std::uint64_t epoch) {
    result r;
    const auto rss0 = rss_bytes();
    const auto t0 = clock_type::now();
    const ferry::sampler s(n, {.shuffle = true, .seed = 42, .rank = 3, .world_size = 8});
    sink = s.index(epoch, 0);
    r.first_index_ns = ns_since(t0);
    r.memory_bytes = static_cast<double>(rss_bytes() - rss0);

    const std::uint64_t k = std::min(indices, s.size());
    std::uint64_t sum = 0;
    const auto t1 = clock_type::now();
    for (std::uint64_t i = 0; i < k; ++i) sum += s.index(epoch, i);
    r.per_index_ns = ns_since(t1) / static_cast<double>(k);
    sink = sum;
    return r;
}

result measure_baseline(std::uint64_t n, std::uint64_t epoch) {
    result r;
    const auto rss0 = rss_bytes();
    const auto t0 = clock_type::now();
    std::vector<std::uint64_t> order(n);
    std::iota(order.begin(), order.end(), std::uint64_t{0});
    std::mt19937_64 rng(42 + epoch);
    std::shuffle(order.begin(), order.end(), rng);
    sink = order[0];
    r.first_index_ns = ns_since(t0);
    r.memory_bytes = static_cast<double>(rss_bytes() - rss0);

    std::uint64_t sum = 0;
    const auto t1 = clock_type::now();
    for (const auto x : order) sum += x;
    r.per_index_ns = ns_since(t1) / static_cast<double>(n);
    sink = sum;
    return r;
}

struct spread {
    double median;
    double min;
    double max;
};

spread summarise(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v.front(), v.back()};
}

std::string bytes_text(double b) {
    char buf[64];
    if (b >= 1e9) {
        std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
    } else if (b >= 1e6) {
        std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
    } else {
        std::snprintf(buf, sizeof buf, "%.0f kB", b / 1e3);
    }
    return buf;
}

std::string time_text(double ns) {
    char buf[64];
    if (ns >= 1e9) {
        std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
    } else if (ns >= 1e6) {
        std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f µs", ns / 1e3);
    }
    return buf;
}

std::uint64_t number_arg(std::string_view value, const char* name) {
    char* end = nullptr;
    const std::string text(value);
    const auto v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v == 0) {
        std::fprintf(stderr, "sampler: %s needs a positive number, not '%s'\n", name, text.c_str());
        std::exit(2);
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t n = 1'000'000'000;
    std::uint64_t indices = 10'000'000;
    std::uint64_t baseline_n = 10'000'000;
    std::uint64_t reps = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr,
                         "usage: sampler [--n N] [--indices K] [--baseline-n M] [--reps R]\n");
            return 2;
        }
        const std::string_view v = argv[++i];
        if (a == "--n") {
            n = number_arg(v, "--n");
        } else if (a == "--indices") {
            indices = number_arg(v, "--indices");
        } else if (a == "--baseline-n") {
            baseline_n = number_arg(v, "--baseline-n");
        } else if (a == "--reps") {
            reps = number_arg(v, "--reps");
        } else {
            std::fprintf(stderr, "sampler: unknown option %s\n", argv[i - 1]);
            return 2;
        }
    }

    std::vector<double> f_mem, f_first, f_per, b_mem, b_first, b_per;
    for (std::uint64_t rep = 0; rep < reps; ++rep) {
        const auto f = measure_ferry(n, indices, rep);
        const auto b = measure_baseline(baseline_n, rep);
        f_mem.push_back(f.memory_bytes);
        f_first.push_back(f.first_index_ns);
        f_per.push_back(f.per_index_ns);
        b_mem.push_back(b.memory_bytes);
        b_first.push_back(b.first_index_ns);
        b_per.push_back(b.per_index_ns);
    }
    const auto fm = summarise(f_mem), ff = summarise(f_first), fp = summarise(f_per);
    const auto bm = summarise(b_mem), bf = summarise(b_first), bp = summarise(b_per);
    const double scale = static_cast<double>(n) / static_cast<double>(baseline_n);

    std::printf("median of %llu runs (min - max); ferry: n = %llu, %llu indices of rank 3 of 8\n\n",
                static_cast<unsigned long long>(reps), static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(std::min<std::uint64_t>(indices, (n + 7) / 8)));
    std::printf("| variant | items | memory (RSS growth) | time to first index | ns per index |\n");
    std::printf("|---|---:|---:|---:|---:|\n");
    std::printf("| ferry::sampler | %llu | %s (%s - %s) | %s (%s - %s) | %.1f (%.1f - %.1f) |\n",
                static_cast<unsigned long long>(n), bytes_text(fm.median).c_str(),
                bytes_text(fm.min).c_str(), bytes_text(fm.max).c_str(),
                time_text(ff.median).c_str(), time_text(ff.min).c_str(), time_text(ff.max).c_str(),
                fp.median, fp.min, fp.max);
    std::printf(
        "| vector + std::shuffle | %llu | %s (%s - %s) | %s (%s - %s) | %.1f (%.1f - %.1f) |\n",
        static_cast<unsigned long long>(baseline_n), bytes_text(bm.median).c_str(),
        bytes_text(bm.min).c_str(), bytes_text(bm.max).c_str(), time_text(bf.median).c_str(),
        time_text(bf.min).c_str(), time_text(bf.max).c_str(), bp.median, bp.min, bp.max);
    std::printf("| the same, extrapolated | %llu | %s | ≥ %s | - |\n",
                static_cast<unsigned long long>(n),
                bytes_text(static_cast<double>(n) * sizeof(std::uint64_t)).c_str(),
                time_text(bf.median * scale).c_str());
    std::printf(
        "\nper index, ferry costs %.0f x reading a materialised permutation, and %.1f x "
        "the baseline's shuffle amortised over its items (%.1f ns)\n",
        fp.median / bp.median, fp.median / (bf.median / static_cast<double>(baseline_n)),
        bf.median / static_cast<double>(baseline_n));
    return 0;
}
