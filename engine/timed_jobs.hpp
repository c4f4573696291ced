// SPDX-License-Identifier: Apache-2.0
/// \file
/// timed_jobs: the count of calls of timed stages that have not returned. No TBB.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace ferry::detail {

/// Calls of timed stages that have not returned: an expired call runs on, apart from its box,
/// and uses the runtime, so destruction waits for them. Its own lock.
class timed_jobs {
  public:
    void begin() {
        std::lock_guard lock(mutex_);
        ++running_;
    }
    void end() {
        std::lock_guard lock(mutex_);
        if (--running_ == 0) cv_.notify_all();
    }
    /// Waits until every call has returned.
    void wait() noexcept {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return running_ == 0; });
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::size_t running_ = 0;
};

}  // namespace ferry::detail
