// SPDX-License-Identifier: Apache-2.0
/// \file
/// `call_interruptibly`: a direct call of a native op that Ctrl-C cancels, run on one helper
/// thread kept for the process (starting a thread per call cost about 37 us a call); and
/// `wait_interruptibly`, the wait it and `http.Client.fetch` share.
#include "direct_call.hpp"

#include <pybind11/pybind11.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "ferry/this_call.hpp"

namespace ferry::python {
namespace {

namespace py = pybind11;

/// Whether this is Python's main thread (the one signal handlers run on), as `threading` says;
/// after a fork, the thread that forked.
bool on_main_thread() {
    const py::module_ threading = py::module_::import("threading");
    return threading.attr("main_thread")().attr("ident").cast<unsigned long>() ==
           PyThread_get_thread_ident();
}

/// The thread the main thread's direct calls run on, one call at a time (only the main thread
/// hands it calls). Made at the first call, and again in a child forked after it (the parent's
/// thread is not there); never destroyed: it waits for work until the process ends.
class helper {
  public:
    /// Runs `fn` on the helper thread inside a call scope whose stop flag is `stop`, and
    /// returns once it has started; `wait_for` says when it has ended.
    void start(std::function<void()> fn, const std::atomic<bool>* stop) {
        std::lock_guard lock(mutex_);
        job_ = std::move(fn);
        stop_ = stop;
        done_ = false;
        changed_.notify_all();
    }
    /// Whether the call has ended, waiting up to `d` for it.
    bool wait_for(std::chrono::milliseconds d) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, d, [this] { return done_; });
    }

    /// This process's helper (the GIL held: one caller at a time).
    static helper& get() {
        static helper* h = nullptr;
        static pid_t owner = 0;
        if (h == nullptr || owner != getpid()) {
            auto* made = new helper;  // NOLINT(cppcoreguidelines-owning-memory): never freed
            std::thread([made] { made->run(); }).detach();
            h = made;
            owner = getpid();
        }
        return *h;
    }

  private:
    [[noreturn]] void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            changed_.wait(lock, [this] { return static_cast<bool>(job_); });
            {
                auto job = std::exchange(job_, nullptr);
                const std::atomic<bool>* stop = stop_;
                lock.unlock();
                const detail::call_scope scope(stop, nullptr);
                job();  // catches its own exceptions
            }
            lock.lock();
            done_ = true;
            changed_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    std::function<void()> job_;
    const std::atomic<bool>* stop_ = nullptr;
    bool done_ = true;
};

}  // namespace

value call_interruptibly(std::function<value()> fn) {
    if (!on_main_thread()) {
        py::gil_scoped_release released;
        return fn();
    }
    value out;
    std::exception_ptr error;
    std::atomic<bool> stop{false};
    helper& h = helper::get();
    h.start(
        [&] {
            try {
                out = fn();
            } catch (...) {
                error = std::current_exception();
            }
        },
        &stop);
    wait_interruptibly([&h](std::chrono::milliseconds slice) { return h.wait_for(slice); },
                       [&stop] { stop.store(true, std::memory_order_relaxed); });
    if (error) std::rethrow_exception(error);
    return out;
}

void wait_interruptibly(const std::function<bool(std::chrono::milliseconds)>& ended,
                        const std::function<void()>& cancel) {
    bool interrupted = false;
    for (;;) {
        {
            py::gil_scoped_release released;
            if (ended(std::chrono::milliseconds(50))) break;
        }
        if (!interrupted && PyErr_CheckSignals() != 0) {
            interrupted = true;  // the error stays set until the work has ended
            cancel();
        }
    }
    if (interrupted) throw py::error_already_set();
}

}  // namespace ferry::python
