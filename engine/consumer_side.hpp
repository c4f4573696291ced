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
#include <utility>
#include <vector>

#include "box.hpp"
#include "counters.hpp"
#include "epoch_run.hpp"
#include "handoff.hpp"

namespace ferry::detail {

struct trace_rows;  // runtime.hpp

/// The consumer's side. Everything but the atomics is the consumer thread's, under the
/// epoch_control mutex; the atomics are read by stats() and the monitor (tuning.cpp) through the
/// accessors. Only the methods below change it (consumer.cpp defines the longer ones).
class consumer_side {
  public:
    using clock = std::chrono::steady_clock;

    explicit consumer_side(box_pool& pool) : pool_(pool) {}
    consumer_side(const consumer_side&) = delete;
    consumer_side& operator=(const consumer_side&) = delete;

    /// Construction: a hand-off of `capacity` messages; room for the boxes of `credit_batch`
    /// credits.
    void prepare(std::size_t capacity, std::size_t credit_batch) {
        out_ = std::make_unique<handoff>(capacity);
        boxes_.reserve(2 * credit_batch + box_batch);
    }
    /// The hand-off (bounded by in_flight through the credits, but for flat_map children).
    /// Producer side: the output node; consumer side: next().
    [[nodiscard]] handoff* out() const noexcept { return out_.get(); }

    /// The epoch starts; fast_start holds the source for the first output when `starting`.
    void open_epoch(consumer_epoch& run, bool starting) noexcept {
        run_ = &run;
        starting_ = starting;
    }
    /// The epoch's end: the piece may be dropped.
    void close_epoch() noexcept { run_ = nullptr; }
    /// An abandoned epoch is reclaimed (nothing runs): what the hand-off and the batches still
    /// hold is forgotten (the pool reclaims every box).
    void reclaim() noexcept {
        tsan_acquire(out_.get());
        out_->clear();
        boxes_.clear();
        credits_ = 0;
    }

    /// Waits for the hand-off to hold a message, spinning briefly, then sleeping; `flush` gives
    /// the credits back before it waits (the graph may be waiting for them). False when a stop
    /// came. Counts the wait (its time, the trace's span, NVTX's range).
    template <class Flush>
    bool wait(std::size_t burst, const std::atomic<bool>& stopping, trace_rows& trace,
              Flush&& flush);
    /// The consumer took `m`: `m`'s credits are due back, its box goes back in bulk.
    void take_back(msg m) {
        credits_ += m->credits;
        box_pool::empty_out_delivered(m);
        boxes_.push_back(m);
        if (boxes_.size() >= 2 * box_batch) pool_.release_bulk(boxes_);
    }
    /// The boxes go back to the pool, then the credits to return are handed over (0: none).
    [[nodiscard]] std::uint64_t flush() noexcept {
        // Boxes first: the source, woken by the credits, finds them in the pool.
        pool_.release_bulk(boxes_);
        return std::exchange(credits_, 0);
    }
    /// Credits taken back and not yet returned.
    [[nodiscard]] std::uint64_t credits() const noexcept { return credits_; }
    /// The epoch's first output was taken `ns` after the epoch started.
    void note_first_output(std::int64_t ns) noexcept {
        run_->awaiting_first_ = false;
        first_output_ns_.store(ns, std::memory_order_relaxed);
        if (ns > first_output_max_ns_.load(std::memory_order_relaxed)) {
            first_output_max_ns_.store(ns, std::memory_order_relaxed);
        }
    }
    /// Whether the epoch's first output is still to come.
    [[nodiscard]] bool awaiting_first() const noexcept { return run_->awaiting_first_; }
    /// fast_start holds the source for the first output (the tuner reads it).
    [[nodiscard]] bool starting() const noexcept { return starting_.load(); }
    /// fast_start's hold ends (the consumer took the first output).
    void end_start() noexcept { starting_ = false; }

    /// next() is entered and left: while tuning (`on`), the CPU time between two calls (the
    /// training loop's work, which the CPU budget leaves out) is counted apart (consumer.cpp).
    void enter_next(bool on) noexcept;
    void leave_next(bool on) noexcept;
    /// Tuning with a memory budget: an output of `bytes` was taken; returns the bytes of every
    /// output taken so far.
    std::uint64_t note_output_bytes(std::uint64_t bytes) noexcept {
        bump_owned(out_bytes_, bytes);
        if (bytes > largest_bytes_.load(std::memory_order_relaxed)) {
            largest_bytes_.store(bytes, std::memory_order_relaxed);
        }
        return out_bytes_.load(std::memory_order_relaxed);
    }

    // Read by stats() and the tuner, from any thread.
    [[nodiscard]] std::int64_t wait_ns() const noexcept {
        return wait_ns_.load(std::memory_order_relaxed);
    }
    /// When the consumer began waiting in next() (steady_clock ticks; 0: not waiting).
    [[nodiscard]] clock::rep waiting_since() const noexcept {
        return waiting_since_.load(std::memory_order_relaxed);
    }
    /// Time from an epoch's start to the consumer taking its first output: the last epoch's,
    /// and the longest of any.
    [[nodiscard]] std::int64_t first_output_ns() const noexcept {
        return first_output_ns_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] std::int64_t first_output_max_ns() const noexcept {
        return first_output_max_ns_.load(std::memory_order_relaxed);
    }
    /// Tuning: CPU time the consumer's thread spent outside next().
    [[nodiscard]] std::int64_t outside_cpu_ns() const noexcept {
        return outside_cpu_ns_.load(std::memory_order_relaxed);
    }
    /// Tuning with a memory budget: the largest output's bytes.
    [[nodiscard]] std::uint64_t largest_bytes() const noexcept {
        return largest_bytes_.load(std::memory_order_relaxed);
    }

  private:
    /// A wait of `waited` ended: a short one (the spin paid) doubles the next spin, up to 64
    /// yields; a long one halves it.
    void adapt_spin(clock::duration waited) noexcept {
        if (waited < std::chrono::microseconds(50)) {
            spin_limit_ = std::min(64, 2 * spin_limit_ + 1);
        } else {
            spin_limit_ /= 2;
        }
    }

    std::unique_ptr<handoff> out_;
    alignas(64) std::atomic<std::int64_t> wait_ns_{0};
    consumer_epoch* run_ = nullptr;  ///< the epoch's piece while it is open
    std::uint64_t credits_ = 0;      ///< credits taken back from outputs, not yet returned
    std::vector<box*> boxes_;        ///< boxes to give back in bulk
    int spin_limit_ = 64;            ///< yields before the consumer sleeps (adapts; see wait())
    bool named_ = false;             ///< the consumer's thread is named in the trace
    std::atomic<bool> starting_{false};
    std::atomic<std::int64_t> first_output_ns_{0}, first_output_max_ns_{0};
    std::atomic<clock::rep> waiting_since_{0};
    std::atomic<std::int64_t> outside_cpu_ns_{0};
    std::int64_t left_cpu_ns_ = 0;  ///< the thread's CPU clock when it last left next()
    std::thread::id left_thread_{};
    std::atomic<std::uint64_t> out_bytes_{0};
    std::atomic<std::uint64_t> largest_bytes_{0};
    box_pool& pool_;
};

}  // namespace ferry::detail
