// SPDX-License-Identifier: Apache-2.0
/// \file
/// The hand-off of results from the graph's output node to the consumer thread.
#pragma once

#include <atomic>
#include <bit>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "asymmetric_fence.hpp"
#include "box.hpp"

namespace ferry::detail {

/// A single-producer, single-consumer queue of messages: the producer is the output node's body
/// (one at a time, serial_combiner.hpp, though not always on the same thread), the consumer is
/// the thread in `next()`.
///
/// Why not a mutex and a deque: the two sides run on different cores, and every cache line that
/// both write on every item moves between the cores on every item (measured: the lock word alone
/// was a tenth of the worker's time in `perf/engine_overhead`). Here the producer writes a slot
/// and `tail_`, and reads `head_` and `sleeping_`, which the consumer writes only once per burst
/// (or when it goes to sleep); the consumer reads `tail_` only when it has used up what it saw.
///
/// The producer's store of `tail_` pairs with the consumer's store of `sleeping_` so that no
/// wake-up is lost. A `seq_cst` store on every push waits for the cache line the spinning consumer
/// has just read (~43 ns an item); instead the producer runs only a compiler fence and the
/// consumer, on its way to sleep, a `membarrier` (asymmetric_fence.hpp), falling back to `seq_cst`
/// on both sides where that is unavailable.
///
/// The ring holds `capacity` messages. Every message but the children of a flat_map or unbatch
/// carries an in-flight credit, so the ring rarely fills; when it does, the producer appends to an
/// overflow deque under a mutex (it must never block: it runs on a TBB worker) and keeps doing so
/// until the consumer has emptied it, so messages are taken in the order they were pushed.
class handoff {
  public:
    /// `capacity` is rounded up to a power of two.
    explicit handoff(std::size_t capacity)
        : ring_(std::bit_ceil(std::max<std::size_t>(capacity, 2)), nullptr),
          mask_(ring_.size() - 1) {}

    // ---- producer (the output node's body) ----

    /// Appends `m`. Never blocks (beyond the overflow mutex, once the ring is full).
    void push(msg m) {
        if (!overflowing_) {
            if (tail_local_ - head_cached_ > mask_) {
                head_cached_ = head_.value.load(std::memory_order_acquire);
            }
            if (tail_local_ - head_cached_ <= mask_) {
                ring_[tail_local_ & mask_] = m;
                ++tail_local_;
                // Store tail_, then load sleeping_; the consumer stores sleeping_, then loads
                // tail_: one of the two must see the other (no lost wake-up). With the asymmetric
                // fence the consumer's membarrier pays for it, not every push.
                if (light_) {
                    tail_.value.store(tail_local_, std::memory_order_release);
                    asymmetric_light_fence();
                    if (sleeping_.value.load(std::memory_order_relaxed)) interrupt();
                } else {
                    tail_.value.store(tail_local_, std::memory_order_seq_cst);
                    wake_if_sleeping();
                }
                return;
            }
            overflowing_ = true;
        }
        {
            std::lock_guard lock(overflow_mutex_);
            if (overflow_.empty() && tail_local_ == head_.value.load(std::memory_order_acquire)) {
                // The consumer has taken everything, ring and overflow: back to the ring.
                overflowing_ = false;
            } else {
                overflow_.push_back(m);
                overflow_size_.store(overflow_.size(), std::memory_order_seq_cst);
            }
        }
        if (!overflowing_) {
            push(m);
            return;
        }
        wake_if_sleeping();
    }

    // ---- consumer (the thread in next()) ----

    /// Messages pushed and not yet taken (a snapshot; at least what the next `take` gets).
    [[nodiscard]] std::size_t available() const noexcept {
        return static_cast<std::size_t>(tail_.value.load(std::memory_order_acquire) - head_local_) +
               overflow_size_.load(std::memory_order_acquire);
    }

    /// Takes one message from what the last `refill` made visible; false when that is used up.
    [[nodiscard]] bool pop(msg& m) noexcept {
        if (head_local_ != seen_tail_) {
            m = ring_[head_local_ & mask_];
            ++head_local_;
            return true;
        }
        if (!taken_overflow_.empty()) {
            m = taken_overflow_.front();
            taken_overflow_.pop_front();
            return true;
        }
        return false;
    }

