// SPDX-License-Identifier: Apache-2.0
/// \file
/// many_sources: what drawing items from several sources (and routing them) costs the engine per
/// item, against the plain chain in the same run:
///
///     plain   ferry::from(one vector of N integers)                         -> 3 no-op maps
///     mix     ferry::mix<T>({{a, 5}, {b, 3}, {c, 2}}, all_exhausted)        -> 3 no-op maps
///             (three vectors of N/2, 3N/10 and N/5: the same N items, each shuffled)
///     zip     ferry::zip(a vector of N, the same vector) -> a map back to one integer
///             (the pair's mean) -> 3 no-op maps
///     merge   ferry::merge<T>({from(first half), from(second half)}) (round robin, branches
///             without stages) -> 3 no-op maps
///     route   ferry::from(one vector of N).route(parity, two branches without stages)
///             -> 3 no-op maps
///     flat_map             ferry::from(one vector of N).flat_map(x -> {x}) -> 3 no-op maps
///     route, a flat_map    the route with that flat_map in its odd branch (the branches are
///                          numbered apart and a serial join puts them back in order)
///                          -> 3 no-op maps
///
/// each summed by a range-for on the calling thread (`--threads` arena threads, map
/// concurrency 1). Variants interleave within each repetition; the median of `--reps` runs is
/// reported with `plain ÷ variant`, the share of plain's speed each variant keeps. Every run
/// checks its item count and sum.
///
/// Usage: many_sources [--items N] [--reps R] [--threads T]

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ferry/ferry.hpp>

#include "common/args.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct result {
    std::uint64_t count = 0;
    std::uint64_t sum = 0;
    double seconds = 0;
};

template <class B>
result run(const B& source, int threads) {
    const auto noop = [](std::uint64_t x) { return x; };
    auto pipe = source.map(noop).map(noop).map(noop).build({.threads = threads});
    result r;
    const auto t0 = clock_type::now();
    for (const std::uint64_t x : pipe) {
        ++r.count;
        r.sum += x;
    }
    r.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    return r;
}

std::vector<std::uint64_t> numbers(std::uint64_t from, std::uint64_t n) {
    std::vector<std::uint64_t> v(n);
    for (std::uint64_t i = 0; i < n; ++i) v[i] = from + i;
    return v;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t items = 1'000'000;
    std::uint64_t reps = 5;
    int threads = 2;
    ferry_perf::options opt(argc, argv, "usage: many_sources [--items N] [--reps R] [--threads T]");
    while (opt.next()) {
        const std::string_view flag = opt.name();
        if (flag == "--items") {
            items = opt.integer<std::uint64_t>(1);
        } else if (flag == "--reps") {
            reps = opt.integer<std::uint64_t>(1);
        } else if (flag == "--threads") {
            threads = opt.integer(1);
        } else {
            opt.unknown();
        }
    }
    items -= items % 10;
    const auto all = numbers(0, items);
    const auto a = numbers(0, items / 2);
    const auto b = numbers(items / 2, items * 3 / 10);
    const auto c = numbers(items * 8 / 10, items / 5);
    const std::uint64_t want = items * (items - 1) / 2;

    const auto plain = ferry::from(all);
    const auto mixed =
        ferry::mix<std::uint64_t>({{a, 5, {.shuffle = true, .seed = 1}},
                                   {b, 3, {.shuffle = true, .seed = 2}},
                                   {c, 2, {.shuffle = true, .seed = 3}}},
                                  {.seed = 7, .stop = ferry::mix_stop::all_exhausted});
    const auto zipped = ferry::zip(all, all).map(
        [](const std::pair<std::uint64_t, std::uint64_t>& p) { return (p.first + p.second) / 2; });

    const auto low = numbers(0, items / 2);
    const auto high = numbers(items / 2, items / 2);
    const auto merged = ferry::merge<std::uint64_t>({ferry::from(low), ferry::from(high)});
    const auto same = [](auto b) { return b; };
    const auto routed = ferry::from(all).route([](std::uint64_t x) { return x % 2; }, same, same);
    const auto one = [](std::uint64_t x) { return std::array<std::uint64_t, 1>{x}; };
    const auto expanded = ferry::from(all).flat_map(one);
    const auto rejoined = ferry::from(all).route([](std::uint64_t x) { return x % 2; }, same,
                                                 [one](auto b) { return b.flat_map(one); });

    std::vector<std::pair<const char*, std::vector<double>>> rates{
        {"plain", {}},      {"mix of 3", {}}, {"zip of 2", {}},         {"merge of 2", {}},
        {"route to 2", {}}, {"flat_map", {}}, {"route, a flat_map", {}}};
    for (std::uint64_t r = 0; r < reps; ++r) {
        const result got[] = {run(plain, threads),   run(mixed, threads),  run(zipped, threads),
                              run(merged, threads),  run(routed, threads), run(expanded, threads),
                              run(rejoined, threads)};
        for (std::size_t v = 0; v < rates.size(); ++v) {
            if (got[v].count != items || got[v].sum != want) {
                std::fprintf(stderr, "many_sources: %s delivered %llu items summing to %llu\n",
                             rates[v].first, static_cast<unsigned long long>(got[v].count),
                             static_cast<unsigned long long>(got[v].sum));
                return 1;
            }
            rates[v].second.push_back(static_cast<double>(items) / got[v].seconds);
        }
    }
    const double base = median(rates[0].second);
    std::printf("| variant | median items/s | min - max | this / plain |\n|---|---:|---:|---:|\n");
    for (const auto& [name, v] : rates) {
        std::printf("| %s | %.3f M | %.3f-%.3f | %.2f |\n", name, median(v) / 1e6,
                    *std::min_element(v.begin(), v.end()) / 1e6,
                    *std::max_element(v.begin(), v.end()) / 1e6, median(v) / base);
    }
    std::printf("\n%llu items, %llu repetitions, %d threads\n",
                static_cast<unsigned long long>(items), static_cast<unsigned long long>(reps),
                threads);
}
