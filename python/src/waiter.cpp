// SPDX-License-Identifier: Apache-2.0
/// \file
/// `waiter`: a job on a thread of its own, waited for in slices that let signals through.
#include "waiter.hpp"

#include "value.hpp"

namespace ferry::python {

waiter::~waiter() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

bool waiter::run(const std::function<void()>& job, const std::function<void()>& interrupt) {
    std::unique_lock lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    job_ = &job;
    done_ = false;
    changed_.notify_all();
    bool raised = false;
    while (!changed_.wait_for(lock, slice, [this] { return done_; })) {
        if (raised) continue;
        lock.unlock();
        {
            // Not while holding mutex_: the GIL is never waited for with a lock held that a
            // thread holding the GIL could want.
            gil_hold gil;
            raised = PyErr_CheckSignals() != 0;
        }
        if (raised) interrupt();
        lock.lock();
    }
    job_ = nullptr;
    return !raised;
}

void waiter::loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [this] { return quit_ || (job_ != nullptr && !done_); });
        if (quit_) return;
        const std::function<void()>* job = job_;
        lock.unlock();
        (*job)();
        lock.lock();
        done_ = true;
        changed_.notify_all();
    }
}

}  // namespace ferry::python
