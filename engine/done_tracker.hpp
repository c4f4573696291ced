// SPDX-License-Identifier: Apache-2.0
/// \file
/// done_tracker: which source positions of an unordered pipeline's epoch are done (delivered,
/// filtered or failed), as the first position not done and the done ones past it: what its
/// pipeline_state holds, O(in_flight) in size.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "box.hpp"

namespace ferry::detail {

class done_tracker {
  public:
    /// A new epoch, or a resumed one: positions before `frontier`, and those of `done`, are done.
    void reset(std::uint64_t frontier, const std::vector<std::uint64_t>& done) {
        const std::lock_guard lock(mutex_);
        frontier_ = frontier;
        above_.clear();
        for (const auto p : done) mark(p);
    }
    /// `b` was delivered or left as a gap: the positions it stands for are done.
    void done(const box& b) {
        const std::lock_guard lock(mutex_);
        if (b.covers.empty()) {
            mark(b.source_index);
        } else {
            for (const auto p : *b.covers) mark(p);
        }
    }
    /// The first position not done, and the done ones past it (ascending).
    [[nodiscard]] std::pair<std::uint64_t, std::vector<std::uint64_t>> snapshot() const {
        const std::lock_guard lock(mutex_);
        return {frontier_, std::vector<std::uint64_t>(above_.begin(), above_.end())};
    }

  private:
    void mark(std::uint64_t p) {
        if (p < frontier_) return;
        if (p != frontier_) {
            above_.insert(p);
            return;
        }
        ++frontier_;
        while (!above_.empty() && *above_.begin() == frontier_) {
            above_.erase(above_.begin());
            ++frontier_;
        }
    }

    mutable std::mutex mutex_;
    std::uint64_t frontier_ = 0;
    std::set<std::uint64_t> above_;
};

}  // namespace ferry::detail
