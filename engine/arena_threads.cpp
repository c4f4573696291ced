// SPDX-License-Identifier: Apache-2.0
/// \file
/// arena_threads: parking tasks. Each holds one arena thread while more are wanted held than
/// are; a lowered hold lets the surplus go (each parked task re-checks when woken).

#include "arena_threads.hpp"

#include <algorithm>
#include <utility>

namespace ferry::detail {

arena_threads::arena_threads(int threads, enqueue_fn enqueue)
    : threads_(std::max(1, threads)), enqueue_(std::move(enqueue)), active_(threads_) {}

arena_threads::~arena_threads() {
    close();
}

void arena_threads::set(int active) {
    int more = 0;
    {
        std::lock_guard lock(mutex_);
        if (closed_) return;
        active_ = std::clamp(active, 1, threads_);
        want_ = threads_ - active_;
        more = std::max(0, want_ - held_ - queued_);
        queued_ += more;
    }
    cv_.notify_all();
    for (int i = 0; i < more; ++i) {
        try {
            enqueue_([this] { park(); });
        } catch (...) {
            // Not handed over: the hold is smaller than asked, and no task is owed.
            std::lock_guard lock(mutex_);
            --queued_;
        }
    }
}

void arena_threads::release() {
    {
        std::lock_guard lock(mutex_);
        want_ = 0;
    }
    cv_.notify_all();
}

void arena_threads::close() noexcept {
    std::unique_lock lock(mutex_);
    closed_ = true;
    want_ = 0;
    cv_.notify_all();
    cv_.wait(lock, [this] { return held_ == 0 && queued_ == 0; });
}

int arena_threads::active() const {
    std::lock_guard lock(mutex_);
    return active_;
}

int arena_threads::parked() const {
    std::lock_guard lock(mutex_);
    return held_;
}

void arena_threads::park() {
    std::unique_lock lock(mutex_);
    --queued_;
    if (!closed_ && held_ < want_) {
        ++held_;
        cv_.wait(lock, [this] { return closed_ || held_ > want_; });
        --held_;
    }
    // close() waits for the last task; a woken parker may let the next one re-check.
    cv_.notify_all();
}

}  // namespace ferry::detail
