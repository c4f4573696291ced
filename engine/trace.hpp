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
    struct span {
        std::uint64_t t0 = 0, t1 = 0;  ///< ticks
        std::uint32_t stage = 0;       ///< index into the names the runtime keeps
        std::uint32_t thread = 0;      ///< span_log::thread_id()
    };

    explicit span_log(std::size_t capacity) : capacity_(capacity) {}

    void add(std::uint32_t stage, std::uint64_t t0, std::uint64_t t1) noexcept {
        const std::uint32_t thread = thread_id();
        std::lock_guard lock(mutex_);
        if (spans_.size() >= capacity_) {
            ++dropped_;
            return;
        }
        try {
            spans_.push_back({t0, t1, stage, thread});
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
    void snapshot(std::vector<span>& spans, std::map<std::uint32_t, std::string>& names,
                  std::uint64_t& dropped) const {
        std::lock_guard lock(mutex_);
        spans = spans_;
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
    std::map<std::uint32_t, std::string> thread_names_;
    std::uint64_t dropped_ = 0;
};

/// Writes what `spans` recorded as Chrome trace-event JSON (for Perfetto or chrome://tracing):
/// one complete event per span, named by `names[span.stage]`, times in microseconds from the
/// first span (`ns_per_tick` converts), and one thread_name event per thread that has spans.
void write_chrome_trace(std::ostream& os, const span_log& spans,
                        const std::vector<std::string>& names, double ns_per_tick);

}  // namespace ferry::detail
