// SPDX-License-Identifier: Apache-2.0
/// \file
/// monitor_thread: the pipeline's one background thread — the watchdog, the sampler, the
/// periodic report and the poller of map_async futures — and the pipeline-level samples it
/// takes. No TBB: what a tick does is the runtime's (monitor.cpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "ferry/detail/any_value.hpp"

namespace ferry::detail {

/// A thread that runs `tick` and sleeps for what `period` says, and, between ticks, polls the
/// futures handed to `poll_later` (every 100 us while any waits). Its lock guards only the poll
/// list and the closing flag.
class monitor_thread {
  public:
    using try_take_fn = std::function<bool(any_value&)>;
    using done_fn = std::function<void(any_value*, std::exception_ptr)>;

    monitor_thread() = default;
    monitor_thread(const monitor_thread&) = delete;
    monitor_thread& operator=(const monitor_thread&) = delete;
    ~monitor_thread() { close(); }

    /// Starts the thread.
    void start(std::function<void()> tick, std::function<std::chrono::microseconds()> period);
    /// Polls `try_take` until it takes a value (or throws), then calls `done` with it (or the
    /// error), on this thread.
    void poll_later(try_take_fn try_take, done_fn done);
    /// Wakes the thread for a tick now (an epoch started).
    void wake() { cv_.notify_one(); }
    /// Stops and joins the thread (destruction; idempotent).
    void close();

  private:
    struct poll_entry {
        try_take_fn try_take;
        done_fn done;
    };
    void run(const std::function<void()>& tick,
             const std::function<std::chrono::microseconds()>& period);

    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<poll_entry> polls_;  ///< under mutex_
    bool closing_ = false;           ///< under mutex_
    std::thread thread_;
};

/// The pipeline-level samples: how often the in-flight limit was reached.
class fullness_samples {
  public:
    void add(bool saturated) {
        std::lock_guard lock(mutex_);
        ++samples_;
        if (saturated) ++saturated_;
    }
    /// The fraction of samples that found the pipeline full (0 before any).
    [[nodiscard]] double fraction() const {
        std::lock_guard lock(mutex_);
        return samples_ > 0 ? static_cast<double>(saturated_) / static_cast<double>(samples_) : 0;
    }

  private:
    mutable std::mutex mutex_;
    std::uint64_t samples_ = 0;
    std::uint64_t saturated_ = 0;
};

}  // namespace ferry::detail
