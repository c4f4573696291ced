// SPDX-License-Identifier: Apache-2.0
/// \file
/// call_hook: the bookkeeping around one user call, written once (SPDL's `TaskStatsHook`): its
/// time in the stage's busy ticks and latency histogram, its trace span, its NVTX range, and the
/// call the watchdog sees running on this thread.
#pragma once

#include <cstdint>

#include "counters.hpp"

namespace ferry::detail {

/// Opens the bookkeeping of one call when made and closes it when ended (`end`, or at the end
/// of its scope), through the counters' writer `w` (counters.hpp), which must outlive it. What a
/// call counts beside its time (`in`, `out`, `active`, retries) stays with its stage's code: those
/// spans differ (an item's attempts, a batch).
class call_hook {
  public:
    /// How a call is timed and whether it is tracked (NVTX range, the watchdog's running call).
    enum class timing : std::uint8_t {
        /// A stage's or the source's own call: timed or not as `call_sampling` says
        /// (`shard_writer::start_call`), tracked.
        sampled,
        /// Every call timed, tracked: a timed stage's attempt, which the watchdog may give up.
        every,
        /// Every call timed, not tracked: a serial node's call (a batch's pack, a route's
        /// selector, a window's costs), or one that ends on another thread (map_async's).
        detached,
    };

    call_hook(const shard_writer& w, std::uint64_t item, timing how = timing::sampled) noexcept
        : w_(w), item_(item), how_(how) {
        switch (how) {
            case timing::sampled:
                mark_ = w_.start_call(item);
                break;
            case timing::every:
                mark_.start = ticks();
                mark_.weight = 1;
                w_.begin_call(mark_.start, item);
                break;
            case timing::detached:
                mark_.start = ticks();
                mark_.weight = 1;
                break;
        }
    }
    ~call_hook() { end(); }
    call_hook(const call_hook&) = delete;
    call_hook& operator=(const call_hook&) = delete;

    /// The item its span names when it ends (the source's call learns it only then).
    void name_item(std::uint64_t item) noexcept { item_ = item; }

    /// Ends the call now (once; later calls, and the end of the scope, do nothing): records its
    /// time, span and range, and marks this thread's call finished.
    void end() noexcept {
        if (ended_) return;
        ended_ = true;
        switch (how_) {
            case timing::sampled:
                w_.finish_call(mark_, item_);
                break;
            case timing::every:
                w_.record_call(mark_.start, item_);
                w_.end_call();
                break;
            case timing::detached:
                w_.record_call(mark_.start, item_);
                break;
        }
    }

    /// When the call started, in ticks (0: a sampled call left untimed): a batch's trace links
    /// its items' flows to it.
    [[nodiscard]] std::uint64_t start() const noexcept { return mark_.start; }

  private:
    const shard_writer& w_;
    shard_writer::call_mark mark_;
    std::uint64_t item_;
    timing how_;
    bool ended_ = false;
};

}  // namespace ferry::detail
