// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::this_call`: what a stage's call can ask about itself, from inside the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

/// Adds `n` to the counter `name` of the running call's stage: it shows in
/// `stage_stats::counters` and on the stage's line of the stats report, so what an op did inside
/// its calls is visible where the time is. ferry's `read_url` counts `cache hits`,
/// `cache misses`, `cache evictions` (with `http_options::cache`) and `throttled` (answers 429
/// or 503); a callable of your own can count anything. Cheap (a
/// short lock on the stage's counters); nothing happens outside a stage call.
/// \code
///   .map([](const item& x) {
///       if (x.empty()) ferry::this_call::count("empty inputs");
///       return work(x);
///   })
/// \endcode
FERRY_API void count(std::string_view name, std::uint64_t n = 1) noexcept;

/// The running call's share of its pipeline's threads: the threads the pipeline works with now
/// divided by its stage's concurrency, at least 1, on any executor and with a `timeout`; 0
/// outside a map, filter or flat_map call. An op that can use threads of its own takes this many,
/// so that a stage with fewer calls at once than the pipeline has threads still uses them: ferry's
/// video decoder does (`video_decode_options::threads = 0`).
[[nodiscard]] FERRY_API int cpu_share() noexcept;

}  // namespace ferry::this_call

namespace ferry::detail {

/// One stage's counters by name (`this_call::count`), kept by the engine and read into
/// `stage_stats::counters`. Names are few per stage: a short vector under a mutex.
class FERRY_API call_counters {
  public:
    /// Adds `n` to `name` (a counter that cannot be made for lack of memory is dropped).
    void add(std::string_view name, std::uint64_t n) noexcept;
    /// The counters in the order they were first counted.
    [[nodiscard]] std::vector<std::pair<std::string, std::uint64_t>> snapshot() const;

  private:
    mutable std::mutex mutex_;
    std::vector<std::pair<std::string, std::uint64_t>> counts_;
};

/// Set by the engine around each stage call: the flags whose being set means "give up" (the
/// pipeline stopping, the epoch being abandoned, and for a call with a timeout its own flag).
/// Restores the outer scope's flags at its end. Neither copied nor moved: the thread points at it.
class FERRY_API call_scope {
  public:
    /// `truncated`: the stage's counter for `this_call::note_truncated()`, `counters` its
    /// counters for `this_call::count()` (none: not counted).
    call_scope(const std::atomic<bool>* stopping, const std::atomic<bool>* aborting,
               const std::atomic<bool>* own = nullptr,
               std::atomic<std::uint64_t>* truncated = nullptr,
               call_counters* counters = nullptr) noexcept;
    ~call_scope();
    call_scope(const call_scope&) = delete;
    call_scope& operator=(const call_scope&) = delete;

  private:
    friend bool this_call::stop_requested() noexcept;
    friend void this_call::note_truncated() noexcept;
    friend void this_call::count(std::string_view, std::uint64_t) noexcept;

    // The scope itself holds the call's flags; a thread-local points at the innermost scope, so
    // entering and leaving a call saves and restores one pointer (not five).
    const std::atomic<bool>* stopping_;
    const std::atomic<bool>* aborting_;
    const std::atomic<bool>* own_;
    std::atomic<std::uint64_t>* truncated_;
    call_counters* counters_;
    const call_scope* outer_;  ///< the scope this one hides (null: none)
};

/// Set by the engine around a stage's call, beside `call_scope`: what `this_call::cpu_share()`
/// answers (`threads` / `concurrency`, at least 1). Restores the outer scope's at its end.
class FERRY_API call_share {
  public:
    call_share(int threads, int concurrency) noexcept;
    ~call_share();
    call_share(const call_share&) = delete;
    call_share& operator=(const call_share&) = delete;

  private:
    int previous_;
};

}  // namespace ferry::detail
