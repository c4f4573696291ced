// SPDX-License-Identifier: Apache-2.0
/// \file
/// `waiter`: runs a blocking call (the engine's `next()`) on a thread of its own while the
/// Python thread that asked for it waits without the GIL, checking for signals, so that Ctrl-C
/// interrupts a loop that waits on the pipeline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace ferry::python {

/// One thread, started on first use, that runs one job at a time for its caller. The engine's
/// `next()` blocks with no bound and no way to hear a signal; Python runs a signal's handler
/// (KeyboardInterrupt) only on the main thread, between bytecodes. So the job runs here and the
/// caller waits on a condition in slices, taking the GIL between slices to run the handlers.
/// Costs two thread wake-ups per job (a few microseconds; one job per element taken).
class waiter {
  public:
    /// How often a waiting caller checks for signals: a Ctrl-C ends the wait within this much
    /// (plus the time `interrupt` needs), well within a second.
    static constexpr std::chrono::milliseconds slice{50};

    waiter() = default;
    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;
    /// Ends and joins the thread (no job may be running); in a process forked after it started,
    /// where the thread is not, leaves it.
    ~waiter();

    /// Runs `job` on the waiter's thread and waits for it to return. Called WITHOUT the GIL
    /// (the caller released it); between slices it takes the GIL and runs Python's signal
    /// handlers. When a handler raises, `interrupt` is called once (it must make `job` return
    /// soon, e.g. by stopping the pipeline), the wait goes on until `job` returns, and the
    /// result is false: the handler's exception is set in the caller's thread state, for the
    /// caller to raise once it has the GIL again. `job` must not throw.
    [[nodiscard]] bool run(const std::function<void()>& job,
                           const std::function<void()>& interrupt);

  private:
    void loop();

    std::mutex mutex_;
    std::condition_variable changed_;
    const std::function<void()>* job_ = nullptr;  ///< set by run, taken by the thread
    bool done_ = false;                           ///< the job returned
    bool quit_ = false;
    std::thread thread_;
    int started_in_ = 0;  ///< the process (pid) that started the thread
};

}  // namespace ferry::python
