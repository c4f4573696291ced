// SPDX-License-Identifier: Apache-2.0
/// \file
/// Tracing: the log of stage-call spans and its Chrome trace-event JSON writer.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ferry::detail {

/// Spans of stage calls (and of the consumer's waits) for `pipeline::write_trace`, when
/// `pipeline_options::trace_spans` is set: at most `capacity` kept, the rest counted as dropped.
/// A mutex per span: tracing is a diagnostic mode, and a call it records costs microseconds or
/// more.
class span_log {
  public:
    static constexpr std::uint64_t no_item = ~std::uint64_t{0};
    struct span {
        std::uint64_t t0 = 0, t1 = 0;  ///< ticks
        std::uint64_t item = no_item;  ///< the call's item (its position), if it has one
        std::uint32_t stage = 0;       ///< index into the names the runtime keeps
        std::uint32_t thread = 0;      ///< span_log::thread_id()
    };
    /// A sampled value of one series (the monitor's: items in flight, a stage's queue).
    struct count {
        std::uint64_t t = 0;  ///< ticks
        std::uint64_t value = 0;
        std::uint32_t series = 0;  ///< index into the series names the runtime keeps
    };

    explicit span_log(std::size_t capacity) : capacity_(capacity) {}

    void add(std::uint32_t stage, std::uint64_t t0, std::uint64_t t1,
             std::uint64_t item = no_item) noexcept {
        const std::uint32_t thread = thread_id();
        std::lock_guard lock(mutex_);
        if (spans_.size() + counts_.size() >= capacity_) {
            ++dropped_;
            return;
        }
        try {
            spans_.push_back({t0, t1, item, stage, thread});
        } catch (...) {
            ++dropped_;
        }
    }
    /// The stage of a link record: item `item` went into the call (a batch's) that the calling
    /// thread started at `t`; the trace ends the item's flow there.
    static constexpr std::uint32_t link_stage = ~std::uint32_t{0};
    void add_link(std::uint64_t t, std::uint64_t item) noexcept { add(link_stage, t, t, item); }
    /// Records series `series`'s value at `t` (within the same capacity as the spans).
    void add_count(std::uint32_t series, std::uint64_t t, std::uint64_t value) noexcept {
        std::lock_guard lock(mutex_);
        if (spans_.size() + counts_.size() >= capacity_) {
            ++dropped_;
            return;
        }
        try {
            counts_.push_back({t, value, series});
        } catch (...) {
            ++dropped_;
        }
    }
    /// Names the calling thread in the trace (the first name given sticks).
    void name_thread(const std::string& name) {
        const std::uint32_t thread = thread_id();
        std::lock_guard lock(mutex_);
        thread_names_.emplace(thread, name);
    }
    /// A copy of what was recorded, with the thread names and the number dropped.
    void snapshot(std::vector<span>& spans, std::vector<count>& counts,
                  std::map<std::uint32_t, std::string>& names, std::uint64_t& dropped) const {
        std::lock_guard lock(mutex_);
        spans = spans_;
        counts = counts_;
        names = thread_names_;
        dropped = dropped_;
    }
    /// A small number per thread of the process, for the trace's `tid`.
    static std::uint32_t thread_id() noexcept {
        static std::atomic<std::uint32_t> next{1};
        thread_local const std::uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
        return id;
    }

  private:
    const std::size_t capacity_;
    mutable std::mutex mutex_;
    std::vector<span> spans_;
    std::vector<count> counts_;
    std::map<std::uint32_t, std::string> thread_names_;
    std::uint64_t dropped_ = 0;
};

/// Writes what `spans` recorded as Chrome trace-event JSON (for Perfetto or chrome://tracing),
/// times in microseconds from the first record (`ns_per_tick` converts):
///  * one complete event ("X") per span on its thread's track, named by `names[span.stage]`,
///    with the item's position in `args.item` when the call had an item;
///  * one flow ("s", "t"..., "f") per item, from its source call through each later call on it
///    to the batch it went into (a link record), so that Perfetto draws the item's path across
///    threads (a new flow at each source call: positions start again every epoch);
///  * one counter track ("C") per series, named `series[count.series]`;
///  * thread_name metadata for every thread with spans, process_name for the process.
/// Row 0 of `names` is the source's.
void write_chrome_trace(std::ostream& os, const span_log& spans,
                        const std::vector<std::string>& names,
                        const std::vector<std::string>& series, double ns_per_tick);

}  // namespace ferry::detail
