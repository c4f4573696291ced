// SPDX-License-Identifier: Apache-2.0
/// \file
/// source_driver: the source's state — its cursor, where the epoch stands, the boxes it took
/// from the pool in bulk, an unordered resume's positions to skip.
#pragma once

#include <oneapi/tbb/spin_mutex.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "box.hpp"
#include "counters.hpp"
#include "ferry/detail/spec.hpp"

namespace ferry::detail {

/// The source's side. The input node calls its pull one at a time and the consumer opens and
/// closes epochs: `mutex` guards everything here but `busy` and the counters (relaxed atomics,
/// read by the monitor). A spin lock, the cheapest for the pull that takes it for every item:
/// the consumer takes it only where no pull is inside the cursor (between epochs: the input node
/// has stopped, or the graph is idle), so it never spins for long; `stop()`, which may come
/// while a slow cursor runs, waits for the pull in progress by trying it and sleeping
/// (`lock_sleeping`).
struct source_driver {
    alignas(64) tbb::spin_mutex mutex;
    source_cursor cursor;
    bool open = false;
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
    /// Takes `mutex` without spinning: for `stop()`, from any thread, while a pull may be inside
    /// a cursor that takes long (a pull in progress ends its item first, as with a mutex).
    void lock_sleeping() {
        while (!mutex.try_lock()) std::this_thread::sleep_for(std::chrono::microseconds(50));
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
