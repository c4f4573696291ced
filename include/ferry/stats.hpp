// SPDX-License-Identifier: Apache-2.0
/// \file
/// Per-stage statistics: where the time went and what was lost (`ferry::failure`, the failure
/// log's record, is in ferry/failure.hpp, part of ferry::core).
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/export.hpp"
#include "ferry/failure.hpp"

namespace ferry {

/// One decision of the tuner (`pipeline_options::autotune`), as `pipeline_stats::tuning` lists
/// them and `operator<<` prints them:
/// "12.5 s: decode 3 -> 4 (busy 96%, CPU 3.1 of 6 cores, room for 1.25x): 812 -> 1004 items/s".
struct tuning_decision {
    std::chrono::nanoseconds at{0};  ///< since the pipeline was built
    std::string stage;               ///< the stage's name, "in_flight" or "threads" (the arena's)
    int from = 0;
    int to = 0;
    /// The measurements that drove it, e.g. "busy 96%, CPU 3.1 of 6 cores, room for 1.25x"
    /// (the gain the measured bounds leave room for), or for an undo "undo: the rate fell from
    /// 1004 to 790 items/s".
    std::string why;
    /// The interval's delivered rate before it: source items the consumer took in the interval
    /// over its length (items/s).
    double rate_before = 0;
    double rate_after = 0;  ///< the same in the interval after it (0: not measured yet)
    bool undone = false;    ///< a later decision undid it (the rate fell, or the CPU passed)
};

/// One stage's counters and timings, as `pipeline::stats()` reports them.
struct stage_stats {
    std::string name;  ///< e.g. "decode", "map#2", "source", "batch#4"
    std::string kind;  ///< "source", "map", "map_async", "filter", "flat_map", "batch", "unbatch"
    int concurrency = 1;  ///< calls that may run at once (a tuned stage: now)
    bool io = false;      ///< runs on I/O threads rather than the compute arena
    /// `ferry::tuned`: the range the tuner may move `concurrency` in; 0 and 0 otherwise.
    int tuned_lo = 0;
    int tuned_hi = 0;

    std::uint64_t items_in = 0;   ///< elements that entered the stage's callable
    std::uint64_t items_out = 0;  ///< elements it emitted
    std::uint64_t failed = 0;     ///< elements whose call failed (after retries)
    std::uint64_t filtered = 0;   ///< elements it dropped on purpose (filter false, drop_last)
    std::uint64_t retries = 0;    ///< extra attempts made under a retry policy
    /// Results delivered although their input was cut or damaged (a video or audio file decoded
    /// up to where its data ends): counted by `ferry::this_call::note_truncated()`.
    std::uint64_t truncated = 0;
    /// What the stage's calls counted by name with `ferry::this_call::count()` (e.g. `read_url`'s
    /// `cache hits`, `cache misses`, `throttled`), in the order first counted.
    std::vector<std::pair<std::string, std::uint64_t>> counters;
    /// `batch_by`: the summed cost of the batches it emitted, and what they would cost padded to
    /// their largest element (count x largest). `padded_cost - cost` is the padding its
    /// batches carry; 0 for other stages.
    double cost = 0;
    double padded_cost = 0;  ///< see `cost`

    /// Call times. The source's pulls and the calls of map, filter and flat_map stages that take
    /// under ~12 us are timed one in 16 per thread, the timed call standing for the ones before
    /// it (two timestamps would cost more than the rest of such a call's bookkeeping): their
    /// times are estimates, unbiased unless call times repeat with a period of 16, with up to 15
    /// calls per thread not counted yet. Every other call is timed: longer ones, those of stages
    /// with a `timeout` or tuned, batches, routes, map_async, and all of them with `trace_spans`.
    std::chrono::nanoseconds task_mean{0};  ///< mean wall time of one call
    std::chrono::nanoseconds task_p50{0};   ///< median call time (log-bucketed, within ~10%)
    std::chrono::nanoseconds task_p99{0};   ///< 99th percentile call time
    std::chrono::nanoseconds busy{0};       ///< summed call time over all its workers

    /// Fractions of the run's sampled wall time (0..1):
    double utilization = 0;  ///< mean share of its `concurrency` slots that were running a call
    double starved = 0;  ///< idle with nothing queued: waiting on upstream (a slow stage or source)
    /// Idle because the pipeline was full (in-flight limit reached) with nothing waiting upstream
    /// of it: waiting on downstream or the consumer.
    double backpressured = 0;
    /// Messages waiting in front of this stage, sampled while an epoch runs: elements (or
    /// batches), the gaps that filtered and failed items leave, the epoch's end; an I/O or tuned
    /// stage's own queue included. Each stands for at least one source item in flight, so neither
    /// the mean nor the max passes `in_flight`, unless a flat_map before the stage made several
    /// outputs of one item. What an abandoned epoch dropped is not counted; a route's branch that
    /// gets nothing shows 0.
    double queue_mean = 0;
    std::uint64_t queue_max = 0;  ///< the most messages waiting in front of it in any sample

