// SPDX-License-Identifier: Apache-2.0
/// \file
/// source_driver: the source's side — the pull (one credit, one box, one call of the user's
/// cursor, one message out), the epoch's source piece it pulls from, the boxes it took from the
/// pool in bulk, the "source" counters.
#pragma once

#include <oneapi/tbb/spin_mutex.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "admission.hpp"
#include "box.hpp"
#include "counters.hpp"
#include "epoch_control.hpp"
#include "epoch_run.hpp"
#include "failure_recorder.hpp"
#include "ferry/detail/spec.hpp"

namespace ferry::detail {

/// The source's side. The input node calls `pull` one at a time and the consumer opens and
/// closes epochs: `mutex_` guards everything here but `busy_` and the counters (relaxed
/// atomics, read by the monitor). A spin lock, the cheapest for the pull that takes it for every
/// item: the consumer takes it only where no pull is inside the cursor (between epochs: the
/// input node has stopped, or the graph is idle), so it never spins for long; `shut()`, which
/// may come while a slow cursor runs, waits for the pull in progress by trying it and sleeping.
class source_driver {
  public:
    /// `ctl` says whether the source may go on; `credits` and `pool` give the credit and the box
    /// of each item; `recorder` counts what it produces and records its failures.
    source_driver(const source_spec& spec, const epoch_control& ctl, admission& credits,
                  box_pool& pool, failure_recorder& recorder)
        : ctl_(ctl), admission_(credits), pool_(pool), spec_(spec), recorder_(recorder) {}
    source_driver(const source_driver&) = delete;
    source_driver& operator=(const source_driver&) = delete;

    /// Construction: a counter shard per arena slot, and the trace's and NVTX's row 0.
    void prepare(int slots, span_log* spans, call_ranges* ranges) {
        boxes_.reserve(box_batch);
        counters_.resize(slots);
        counters_.trace_to(spans, 0);
        counters_.ranges_to(ranges, 0);
    }
    /// The input node's body (source.cpp): false when the source may not go on (closed, halted,
    /// cancelled, out of credits); else `out` is the next message (a value, a gap, the epoch's
    /// end or the source's failure).
    bool pull(msg& out);
    /// The epoch starts: the input node pulls from `run` until close_epoch (no pull is inside
    /// the cursor now: the last epoch's input node has stopped, or its graph was reset).
    void open_epoch(source_epoch& run) {
        const tbb::spin_mutex::scoped_lock lock(mutex_);
        run_ = &run;
        open_ = true;
    }
    /// The epoch's end: the input node finds the source closed; the piece may be dropped.
    void close_epoch() {
        const tbb::spin_mutex::scoped_lock lock(mutex_);
        run_ = nullptr;
        open_ = false;
    }
    /// stop(), from any thread: the source makes nothing more. A pull in progress ends its item
    /// (counted as produced) first; it is waited for sleeping, not spinning (a cursor may take
    /// long).
    void shut() noexcept {
        while (!mutex_.try_lock()) std::this_thread::sleep_for(std::chrono::microseconds(50));
        open_ = false;
        mutex_.unlock();
    }
    /// An abandoned epoch is reclaimed (the graph is idle: no pull runs): closed, its cached
    /// boxes forgotten (the pool reclaims every box), the credits reset.
    void reclaim() noexcept {
        const tbb::spin_mutex::scoped_lock lock(mutex_);
        open_ = false;
        boxes_.clear();
        admission_.reset();
    }
    /// The monitor's sample: busy in the cursor, or held back by the in-flight limit.
    void sample(bool saturated) {
        const bool busy = busy_;
        std::lock_guard lock(counters_.sample_mutex);
        ++counters_.samples;
        if (busy) counters_.utilization_sum += 1.0;
        if (!busy && saturated) ++counters_.backpressured_samples;
    }

    /// A pull is inside the user's cursor.
    [[nodiscard]] bool busy() const noexcept { return busy_.load(std::memory_order_relaxed); }
    /// The "source" row of the stats.
    [[nodiscard]] const stage_counters& counters() const noexcept { return counters_; }

  private:
    /// Pulls and drops the items at the positions the epoch skips next; false when the source
    /// ended meanwhile. Under `mutex_`.
    bool skip_done_positions(source_epoch& run);
    /// The cursor threw at `position`: `b` becomes the error message that ends the epoch.
    void fail(source_epoch& run, box* b, std::uint64_t position, const shard_writer& w);

    // What the pull touches for every item fills the mutex's cache line: the flags, the piece,
    // the bulk boxes and the parts it asks.
    alignas(64) tbb::spin_mutex mutex_;
    bool open_ = false;
    std::atomic<bool> busy_{false};
    source_epoch* run_ = nullptr;  ///< the epoch's piece while it is open
    std::vector<box*> boxes_;      ///< free boxes taken from the pool in bulk
    const epoch_control& ctl_;
    admission& admission_;
    box_pool& pool_;
    const source_spec& spec_;
    failure_recorder& recorder_;
    std::string last_input_;   ///< the last item's description, for a source failure's message
    stage_counters counters_;  ///< the "source" row of the stats
};

}  // namespace ferry::detail
