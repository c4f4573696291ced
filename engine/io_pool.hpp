// SPDX-License-Identifier: Apache-2.0
/// \file
/// The blocking-I/O threads of one `executor = io` stage.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ferry::detail {

class span_log;

/// A blocking-I/O thread pool of one stage: `n` threads and a FIFO of calls, which the in-flight
/// credits bound (the pool itself never refuses a call).
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
    /// Calls submitted and not yet started (sampled for the stage's queue).
    [[nodiscard]] std::size_t waiting() const noexcept {
        return waiting_.load(std::memory_order_relaxed);
    }

  private:
    void run();
    void close_and_join() noexcept;

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<job> jobs_;
    bool closing_ = false;
    std::atomic<std::size_t> waiting_{0};
    std::vector<std::thread> threads_;
};

}  // namespace ferry::detail
