// SPDX-License-Identifier: Apache-2.0
/// \file
/// `waiter`: a job on a thread of its own, waited for in slices that let signals through.
// Python.h first, as Python asks (it sets feature macros the standard headers read).
#include <Python.h>

#include "waiter.hpp"

#include <unistd.h>

namespace ferry::python {

waiter::~waiter() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    changed_.notify_all();
    if (!thread_.joinable()) return;
    // A forked child has the thread's handle but not the thread: joining would wait for ever.
    if (getpid() != started_in_) {
        thread_.detach();
        return;
    }
    thread_.join();
}

bool waiter::run(const std::function<void()>& job, const std::function<void()>& interrupt) {
    std::unique_lock lock(mutex_);
    if (!thread_.joinable()) {
        thread_ = std::thread([this] { loop(); });
        started_in_ = getpid();
    }
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
            // Taken directly, not by gil_hold: this is the consumer's own wait, not per-item
            // work (gil_hold::acquisitions() counts the engine's).
            const PyGILState_STATE gil = PyGILState_Ensure();
            raised = PyErr_CheckSignals() != 0;
            PyGILState_Release(gil);
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