    /// Frees the ring slots used so far for the producer and makes everything pushed so far
    /// visible to `pop`; false when nothing is there. Call only when `pop` returned false.
    bool refill() {
        head_.value.store(head_local_, std::memory_order_release);
        seen_tail_ = tail_.value.load(std::memory_order_acquire);
        if (seen_tail_ != head_local_) return true;
        if (overflow_size_.load(std::memory_order_acquire) == 0) return false;
        // The ring is empty, and the producer has been appending to the overflow since before
        // it last wrote the ring (which the acquire above saw): take the overflow, in order.
        std::lock_guard lock(overflow_mutex_);
        seen_tail_ = tail_.value.load(std::memory_order_acquire);
        if (seen_tail_ != head_local_) return true;  // ring messages first
        taken_overflow_.swap(overflow_);
        overflow_size_.store(0, std::memory_order_relaxed);
        return !taken_overflow_.empty();
    }

    /// Sleeps until something has been pushed or `stop()` is true. `stop` must be set before
    /// `interrupt()` is called.
    template <class Stop>
    void wait(Stop&& stop) {
        std::unique_lock lock(sleep_mutex_);
        sleeping_.value.store(true, std::memory_order_seq_cst);
        // After the heavy fence every push either is seen below or sees sleeping_ (and then
        // waits for sleep_mutex_, which this thread holds until it waits on the condition).
        if (light_) asymmetric_heavy_fence();
        while (tail_.value.load(std::memory_order_seq_cst) == head_local_ &&
               overflow_size_.load(std::memory_order_seq_cst) == 0 && !stop()) {
            sleep_cv_.wait(lock);
        }
        sleeping_.value.store(false, std::memory_order_relaxed);
    }

    /// Wakes a consumer sleeping in `wait` (whose stop condition the caller has just made true).
    void interrupt() {
        { std::lock_guard lock(sleep_mutex_); }  // no lost wake-up between its check and its wait
        sleep_cv_.notify_all();
    }

    /// Forgets everything, both sides. Only while neither side runs (the graph is idle and the
    /// consumer is the caller); the box pool reclaims the messages.
    void clear() noexcept {
        std::lock_guard lock(overflow_mutex_);
        overflow_.clear();
        taken_overflow_.clear();
        overflow_size_.store(0, std::memory_order_relaxed);
        tail_local_ = 0;
        head_cached_ = 0;
        overflowing_ = false;
        head_local_ = 0;
        seen_tail_ = 0;
        tail_.value.store(0, std::memory_order_relaxed);
        head_.value.store(0, std::memory_order_relaxed);
    }

  private:
    void wake_if_sleeping() {
        if (sleeping_.value.load(std::memory_order_seq_cst)) interrupt();
    }

    /// An atomic alone on its cache line.
    template <class T>
    struct alignas(64) line {
        std::atomic<T> value{};
    };

    std::vector<msg> ring_;
    const std::size_t mask_;
    /// Whether the producer's fast path uses the light fence (the consumer then runs the heavy
    /// one before it sleeps); false, and seq_cst on both sides, where membarrier is unavailable.
    const bool light_ = asymmetric_fence_ready();

    // Producer's own. The output node's body runs one at a time, but successive calls may run on
    // different threads: the output node's body acquires and releases this object's address
    // (engine/tsan.hpp), as it does its sequencer's.
    alignas(64) std::uint64_t tail_local_ = 0;
    std::uint64_t head_cached_ = 0;
    bool overflowing_ = false;

    line<std::uint64_t> tail_;  ///< written by the producer, per message
    line<std::uint64_t> head_;  ///< written by the consumer, per refill
    line<bool> sleeping_;       ///< written by the consumer, around a sleep

    // Consumer's own.
    alignas(64) std::uint64_t head_local_ = 0;
    std::uint64_t seen_tail_ = 0;
    std::deque<msg> taken_overflow_;

    alignas(64) std::mutex overflow_mutex_;
    std::deque<msg> overflow_;
    std::atomic<std::size_t> overflow_size_{0};

    std::mutex sleep_mutex_;
    std::condition_variable sleep_cv_;
};

}  // namespace ferry::detail
