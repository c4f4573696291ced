// SPDX-License-Identifier: Apache-2.0
/// \file
/// arena_threads: how many of the arena's threads run the pipeline's work, moved at run time
/// (the tuner's `threads`). A oneTBB arena's concurrency is fixed when it is made, so the arena
/// is made with the most threads the CPU budget allows and the others are held idle: a parked
/// thread runs a task that sleeps on a condition variable until it is let go, and the arena
/// counts it as one of its threads. No TBB here: tasks are handed to `enqueue` (the arena's).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>

namespace ferry::detail {

class arena_threads {
  public:
    using enqueue_fn = std::function<void(std::function<void()>)>;

    /// `threads`: the arena's; all of them work until set() says otherwise.
    arena_threads(int threads, enqueue_fn enqueue);
    ~arena_threads();
    arena_threads(const arena_threads&) = delete;
    arena_threads& operator=(const arena_threads&) = delete;

    /// At most `active` threads (1 up to the arena's) work from now on: threads over it are
    /// parked as they become free (a call in progress ends first), threads under it let go now.
    void set(int active);
    /// Every thread works until the next set() (before a wait for the graph: a thread that
    /// waits there may pick up a parking task).
    void release();
    /// Lets every thread go and returns when every parking task has returned; set() does
    /// nothing after it. Call it before the arena goes.
    void close() noexcept;

    [[nodiscard]] int threads() const noexcept { return threads_; }
    /// The threads set() asked for.
    [[nodiscard]] int active() const;
    /// Threads parked now.
    [[nodiscard]] int parked() const;

  private:
    void park();

    const int threads_;
    enqueue_fn enqueue_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    int active_;
    int want_ = 0;    ///< threads to hold
    int held_ = 0;    ///< threads held now
    int queued_ = 0;  ///< parking tasks handed to the arena, not started
    bool closed_ = false;
};

}  // namespace ferry::detail
