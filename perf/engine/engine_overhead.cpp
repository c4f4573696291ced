// SPDX-License-Identifier: Apache-2.0
/// \file
/// engine_overhead: how many items per second go through
///
///     source (an iota of 64-bit integers) -> 3 no-op map stages -> consumer (sums the items)
///
/// with ferry (public API only, written as a user would), against the same work hand-written with
/// oneTBB, all in one run, for each thread count (default 1 and 2). The stages do nothing, so
/// the numbers are pure per-item engine overhead.
///
/// Variants (per thread count t; c = map concurrency, default t; in_flight defaults to what ferry
/// picks for this pipeline and is used for every bounded variant):
///
///  * `ferry`            `ferry::from(iota).map(f, c).map(f, c).map(f, c).build({.threads = t})`
///                       and a range-for on the calling thread that sums the items. Ordered (the
///                       default): items reach the loop in source order.
///  * `ferry unordered`  the same with `.ordered = false`.
///  * `tbb::flow`        input_node -> 3 function_node(c) -> function_node(serial) sink that sums,
///                       built and waited for inside a `task_arena(t, 0)`, with a
///                       `global_control(max_allowed_parallelism, t + 1)` as ferry holds, so the
///                       arena really gets t threads. Compared with ferry it does NOT: keep
///                       source order (the sink sees completion order), bound the items in
///                       flight (function_nodes queue without limit, so the input node runs
///                       ahead), hand items to another thread (the sink runs on an arena thread;
///                       ferry hands every item through a queue to the consumer thread, which
///                       is one more thread than t), type-erase values, pool boxes, keep
///                       per-stage counters / latency histograms / timings, or support errors,
///                       filters, batches and epochs.
///  * `tbb::flow ungated` the same with `flow::unlimited` function_nodes, as ferry builds a
///                       map whose concurrency is at least its threads (at most `threads` calls
///                       run at once either way): what is left between it and ferry is ferry's
///                       own bookkeeping and its hand-off to the consumer thread.
///  * `tbb::flow+limiter` the same with a limiter_node(in_flight) after the input node whose
///                       decrementer the sink feeds: the bounded in-flight ferry has, still
///                       unordered and without the consumer hand-off.
///  * `parallel_pipeline` `tbb::parallel_pipeline(in_flight tokens, serial_in_order source &
///                       3 parallel no-op filters & serial_in_order sink)`, in the same arena
///                       set-up: ordered and bounded like ferry's default, but no consumer
///                       hand-off.
///
/// In the baselines the calling thread enters the arena (`task_arena::execute`) and works as one
/// of its t threads; ferry's arena has t workers of its own and the calling thread is the
/// consumer. Only the item loop is timed (not building or destroying the pipeline / graph).
/// Variants are interleaved within each repetition so that drift hits all of them alike; one
/// untimed warm-up pass (items / 10) runs first. Every run checks the count and sum it got.
///
/// Usage: engine_overhead [--items N] [--reps R] [--threads 1,2] [--concurrency C]
///                        [--in-flight K] [--variants a,b] [--stats] [--json]
///   --items       items per run (default 1000000)
///   --reps        timed repetitions per variant (default 5); the median is reported
///   --threads     comma-separated thread counts (default 1,2)
///   --concurrency concurrency of each map stage / function_node (default: the thread count)
///   --in-flight   bound for ferry, the limiter and the pipeline's tokens (default: ferry's)
///   --stats       print ferry's stats table of the last run of each ferry variant to stderr
///   --variants    comma-separated subset to run (for profiling): ferry, ferry-unordered, flow,
///                 flow-ungated, flow-limiter, pipeline (default: all)
///   --json        print the results as JSON instead of the Markdown table
///
/// Files: overhead.hpp (the parts' vocabulary), overhead_runs.cpp (the variants),
/// overhead_report.cpp (the table and JSON), machine_load.hpp (how busy the machine was).

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "machine_load.hpp"
#include "overhead.hpp"

using namespace ferry_perf::overhead;

namespace {

[[noreturn]] void usage(const char* argv0, const std::string& problem) {
    std::fprintf(stderr,
                 "%s\nusage: %s [--items N] [--reps R] [--threads 1,2] [--concurrency C] "
                 "[--in-flight K] [--variants a,b] [--stats] [--json]\n",
                 problem.c_str(), argv0);
    std::exit(2);
}

template <class T>
T parse_number(const char* argv0, std::string_view flag, std::string_view text) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
        usage(argv0, std::string(flag) + ": not a number: '" + std::string(text) + "'");
    }
    return value;
}