    std::uint64_t timeouts = 0;  ///< calls that ran past the stage's `timeout`
    /// Calls in progress when the stats were taken (the watchdog), and how long the oldest of
    /// them has run, on which source item (within its epoch). `task_p99`, `task_mean` and `busy`
    /// count calls in progress with their time so far; a call that is not timed counts from
    /// the last monitor tick before it started (about a monitor period early, never late).
    /// Calls of `map_async` stages are not tracked here (they run outside ferry's threads).
    std::uint64_t running = 0;
    std::chrono::nanoseconds oldest_running{0};
    std::uint64_t oldest_item = 0;
};

/// Whole-pipeline counters, in source items (a batch of 32 delivered counts 32). Always
/// `produced == delivered + filtered + failed + cancelled + pending`, and `pending` is 0 once no
/// epoch runs and no call of a stopped one does.
/// \code
///   pipe.stop();  // from another thread; the loop ends, calls in progress run on
///   auto s = pipe.stats();
///   // s.pending: items still inside those calls (or queued behind them); once the calls have
///   // returned, ferry counts them as cancelled and s.pending is 0.
/// \endcode
struct FERRY_API pipeline_stats {
    std::vector<stage_stats> stages;
    std::uint64_t produced = 0;
    std::uint64_t delivered = 0;
    std::uint64_t filtered = 0;
    std::uint64_t failed = 0;
    /// Items of epochs ended early, each counted where it was dropped (a stage skipping work
    /// that would be wasted, a call's result after a stop, or the end of the epoch reclaiming
    /// what was still inside the graph): at most `in_flight` per such epoch.
    std::uint64_t cancelled = 0;
    /// Items produced and not yet delivered, filtered, failed or cancelled: at most `in_flight`.
    /// While an epoch runs, what is on its way. After `stop()`, the items of calls still in
    /// progress and of what waits behind them: ferry counts them as cancelled (within ~10 ms)
    /// once those calls have returned, or when the pipeline is destroyed. 0 after an epoch's
    /// end, a `break` or a failure.
    std::uint64_t pending = 0;
    std::uint64_t outputs = 0;  ///< elements handed to the consumer (batches count once)
    std::uint64_t epochs = 0;   ///< epochs started
    int threads = 0;  ///< the arena's threads that work now (the tuner may hold some idle)
    std::size_t in_flight = 0;
    /// With `autotune.memory_budget`: the bytes the items in flight hold as the budget counts
    /// them — the source items in flight now (admitted, not yet taken by the consumer: in
    /// stages, queues, batch_by's window, batches being filled, outputs not yet taken) times
    /// the most bytes per source item measured in the tuner's last interval. 0 before the
    /// first output, and without a memory budget.
    std::uint64_t bytes_in_flight = 0;
    std::chrono::nanoseconds elapsed{0};        ///< wall time while epochs were running
    std::chrono::nanoseconds consumer_wait{0};  ///< time the consumer waited in next()
    /// While the tuner runs (tuned stages, or an autotune budget; else 0): the CPU time the
    /// consumer's thread spent between two `next()` calls — your training loop's own work,
    /// which `autotune.cpu_budget` leaves out of the pipeline's CPU.
    std::chrono::nanoseconds consumer_cpu{0};
    /// From an epoch's start (its first `next()`, or `begin()`) to the consumer taking its first
    /// output — time to first batch: the last epoch's (0 before any output), and the longest of
    /// any epoch (usually the first: cold caches, fresh memory, threads starting).
    std::chrono::nanoseconds first_output{0};
    std::chrono::nanoseconds first_output_max{0};
    /// Fraction of sampled time the pipeline was full (in-flight limit reached): near 1 means
    /// the consumer, not loading, sets the pace.
    double full = 0;
    /// How long the consumer has been waiting in `next()` right now (0: it is not waiting).
    std::chrono::nanoseconds consumer_waiting{0};
    /// The tuner's decisions so far (the last 256), oldest first; empty without tuned stages.
    std::vector<tuning_decision> tuning;

    /// The stage most likely limiting throughput. During a stall (see `stall()`), the stage of
    /// the call that holds it up. Otherwise the stage with the highest utilization, or
    /// "consumer" when the training loop itself is the slow side (the pipeline was full more than
    /// half of the time and the consumer, counting a wait in progress, waited less than half of
    /// it), or "none" (no stage busy half the time).
    [[nodiscard]] std::string bottleneck() const;
    /// Non-empty while the consumer has waited at least 100 ms for its next output and a call is
    /// in progress: names the call that has run longest, which ordered output waits for, e.g.
    /// "output waits for item 523 in stage 'read' (running 4.1 s; the consumer has waited 4.0 s)".
    [[nodiscard]] std::string stall() const;
};

/// Prints the per-stage table and a bottleneck line (and the tuner's last decisions).
FERRY_API std::ostream& operator<<(std::ostream& os, const pipeline_stats& s);
/// "12.5 s: decode 3 -> 4 (busy 96%, CPU 3.1 of 6 cores, room for 1.25x): 812 -> 1004 items/s".
FERRY_API std::ostream& operator<<(std::ostream& os, const tuning_decision& d);

}  // namespace ferry
