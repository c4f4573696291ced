// SPDX-License-Identifier: Apache-2.0
/// \file
/// call_ranges: a pipeline's calls as NVTX ranges in the `ferry` domain (pipeline_options::nvtx),
/// one row per stage, the item's position as payload; and the same events to the observer that
/// `observe_ranges` set (tests). Without NVTX and without an observer no pipeline has one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ferry/detail/range_observer.hpp"

namespace ferry::detail {

class call_ranges {
  public:
    /// Null when nothing would see the ranges (no NVTX in this build, no observer).
    [[nodiscard]] static std::unique_ptr<call_ranges> make(std::vector<std::string> rows);
    ~call_ranges();
    call_ranges(const call_ranges&) = delete;
    call_ranges& operator=(const call_ranges&) = delete;

    /// Opens row `row`'s range for the item at `position`, on this thread.
    void push(std::uint32_t row, std::uint64_t position) const noexcept;
    /// Closes the range this thread opened last (row `row`'s).
    void pop(std::uint32_t row) const noexcept;

  private:
    call_ranges(std::vector<std::string> rows, std::function<void(const range_event&)> observer);

    std::vector<std::string> rows_;
    std::function<void(const range_event&)> observer_;
    std::vector<void*> handles_;  ///< NVTX: each row's registered string
};

}  // namespace ferry::detail
