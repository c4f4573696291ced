// SPDX-License-Identifier: Apache-2.0
/// \file
/// source_driver: the source's state — its cursor, where the epoch stands, the boxes it took
/// from the pool in bulk, an unordered resume's positions to skip.
#pragma once

#include <oneapi/tbb/spin_mutex.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "box.hpp"
#include "counters.hpp"
#include "ferry/detail/spec.hpp"

namespace ferry::detail {

/// The source's side. The input node calls its pull one at a time and the consumer opens and
/// closes epochs: `mutex` guards everything here but `open`, `busy` and the counters (atomics;
/// the monitor reads the last two). A spin lock, the cheapest for the pull that takes it for
/// every item: the consumer takes it only where no pull is inside the cursor (between epochs:
/// the input node has stopped, or the graph is idle), so it never spins for long, and `stop()`
/// does not take it (it clears `open`, which the pull reads first).
struct source_driver {
    alignas(64) tbb::spin_mutex mutex;
    source_cursor cursor;
    /// The epoch's source may be pulled: set when it opens (under `mutex`), cleared by the pull
    /// at its end or failure, and by `stop()` from any thread.
    std::atomic<bool> open{false};
    std::uint64_t seq = 0;  ///< messages of this epoch so far
    std::uint64_t pos = 0;  ///< the position of the next item in the epoch
    /// Resuming an unordered pipeline: positions past the start done before the save (sorted),
    /// and the next one to skip.
    std::vector<std::uint64_t> resume_done;
    std::size_t resume_done_next = 0;
    std::vector<box*> boxes;  ///< free boxes taken from the pool in bulk
    std::atomic<bool> busy{false};
    std::string last_input;   ///< the last item's description, for a source failure's message
    stage_counters counters;  ///< the "source" row of the stats

    /// Pulls and drops the items at the positions `resume_done` lists next; false when the
    /// source ended meanwhile. Under `mutex`.
    bool skip_done_positions() {
        // Resuming an unordered pipeline: the items it had done past the state's position are
        // pulled and dropped (the source's own order says which comes where).
        while (resume_done_next < resume_done.size() && resume_done[resume_done_next] == pos) {
            any_value dropped;
            if (!cursor(dropped)) return false;
            ++resume_done_next;
            ++pos;
        }
        return true;
    }
    /// The epoch's end: no cursor, no positions left to skip.
    void close_epoch() {
        {
            const tbb::spin_mutex::scoped_lock lock(mutex);
            cursor = nullptr;
        }
        resume_done.clear();
        resume_done_next = 0;
    }
};

}  // namespace ferry::detail
