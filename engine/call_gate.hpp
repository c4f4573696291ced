// SPDX-License-Identifier: Apache-2.0
/// \file
/// call_gate: the one gate of a stage that limits its calls (map_async, tuned, timed compute
/// stages): at most `limit` run, the rest wait in arrival order. No TBB.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace ferry::detail {

/// The running count, the limit and the queue of entries waiting for a slot, under one mutex
/// (oneTBB's `function_input_base` keeps the same three privately). `T` is what waits: a
/// map_async or tuned stage's `msg`, a timed stage's `std::shared_ptr<timed_item>`.
///
/// Whoever gets `true` from `try_enter`, or an entry from `leave` or `set_limit`, holds a slot
/// and starts that entry's call; a call's end calls `leave` once, which passes the slot to the
/// oldest waiting entry while the count is within the limit, and closes it otherwise. A lowered
/// limit therefore stops no call: slots close as calls end.
template <class T>
class call_gate {
  public:
    /// How an entry is let through: within the limit, or past it (an epoch being cancelled
    /// drains its queue whatever the limit; each call is then dropped when it starts).
    enum admit : bool { within_limit = false, past_limit = true };

    explicit call_gate(int limit = 1) noexcept : limit_(limit) {}
    call_gate(const call_gate&) = delete;
    call_gate& operator=(const call_gate&) = delete;

    /// Takes a slot for `entry` (true: start it now) or queues it (false: a call's end or a
    /// raised limit starts it).
    [[nodiscard]] bool try_enter(const T& entry, admit how = within_limit) {
        const std::lock_guard lock(mutex_);
        if (running_ >= limit_.load(std::memory_order_relaxed) && how == within_limit) {
            waiting_.push_back(entry);
            return false;
        }
        ++running_;
        return true;
    }

    /// A call ended: the waiting entry that takes its slot (the caller starts it), or none (the
    /// slot closes: nothing waits, or more than the limit run).
    [[nodiscard]] std::optional<T> leave(admit how = within_limit) {
        const std::lock_guard lock(mutex_);
        if (!waiting_.empty() &&
            (running_ <= limit_.load(std::memory_order_relaxed) || how == past_limit)) {
            std::optional<T> next(std::move(waiting_.front()));
            waiting_.pop_front();
            return next;
        }
        --running_;
        return std::nullopt;
    }

    /// Moves the limit; returns the waiting entries a raised one lets start now, oldest first
    /// (each holds a slot: the caller starts them).
    [[nodiscard]] std::vector<T> set_limit(int limit) {
        std::vector<T> start;
        const std::lock_guard lock(mutex_);
        limit_.store(limit, std::memory_order_relaxed);
        while (running_ < limit && !waiting_.empty()) {
            start.push_back(std::move(waiting_.front()));
            waiting_.pop_front();
            ++running_;
        }
        return start;
    }

    /// Forgets every call, running or waiting (an abandoned epoch's reclaim, with nothing
    /// running: the pool takes their boxes back). The limit stays.
    void clear() noexcept {
        const std::lock_guard lock(mutex_);
        waiting_.clear();
        running_ = 0;
    }

    /// The limit now (read without the lock: the tuner's latest).
    [[nodiscard]] int limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
    /// Entries waiting for a slot (the monitor's queue in front of a stage).
    [[nodiscard]] std::size_t waiting() const {
        const std::lock_guard lock(mutex_);
        return waiting_.size();
    }
    /// Calls holding a slot.
    [[nodiscard]] int running() const {
        const std::lock_guard lock(mutex_);
        return running_;
    }

  private:
    mutable std::mutex mutex_;
    std::atomic<int> limit_;  ///< written under mutex_, read by anyone
    int running_ = 0;
    std::deque<T> waiting_;
};

}  // namespace ferry::detail
