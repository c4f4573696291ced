// SPDX-License-Identifier: Apache-2.0
/// \file
/// The process-wide TBB worker limit that live pipelines need.
#pragma once

#include <oneapi/tbb/global_control.h>

#include <memory>
#include <mutex>
#include <set>

namespace ferry::detail {

/// Raises TBB's process-wide worker limit while pipelines need it: by default oneTBB keeps
/// hardware_concurrency - 1 workers, so an arena of N threads would get fewer than N workers on a
/// small machine. Holds one global_control at the largest value any live pipeline asked for
/// (a user's own, smaller global_control still wins: TBB applies the minimum).
class worker_budget {
  public:
    static worker_budget& instance();
    /// A pipeline of `threads` threads starts.
    void acquire(int threads);
    /// ... and ends.
    void release(int threads) noexcept;

  private:
    worker_budget();
    ~worker_budget();
    void apply() noexcept;

    std::mutex mutex_;
    std::multiset<int> wanted_;
    std::unique_ptr<tbb::global_control> control_;
    int current_ = 0;
};

}  // namespace ferry::detail
