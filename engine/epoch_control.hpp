// SPDX-License-Identifier: Apache-2.0
/// \file
/// epoch_control: the pipeline's control state — which epoch runs, whether it is being stopped,
/// abandoned or halted by a failure, the sticky fatal error — and the lock the consumer holds
/// while it drives an epoch. No TBB.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>

namespace ferry::detail {

/// Control of the epochs. The consumer locks `mutex()` on every item (next(), state(), abandon);
/// the flags are read by the workers on every item, lock-free, on a cache line of their own.
/// Only the methods below change them.
///
/// Who calls what: `request_stop` any thread (stop(), destruction); `abort`, `reclaimed` the
/// thread that reclaims an epoch (under `mutex()`); `halt_at` a worker whose item fails the
/// pipeline; `begin`, `end`, `number_from`, `set_fatal` and `settled` the consumer (or the
/// monitor settling a stopped epoch) under `mutex()`.
class epoch_control {
  public:
    using clock = std::chrono::steady_clock;
    static constexpr std::uint64_t no_halt = std::numeric_limits<std::uint64_t>::max();

    /// The consumer's lock: next(), state(), abandon_epoch(), the epoch's start and end.
    [[nodiscard]] std::mutex& mutex() const noexcept { return mutex_; }

    /// stop() was called: no call starts after it (this_call::stop_requested() reads it).
    [[nodiscard]] const std::atomic<bool>& stopping() const noexcept { return stopping_; }
    /// The epoch is being abandoned (reclaimed): its items can only end cancelled.
    [[nodiscard]] const std::atomic<bool>& aborting() const noexcept { return aborting_; }
    /// A stage failed the pipeline: the source stops producing.
    [[nodiscard]] bool halted() const noexcept { return halted_; }
    /// An epoch is open (started and not finished).
    [[nodiscard]] bool running() const noexcept { return running_; }
    /// A stopped epoch's leftovers are counted (settle_stopped_epoch): nothing more to reclaim.
    [[nodiscard]] bool stop_settled() const noexcept { return stop_settled_; }
    /// The epoch's number: the one running, or the next to start.
    [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
    /// When the running epoch started (steady_clock ticks).
    [[nodiscard]] clock::rep start() const noexcept { return start_; }
    /// The sticky error every later next() throws (null: none).
    [[nodiscard]] const std::exception_ptr& fatal() const noexcept { return fatal_; }

    /// The epoch's items can only end cancelled: it is being abandoned, or the pipeline stopped
    /// (stop() from any thread: no call starts after it, and a result that arrives after it is
    /// dropped).
    [[nodiscard]] bool cancelling() const noexcept { return aborting_ || stopping_; }
    /// True for the item at `source_index` whose work would be wasted: its epoch is being
    /// cancelled, or it comes after an item that failed the pipeline.
    [[nodiscard]] bool should_drop(std::uint64_t source_index) const noexcept {
        return cancelling() || source_index > halt_after_.load(std::memory_order_relaxed);
    }
    /// Time spent in epochs, the running one's so far included.
    [[nodiscard]] std::int64_t elapsed() const noexcept {
        auto ns = elapsed_ns_.load();
        if (running_) ns += clock::now().time_since_epoch().count() - start_;
        return ns;
    }

    /// stop() or destruction: sticky.
    void request_stop() noexcept { stopping_ = true; }
    /// The item at `source_index` failed the pipeline: the source stops, items after it are
    /// dropped unprocessed, the ones before it still finish.
    void halt_at(std::uint64_t source_index) noexcept {
        halted_ = true;
        auto idx = halt_after_.load();
        while (source_index < idx && !halt_after_.compare_exchange_weak(idx, source_index)) {
        }
    }
    /// Construction: a resumed pipeline's first epoch keeps the saved state's number.
    void number_from(std::uint64_t epoch) noexcept { epoch_ = epoch; }
    /// An epoch starts now.
    void begin() noexcept {
        start_ = clock::now().time_since_epoch().count();
        running_ = true;
    }
    /// The epoch ends: its time is counted, the next one gets the next number.
    void end() noexcept {
        elapsed_ns_.fetch_add(clock::now().time_since_epoch().count() - start_,
                              std::memory_order_relaxed);
        running_ = false;
        stop_settled_ = false;
        ++epoch_;
    }
    /// The epoch is being abandoned (a stop's cancel, or a reclaim): every item ends cancelled.
    void abort() noexcept { aborting_ = true; }
    /// The abandoned epoch is reclaimed (nothing runs): the next one starts unhalted.
    void reclaimed() noexcept {
        halted_ = false;
        halt_after_ = no_halt;
        aborting_ = false;
    }
    /// A stopped epoch was reclaimed by the monitor: nothing more to do until it ends.
    void settled() noexcept { stop_settled_ = true; }
    /// The error every later next() throws (under `mutex()`).
    void set_fatal(std::exception_ptr e) noexcept { fatal_ = std::move(e); }

  private:
    alignas(64) mutable std::mutex mutex_;
    alignas(64) std::atomic<bool> stopping_{false};
    std::atomic<bool> aborting_{false};
    std::atomic<bool> halted_{false};
    std::atomic<std::uint64_t> halt_after_{no_halt};
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_settled_{false};
    std::exception_ptr fatal_;
    std::atomic<std::uint64_t> epoch_{0};
    std::atomic<clock::rep> start_{0};
    std::atomic<std::int64_t> elapsed_ns_{0};
};

}  // namespace ferry::detail
