// SPDX-License-Identifier: Apache-2.0
/// \file
/// tuner_state: what the tuner keeps between intervals (tuning.cpp) — its policy, the tuned
/// stages, the readings at the last interval's end, and its decisions for stats().
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "arena_threads.hpp"
#include "tuner_policy.hpp"

namespace ferry::detail {

struct stage_runtime;

/// A CPU-time clock's reading in ns (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID).
inline std::int64_t cpu_clock_ns(clockid_t clock) noexcept {
    timespec t{};
    clock_gettime(clock, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

struct tuner_state {
    tuner_state(std::vector<tuned_stage_range> ranges, tuner_budget budget)
        : policy(std::move(ranges), budget) {}

    tuner_policy policy;  ///< the monitor thread's
    /// The arena's working threads (made with the arena, runtime.cpp; closed before it goes).
    std::unique_ptr<arena_threads> threads;
    /// The stages the policy measures (tuned ones and untuned map-like ones), in its order.
    std::vector<stage_runtime*> stages;
    std::vector<stage_runtime*> arena;  ///< every stage whose calls run on the arena
    std::chrono::steady_clock::time_point built = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last;  ///< the last interval's end
    std::uint64_t epochs = 0;                    ///< epochs started at the last interval's end
    /// The epoch's first output has been taken: its first interval (from the epoch's start)
    /// has ended.
    bool warm = false;
    // Readings at the last interval's end.
    std::vector<double> busy_ticks;  ///< per measured stage
    double arena_ticks = 0;          ///< the arena's stages' summed
    std::uint64_t delivered = 0;
    std::uint64_t outputs_read = 0;
    std::int64_t wait_ns = 0;
    std::int64_t cpu_ns = 0;
    // The monitor's samples in this interval (sample(), the same thread).
    std::uint64_t samples = 0;
    std::uint64_t full_samples = 0;
    double in_flight_sum = 0;

    mutable std::mutex mutex;  ///< guards `decisions` and `error`, read by stats() and next()
    std::vector<tuning_decision> decisions;
    std::exception_ptr error;         ///< a budget that cannot work
    std::atomic<bool> failed{false};  ///< `error` is set

    // The memory budget's measure of a source item (measure_output, the consumer's thread).
    // Bytes per source item are read where an output carries its source items' accounting
    // (a batch_by window's last batch, a flat_map input's last output): the bytes of it and of
    // the outputs before it that carried none, over its items.
    std::uint64_t carried_bytes = 0;  ///< the consumer's output bytes
                                      ///< (`consumer_side::note_output_bytes`) at the last carrier
    bool sized = false;               ///< in_flight was set from the first measurement
    /// The most bytes per source item measured since the monitor last took it (the consumer
    /// raises it, the monitor exchanges it for 0 at each interval's end).
    std::atomic<std::uint64_t> interval_item_bytes{0};
    /// The same, measured at the stages' calls' outputs (measure_stage_output: an item's form
    /// between stages). The first measurement at the consumer takes it into account; the
    /// monitor takes it only after that (`item_bytes` set), so that in_flight is first sized
    /// from an output, as without it.
    std::atomic<std::uint64_t> stage_item_bytes{0};
    /// The monitor's: the last interval's most with one measured, at the outputs and at the
    /// stages. `item_bytes` is the larger, so an interval in which no stage call ended (its
    /// items made before, waiting) does not count them at their output's size.
    std::uint64_t last_output_bytes = 0;
    std::uint64_t last_stage_bytes = 0;
    /// The bytes per source item the budget counts now (the last interval's most, or the first
    /// measurement): `stats().bytes_in_flight` is the items in flight times this.
    std::atomic<std::uint64_t> item_bytes{0};
};

}  // namespace ferry::detail
