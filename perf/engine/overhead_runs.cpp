// SPDX-License-Identifier: Apache-2.0
/// \file
/// engine_overhead's variants: source -> 3 no-op maps -> consumer through ferry (public API only),
/// a hand-written tbb::flow graph (with and without a limiter_node) and tbb::parallel_pipeline,
/// each timing only its item loop and returning the count and sum it saw.

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <iostream>
#include <ranges>

#include "ferry/ferry.hpp"
#include "overhead.hpp"

namespace ferry_perf::overhead {

namespace {

using bench_clock = std::chrono::steady_clock;

/// The per-stage work: nothing. Every variant calls it through its engine's own machinery.
constexpr auto noop = [](u64 x) noexcept { return x; };

/// Sets TBB's process-wide limit the way ferry does while a pipeline lives (t workers in the arena
/// plus one), so every variant's arena can get t threads even on a 2-core machine.
tbb::global_control worker_limit(int t) {
    return tbb::global_control(tbb::global_control::max_allowed_parallelism,
                               static_cast<std::size_t>(t) + 1);
}

run_result run_ferry(u64 n, int t, int c, std::size_t in_flight, bool ordered, bool print_stats) {
    auto p = ferry::from(std::views::iota(u64{0}, n))
                 .map(noop, c)
                 .map(noop, c)
                 .map(noop, c)
                 .build({.threads = t, .in_flight = in_flight, .ordered = ordered});
    run_result r;
    const auto t0 = bench_clock::now();
    for (const u64 x : p) {
        r.sum += x;
        ++r.count;
    }
    r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    if (print_stats) std::cerr << p.stats() << '\n';
    return r;
}

}  // namespace

std::size_t ferry_in_flight(int t, int c) {
    auto p = ferry::from(std::views::iota(u64{0}, u64{1}))
                 .map(noop, c)
                 .map(noop, c)
                 .map(noop, c)
                 .build({.threads = t});
    return p.stats().in_flight;
}

namespace {

/// Hand-written flow graph: input_node [-> limiter_node] -> 3 function_nodes -> serial sink.
/// `ungated`: the function_nodes' concurrency is `unlimited` (as ferry builds a map whose
/// concurrency is at least its threads) instead of `c`.
run_result run_flow(u64 n, int t, int c, std::size_t limit, bool ungated = false) {
    namespace flow = tbb::flow;
    auto control = worker_limit(t);
    tbb::task_arena arena(t, 0);
    arena.initialize();
    run_result r;
    arena.execute([&] {
        flow::graph g;
        u64 next = 0;
        flow::input_node<u64> source(g, [&](tbb::flow_control& fc) -> u64 {
            if (next == n) {
                fc.stop();
                return 0;
            }
            return next++;
        });
        const std::size_t conc =
            ungated ? static_cast<std::size_t>(flow::unlimited) : static_cast<std::size_t>(c);
        flow::function_node<u64, u64> f1(g, conc, noop);
        flow::function_node<u64, u64> f2(g, conc, noop);
        flow::function_node<u64, u64> f3(g, conc, noop);
        flow::function_node<u64, flow::continue_msg> sink(g, flow::serial, [&](u64 x) {
            r.sum += x;
            ++r.count;
            return flow::continue_msg();
        });
        flow::limiter_node<u64> limiter(g, limit);
        if (limit > 0) {
            flow::make_edge(source, limiter);
            flow::make_edge(limiter, f1);
            flow::make_edge(sink, limiter.decrementer());
        } else {
            flow::make_edge(source, f1);
        }
        flow::make_edge(f1, f2);
        flow::make_edge(f2, f3);
        flow::make_edge(f3, sink);
        const auto t0 = bench_clock::now();
        source.activate();
        g.wait_for_all();
        r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    });
    return r;
}

/// tbb::parallel_pipeline: serial in-order source, 3 parallel no-op filters, serial in-order sink.
run_result run_parallel_pipeline(u64 n, int t, std::size_t tokens) {
    auto control = worker_limit(t);
    tbb::task_arena arena(t, 0);
    arena.initialize();
    run_result r;
    arena.execute([&] {
        u64 next = 0;
        const auto t0 = bench_clock::now();
        tbb::parallel_pipeline(
            tokens, tbb::make_filter<void, u64>(tbb::filter_mode::serial_in_order,
                                                [&](tbb::flow_control& fc) -> u64 {
                                                    if (next == n) {
                                                        fc.stop();
                                                        return 0;
                                                    }
                                                    return next++;
                                                }) &
                        tbb::make_filter<u64, u64>(tbb::filter_mode::parallel, noop) &
                        tbb::make_filter<u64, u64>(tbb::filter_mode::parallel, noop) &
                        tbb::make_filter<u64, u64>(tbb::filter_mode::parallel, noop) &
                        tbb::make_filter<u64, void>(tbb::filter_mode::serial_in_order, [&](u64 x) {
                            r.sum += x;
                            ++r.count;
                        }));
        r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    });
    return r;
}

}  // namespace

run_result run_variant(const series& s, u64 n, bool print_stats) {
    switch (s.v->kind) {
        case variant_kind::ferry_ordered:
            return run_ferry(n, s.threads, s.concurrency, s.in_flight, true, print_stats);
        case variant_kind::ferry_unordered:
            return run_ferry(n, s.threads, s.concurrency, s.in_flight, false, print_stats);
        case variant_kind::flow:
            return run_flow(n, s.threads, s.concurrency, 0);
        case variant_kind::flow_ungated:
            return run_flow(n, s.threads, s.concurrency, 0, true);
        case variant_kind::flow_limiter:
            return run_flow(n, s.threads, s.concurrency, s.in_flight);
        case variant_kind::pipeline:
            return run_parallel_pipeline(n, s.threads, s.in_flight);
    }
    return {};
}

}  // namespace ferry_perf::overhead
