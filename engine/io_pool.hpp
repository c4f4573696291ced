// SPDX-License-Identifier: Apache-2.0
/// \file
/// The blocking-I/O threads of one `executor = io` stage.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ferry::detail {

class span_log;

/// A blocking-I/O thread pool of one stage: `n` threads and a FIFO of calls, which the in-flight
/// credits bound (the pool itself never refuses a call).
///
/// A call that ran past its stage's timeout keeps its thread until it returns; `add_spare()`
/// starts a thread in its place so that `n` keep working, up to `n` spares at once; the held
/// thread leaves once its call returns.
class io_pool {
  public:
    using job = std::function<void()>;
    /// `spans`: where a traced pipeline names these threads (`name #1`, `name #2`, ...).
    explicit io_pool(int n, span_log* spans = nullptr, const std::string& name = {});
    /// Runs what was submitted, then joins the threads.
    ~io_pool();
    io_pool(const io_pool&) = delete;
    io_pool& operator=(const io_pool&) = delete;

    void submit(job j);
    /// One of the pool's threads is held by a call that timed out: start one more, unless `n`
    /// spares already run. Returns whether it did; if so, the held thread must call
    /// `leave_after_this_job()` once its call returns. Never throws (a thread that cannot start
    /// is simply not added).
    bool add_spare() noexcept;
    /// On a pool thread whose call was replaced by a spare: the thread leaves the pool when the
    /// job it runs ends.
    static void leave_after_this_job() noexcept;
    /// The index (0 .. 2n-1) of the calling thread in the pool that runs it, or -1 on a thread
    /// of no pool: the shard of the stage's counters that thread owns.
    [[nodiscard]] static int current_index() noexcept;
    /// Calls submitted and not yet started (sampled for the stage's queue).
    [[nodiscard]] std::size_t waiting() const noexcept {
        return waiting_.load(std::memory_order_relaxed);
    }
    /// Threads started in all, spares included (for tests).
    [[nodiscard]] int started() const noexcept { return started_.load(); }

  private:
    struct worker {
        std::thread thread;
        bool done = false;  ///< has left run(): join it
    };
    /// Starts a thread on the lowest free index (under mutex_).
    void start_locked();
    void run(int index, worker* self);
    void close_and_join() noexcept;

    int n_;
    span_log* spans_;
    std::string name_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<job> jobs_;
    bool closing_ = false;
    int working_ = 0;  ///< threads in run(), spares included
    std::vector<bool> index_taken_;
    std::atomic<std::size_t> waiting_{0};
    std::atomic<int> started_{0};
    std::list<worker> workers_;
};

}  // namespace ferry::detail
