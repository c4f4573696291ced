// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::this_call`: what a stage's call can ask about itself, from inside the call.
#pragma once

#include <atomic>
#include <cstdint>

#include "ferry/export.hpp"

namespace ferry::this_call {

/// True once the stage call running on this thread should give up: its pipeline is being
/// stopped (`stop()`) or destroyed, its epoch abandoned (the loop was left early), or the call ran
/// past its stage's `timeout` (its item has failed already; whatever it returns is dropped). False
/// outside a stage call. ferry's own blocking ops honour it within about 50 ms and end with
/// `errc::cancelled`: `ops::read_url`, `read_file` on a FIFO or pipe, video and audio demuxing
/// and decoding; a retry's backoff sleep is cut short. A long call of your own can poll it:
/// \code
///   .map([](job j) {
///       while (!j.done()) {
///           if (ferry::this_call::stop_requested()) throw ferry::error(ferry::errc::cancelled,
///           "..."); j.step();
///       }
///       return j.result();
///   }, {.executor = ferry::io})
/// \endcode
[[nodiscard]] FERRY_API bool stop_requested() noexcept;

/// Counts the running call's result as truncated in its stage's `stage_stats::truncated`: the
/// call returned what it could, but its input ended early or was damaged (a cut video or audio
/// file decoded up to the cut). ferry's media ops call it where they return such a result
/// (unless their `strict` option makes it an error); a callable of your own can too. Nothing
/// happens outside a stage call.
FERRY_API void note_truncated() noexcept;

}  // namespace ferry::this_call

namespace ferry::detail {

/// Set by the engine around each stage call: the flags whose being set means "give up" (the
/// pipeline stopping, the epoch being abandoned, and for a call with a timeout its own flag).
/// Restores the outer scope's flags at its end.
class FERRY_API call_scope {
  public:
    /// `truncated`: the stage's counter for `this_call::note_truncated()` (none: not counted).
    call_scope(const std::atomic<bool>* stopping, const std::atomic<bool>* aborting,
               const std::atomic<bool>* own = nullptr,
               std::atomic<std::uint64_t>* truncated = nullptr) noexcept;
    ~call_scope();
    call_scope(const call_scope&) = delete;
    call_scope& operator=(const call_scope&) = delete;

  private:
    const std::atomic<bool>* previous_stopping_;
    const std::atomic<bool>* previous_aborting_;
    const std::atomic<bool>* previous_own_;
    std::atomic<std::uint64_t>* previous_truncated_;
};

}  // namespace ferry::detail
