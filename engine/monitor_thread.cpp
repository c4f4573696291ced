// SPDX-License-Identifier: Apache-2.0
/// \file
/// monitor_thread: the loop — polls, a tick, a sleep.

#include "monitor_thread.hpp"

namespace ferry::detail {

void monitor_thread::start(std::function<void()> tick,
                           std::function<std::chrono::microseconds()> period) {
    thread_ = std::thread(
        [this, tick = std::move(tick), period = std::move(period)] { run(tick, period); });
}

void monitor_thread::poll_later(try_take_fn try_take, done_fn done) {
    {
        std::lock_guard lock(mutex_);
        polls_.push_back({std::move(try_take), std::move(done)});
    }
    cv_.notify_one();
}

void monitor_thread::close() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void monitor_thread::run(const std::function<void()>& tick,
                         const std::function<std::chrono::microseconds()>& period) {
    std::unique_lock lock(mutex_);
    while (!closing_) {
        if (!polls_.empty()) {
            std::vector<poll_entry> batch;
            batch.swap(polls_);
            lock.unlock();
            std::vector<poll_entry> waiting;
            for (auto& p : batch) {
                any_value v;
                try {
                    if (p.try_take(v)) {
                        p.done(&v, nullptr);
                    } else {
                        waiting.push_back(std::move(p));
                    }
                } catch (...) {
                    p.done(nullptr, std::current_exception());
                }
            }
            lock.lock();
            for (auto& p : waiting) polls_.push_back(std::move(p));
        }
        lock.unlock();
        tick();
        const auto wait = period();
        lock.lock();
        cv_.wait_for(lock, polls_.empty() ? wait : std::chrono::microseconds(100));
    }
}

}  // namespace ferry::detail