config parse(int argc, char** argv) {
    config cfg;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= argc) usage(argv[0], std::string(arg) + " needs a value");
            return argv[++i];
        };
        if (arg == "--items") {
            cfg.items = parse_number<u64>(argv[0], arg, value());
        } else if (arg == "--reps") {
            cfg.reps = parse_number<int>(argv[0], arg, value());
        } else if (arg == "--concurrency") {
            cfg.concurrency = parse_number<int>(argv[0], arg, value());
        } else if (arg == "--in-flight") {
            cfg.in_flight = parse_number<std::size_t>(argv[0], arg, value());
        } else if (arg == "--threads") {
            cfg.threads.clear();
            std::string_view list = value();
            while (!list.empty()) {
                const auto comma = list.find(',');
                cfg.threads.push_back(parse_number<int>(argv[0], arg, list.substr(0, comma)));
                list =
                    comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
            }
        } else if (arg == "--stats") {
            cfg.stats = true;
        } else if (arg == "--variants") {
            std::string_view list = value();
            while (!list.empty()) {
                const auto comma = list.find(',');
                cfg.variants.emplace_back(list.substr(0, comma));
                list =
                    comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
            }
        } else if (arg == "--json") {
            cfg.json = true;
        } else if (arg == "--help" || arg == "-h") {
            usage(argv[0], "engine_overhead: ferry vs hand-written oneTBB, items/s");
        } else {
            usage(argv[0], "unknown argument '" + std::string(arg) + "'");
        }
    }
    if (cfg.items == 0) usage(argv[0], "--items must be at least 1");
    if (cfg.reps < 1) usage(argv[0], "--reps must be at least 1");
    if (cfg.concurrency < 0) usage(argv[0], "--concurrency must be 0 (= threads) or positive");
    for (const auto& name : cfg.variants) {
        if (std::none_of(std::begin(kVariants), std::end(kVariants),
                         [&](const variant& v) { return name == v.flag; })) {
            usage(argv[0],
                  "--variants: unknown variant '" + name +
                      "' (ferry, ferry-unordered, flow, flow-ungated, flow-limiter, pipeline)");
        }
    }
    if (cfg.threads.empty()) usage(argv[0], "--threads needs at least one thread count");
    for (int t : cfg.threads) {
        if (t < 1) usage(argv[0], "--threads: every count must be at least 1");
    }
    return cfg;
}

}  // namespace

int main(int argc, char** argv) {
    const config cfg = parse(argc, argv);

    std::vector<series> all;
    for (int t : cfg.threads) {
        const int c = cfg.concurrency > 0 ? cfg.concurrency : t;
        const std::size_t in_flight = cfg.in_flight > 0 ? cfg.in_flight : ferry_in_flight(t, c);
        for (const auto& v : kVariants) {
            if (cfg.variants.empty() ||
                std::find(cfg.variants.begin(), cfg.variants.end(), v.flag) != cfg.variants.end()) {
                all.push_back({t, c, in_flight, &v, {}});
            }
        }
    }

    const u64 n = cfg.items;
    const u64 expected_sum = n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2);
    bool ok = true;
    auto check = [&](const series& s, const run_result& r, u64 items, u64 sum) {
        if (r.count != items || r.sum != sum) {
            std::fprintf(stderr, "%s threads=%d: got %llu items (sum %llu), expected %llu (%llu)\n",
                         s.v->name, s.threads, static_cast<unsigned long long>(r.count),
                         static_cast<unsigned long long>(r.sum),
                         static_cast<unsigned long long>(items),
                         static_cast<unsigned long long>(sum));
            ok = false;
        }
    };

    machine_load load;
    load.sample_before();
    load.start();

    // Warm-up: starts TBB's workers and faults in the allocators; not timed.
    const u64 warm = std::max<u64>(1, n / 10);
    for (const auto& s : all) {
        const auto r = run_variant(s, warm, false);
        check(s, r, warm, warm % 2 == 0 ? (warm / 2) * (warm - 1) : warm * ((warm - 1) / 2));
    }

    for (int rep = 0; rep < cfg.reps; ++rep) {
        for (auto& s : all) {
            const bool is_ferry = s.v->kind == variant_kind::ferry_ordered ||
                                  s.v->kind == variant_kind::ferry_unordered;
            const auto r = run_variant(s, n, cfg.stats && is_ferry && rep + 1 == cfg.reps);
            check(s, r, n, expected_sum);
            s.rates.push_back(static_cast<double>(n) / r.seconds);
            std::fprintf(stderr, "rep %d/%d threads=%d %-18s %8.3f M items/s\n", rep + 1, cfg.reps,
                         s.threads, s.v->name, s.rates.back() / 1e6);
        }
    }

    load.stop();

    if (cfg.json) {
        print_json(cfg, all, load);
    } else {
        print_markdown(cfg, all, load);
    }
    return ok ? 0 : 1;
}
