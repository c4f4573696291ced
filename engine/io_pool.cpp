// SPDX-License-Identifier: Apache-2.0
/// \file
/// io_pool: threads that take calls from one queue until the pool closes, and spares for threads
/// held by calls past their timeout.

#include "io_pool.hpp"

#include <algorithm>

#include "ferry/error.hpp"
#include "trace.hpp"

namespace ferry::detail {
namespace {

thread_local int this_thread_index = -1;
thread_local bool this_thread_leaves = false;

}  // namespace

void io_pool::leave_after_this_job() noexcept {
    this_thread_leaves = true;
}

int io_pool::current_index() noexcept {
    return this_thread_index;
}

io_pool::io_pool(int n, span_log* spans, const std::string& name)
    : n_(n), spans_(spans), name_(name), index_taken_(2 * static_cast<std::size_t>(n), false) {
    try {
        std::lock_guard lock(mutex_);
        for (int i = 0; i < n; ++i) start_locked();
    } catch (const std::exception& e) {
        // The threads already started must be joined (a joinable std::thread destroyed
        // terminates the process), and the caller gets an error it can act on.
        const auto started = workers_.size();
        close_and_join();
        throw error(errc::invalid_argument, "stage '" + name.substr(name.find(' ') + 1) +
                                                "': could not start " + std::to_string(n) +
                                                " I/O threads (started " + std::to_string(started) +
                                                "): " + e.what());
    }
}

void io_pool::start_locked() {
    const auto free = std::find(index_taken_.begin(), index_taken_.end(), false);
    const auto index = static_cast<int>(free - index_taken_.begin());
    worker& w = workers_.emplace_back();
    try {
        w.thread = std::thread([this, index, self = &w] {
            if (spans_ != nullptr) spans_->name_thread(name_ + " #" + std::to_string(index + 1));
            run(index, self);
        });
    } catch (...) {
        workers_.pop_back();
        throw;
    }
    *free = true;
    ++working_;
    started_.fetch_add(1);
}

bool io_pool::add_spare() noexcept {
    std::list<worker> finished;
    bool added = false;
    {
        std::lock_guard lock(mutex_);
        // Threads that left are joined here, so that a long run with many timeouts does not
        // collect them.
        for (auto it = workers_.begin(); it != workers_.end();) {
            auto next = std::next(it);
            if (it->done) finished.splice(finished.end(), workers_, it);
            it = next;
        }
        if (!closing_ && working_ < 2 * n_) {
            try {
                start_locked();
                added = true;
            } catch (...) {
                added = false;
            }
        }
    }
    for (auto& w : finished) w.thread.join();
    return added;
}

void io_pool::close_and_join() noexcept {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) {
        if (w.thread.joinable()) w.thread.join();
    }
}

io_pool::~io_pool() {
    close_and_join();
}

void io_pool::submit(job j) {
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(j));
        waiting_.store(jobs_.size(), std::memory_order_relaxed);
    }
    cv_.notify_one();
}

void io_pool::run(int index, worker* self) {
    this_thread_index = index;
    for (;;) {
        job j;
        {
            std::unique_lock lock(mutex_);
            if (!this_thread_leaves) cv_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
            // Closing, or this thread was held by a timed-out call and a spare took its place.
            if (this_thread_leaves || jobs_.empty()) {
                --working_;
                index_taken_[static_cast<std::size_t>(index)] = false;
                self->done = true;
                return;
            }
            j = std::move(jobs_.front());
            jobs_.pop_front();
            waiting_.store(jobs_.size(), std::memory_order_relaxed);
        }
        j();
    }
}

}  // namespace ferry::detail
