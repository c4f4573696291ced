// SPDX-License-Identifier: Apache-2.0
/// \file
/// consumer_side: what next() keeps between calls — the hand-off it takes results from, the
/// credits and boxes it gives back in bulk, its adaptive spin, the time to the first output.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "box.hpp"
#include "handoff.hpp"

namespace ferry::detail {

/// The consumer's side. Everything but the atomics is the consumer thread's, under the
/// epoch_control mutex; the atomics are read by stats() and the monitor.
struct consumer_side {
    /// The hand-off from the output node (bounded by in_flight through the credits, but for
    /// flat_map children). Producer side: the output node; consumer side: next().
    std::unique_ptr<handoff> out;
    alignas(64) std::atomic<std::int64_t> wait_ns{0};
    std::uint64_t credits = 0;  ///< credits taken back from outputs, not yet returned
    std::vector<box*> boxes;    ///< boxes to give back in bulk
    int spin_limit = 64;        ///< yields before the consumer sleeps (adapts; see next())
    bool named = false;         ///< the consumer's thread is named in the trace
    /// fast_start holds the source for the first output (the tuner reads it).
    std::atomic<bool> starting{false};
    bool awaiting_first = false;  ///< the epoch's first output is not taken yet
    /// Time from an epoch's start to the consumer taking its first output: the last epoch's,
    /// and the longest of any (written by the consumer, read by stats()).
    std::atomic<std::int64_t> first_output_ns{0}, first_output_max_ns{0};
    /// When the consumer began waiting in next() (steady_clock ticks; 0: not waiting).
    std::atomic<std::chrono::steady_clock::rep> waiting_since{0};
    /// Tuning: CPU time the consumer's thread spent outside next() (the training loop's work,
    /// which the CPU budget leaves out), and its thread's CPU clock when it last left next().
    std::atomic<std::int64_t> outside_cpu_ns{0};
    std::int64_t left_cpu_ns = 0;
    /// Tuning with a memory budget: the bytes of the outputs taken (`ferry::byte_size`), the
    /// source items they stood for, and the largest output.
    std::atomic<std::uint64_t> out_bytes{0};
    std::atomic<std::uint64_t> out_items{0};
    std::atomic<std::uint64_t> largest_bytes{0};
    std::thread::id left_thread{};

    /// A wait of `waited` ended: a short one (the spin paid) doubles the next spin, up to 64
    /// yields; a long one halves it.
    void adapt_spin(std::chrono::steady_clock::duration waited) noexcept {
        if (waited < std::chrono::microseconds(50)) {
            spin_limit = std::min(64, 2 * spin_limit + 1);
        } else {
            spin_limit /= 2;
        }
    }
    /// The epoch's first output was taken `ns` after the epoch started.
    void note_first_output(std::int64_t ns) noexcept {
        awaiting_first = false;
        first_output_ns.store(ns, std::memory_order_relaxed);
        if (ns > first_output_max_ns.load(std::memory_order_relaxed)) {
            first_output_max_ns.store(ns, std::memory_order_relaxed);
        }
    }
};

}  // namespace ferry::detail
