// SPDX-License-Identifier: Apache-2.0
/// \file
/// Always-on, lock-free per-stage counters and a log-bucketed latency histogram.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <oneapi/tbb/task_arena.h>

#include "call_ranges.hpp"
#include "ferry/this_call.hpp"
#include "trace.hpp"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace ferry::detail {

/// Adds `n` to a counter that one thread at a time writes (with happens-before between
/// successive writers) while any thread may read it: a relaxed load and store, no locked
/// instruction.
template <class T>
inline void bump_owned(std::atomic<T>& a, std::type_identity_t<T> n) noexcept {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

/// Latency histogram with 8 sub-buckets per power of two (bucket width <= 12.5% of its value):
/// recording is one relaxed atomic increment, cheap enough to leave on.
class latency_histogram {
  public:
    static constexpr int sub_bits = 3;
    static constexpr int buckets = 64 << sub_bits;

    void record(std::uint64_t ns) noexcept {
        counts_[index(ns)].fetch_add(1, std::memory_order_relaxed);
    }
    /// `record` for the only thread that writes this histogram: no locked instruction.
    void record_owned(std::uint64_t ns) noexcept { bump_owned(counts_[index(ns)], 1); }

    /// Adds this histogram's counts into `snap`.
    void add_to(std::array<std::uint64_t, buckets>& snap) const noexcept {
        for (int i = 0; i < buckets; ++i) snap[i] += counts_[i].load(std::memory_order_relaxed);
    }

    /// The value below which fraction `q` of the counted samples in `snap` lie (bucket middle).
    [[nodiscard]] static std::uint64_t quantile(const std::array<std::uint64_t, buckets>& snap,
                                                double q) noexcept {
        std::uint64_t total = 0;
        for (auto n : snap) total += n;
        if (total == 0) return 0;
        auto target = static_cast<std::uint64_t>(q * static_cast<double>(total));
        if (target >= total) target = total - 1;
        std::uint64_t seen = 0;
        for (int i = 0; i < buckets; ++i) {
            seen += snap[i];
            if (seen > target) return midpoint(i);
        }
        return midpoint(buckets - 1);
    }

    /// Adds one sample of `ticks` to `snap` (a call still in progress, counted with its time so
    /// far).
    static void add_sample(std::array<std::uint64_t, buckets>& snap, std::uint64_t t) noexcept {
        ++snap[index(t)];
    }

    /// Number of samples in `snap`.
    [[nodiscard]] static std::uint64_t total(
        const std::array<std::uint64_t, buckets>& snap) noexcept {
        std::uint64_t n = 0;
        for (auto c : snap) n += c;
        return n;
    }

  private:
    static int index(std::uint64_t ns) noexcept {
        if (ns < (1u << sub_bits)) return static_cast<int>(ns);
        const int msb = std::bit_width(ns) - 1;  // >= sub_bits
        const auto sub = static_cast<int>((ns >> (msb - sub_bits)) & ((1u << sub_bits) - 1));
        return ((msb - sub_bits + 1) << sub_bits) + sub;
    }
    static std::uint64_t midpoint(int i) noexcept {
        if (i < (1 << sub_bits)) return static_cast<std::uint64_t>(i);
        const int msb = (i >> sub_bits) + sub_bits - 1;
        const std::uint64_t sub = static_cast<std::uint64_t>(i) & ((1u << sub_bits) - 1);
        const std::uint64_t lo = (std::uint64_t{1} << msb) | (sub << (msb - sub_bits));
        const std::uint64_t width = std::uint64_t{1} << (msb - sub_bits);
        return lo + width / 2;
    }

    std::array<std::atomic<std::uint64_t>, buckets> counts_{};
};

/// A cheap timestamp for per-call timing: the TSC on x86-64 (a few ns, no syscall), steady_clock
/// nanoseconds elsewhere. Converted to nanoseconds by a `tick_rate` measured over the run.
inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

/// Converts ticks to nanoseconds, calibrated against steady_clock between construction and use.
class tick_rate {
  public:
    tick_rate() noexcept : t0_(ticks()), c0_(std::chrono::steady_clock::now()) {}
    /// Nanoseconds per tick (refined each call; before 2 ms have passed it measures briefly).
    [[nodiscard]] double ns_per_tick() const noexcept {
#if defined(__x86_64__)
        auto c1 = std::chrono::steady_clock::now();
        auto t1 = ticks();
        if (c1 - c0_ < std::chrono::milliseconds(2)) {
            // Too early for a precise ratio: wait 2 ms once (only stats() calls this).
            while (std::chrono::steady_clock::now() - c0_ < std::chrono::milliseconds(2)) {
            }
            c1 = std::chrono::steady_clock::now();
            t1 = ticks();
        }
        const double ns = std::chrono::duration<double, std::nano>(c1 - c0_).count();
        return t1 > t0_ ? ns / static_cast<double>(t1 - t0_) : 1.0;
#else
        return 1.0;
#endif
    }

  private:
    std::uint64_t t0_;
    std::chrono::steady_clock::time_point c0_;
};

/// One thread-slot's share of a stage's counters, on its own cache line(s), so that the workers
/// running a stage do not bounce a shared line on every call.
struct alignas(64) counter_shard {
    std::atomic<std::uint64_t> arrived{0};   ///< messages (any kind) that reached the node
    std::atomic<std::uint64_t> emitted{0};   ///< messages (any kind) it passed on
    std::atomic<std::uint64_t> in{0};        ///< values given to the callable
    std::atomic<std::uint64_t> out{0};       ///< values produced
    std::atomic<std::uint64_t> failed{0};    ///< values that failed after retries
    std::atomic<std::uint64_t> filtered{0};  ///< values dropped on purpose
    std::atomic<std::uint64_t> retries{0};
    std::atomic<std::uint64_t> busy_ticks{0};
    std::atomic<std::int64_t> active{0};     ///< calls running (may be negative in one shard)
    std::atomic<std::uint64_t> timeouts{0};  ///< calls that ran past the stage's timeout
    /// The call this shard's one writer is running, for the watchdog: its source item, and its
    /// start in ticks (0: none). Only owned shards track calls (a shared one has many writers).
    std::atomic<std::uint64_t> call_item{0};
    std::atomic<std::uint64_t> call_start{0};
    latency_histogram latency;  ///< in ticks
};

/// Updates one shard of a stage's counters. Get one per body call (`stage_counters::owned` or
/// `shared`) and use it for every update of that call: finding the calling thread's arena slot is
/// a call into libtbb and a thread-specific lookup, which done per update costs a quarter of the
/// engine's instructions per item.
///
/// An arena thread owns the shard of its slot: no other thread writes it while this thread holds
/// the slot, and TBB's slot hand-over orders one holder's writes before the next holder's, so an
/// owned update is a relaxed load and store (no locked instruction). Every other thread (I/O
/// threads, completions of asynchronous calls, threads of other arenas) shares shard 0 and
/// updates it with atomic read-modify-writes. All accesses are atomic, so concurrent readers
/// (stats, the monitor) are race-free either way.
class shard_writer {
  public:
    shard_writer(counter_shard& shard, bool owned, span_log* spans = nullptr,
                 std::uint32_t stage = 0, const call_ranges* ranges = nullptr) noexcept
        : shard_(&shard), owned_(owned), spans_(spans), stage_(stage), ranges_(ranges) {}

    void add(std::atomic<std::uint64_t> counter_shard::*field, std::uint64_t n = 1) const noexcept {
        bump(shard_->*field, n);
    }
    /// Counts a call as running (+1) or finished (-1).
    void active(std::int64_t d) const noexcept { bump(shard_->active, d); }
    /// Marks a call on `item` that started at `start_ticks` as running on this thread (owned
    /// shards only: the watchdog reads it), until `end_call`.
    /// With NVTX ranges on (call_ranges), the call is one, open until `end_call`.
    void begin_call(std::uint64_t start_ticks, std::uint64_t item) const noexcept {
        if (ranges_ != nullptr) ranges_->push(stage_, item);
        if (!owned_) return;
        shard_->call_item.store(item, std::memory_order_relaxed);
        shard_->call_start.store(start_ticks == 0 ? 1 : start_ticks, std::memory_order_release);
    }
    void end_call() const noexcept {
        if (ranges_ != nullptr) ranges_->pop(stage_);
        if (owned_) shard_->call_start.store(0, std::memory_order_relaxed);
    }
    /// Records one call that started at `start_ticks`: busy time and the latency histogram (and
    /// with tracing on, its span, on `item` if it had one).
    void record_call(std::uint64_t start_ticks,
                     std::uint64_t item = span_log::no_item) const noexcept {
        const std::uint64_t now = ticks();
        const std::uint64_t d = now > start_ticks ? now - start_ticks : 0;
        bump(shard_->busy_ticks, d);
        if (owned_) {
            shard_->latency.record_owned(d);
        } else {
            shard_->latency.record(d);
        }
        if (spans_ != nullptr) spans_->add(stage_, start_ticks, now, item);
    }

    /// Tracing on: the call started at `start_ticks` (a batch's) took in item `item`.
    [[nodiscard]] bool traced() const noexcept { return spans_ != nullptr; }
    void link(std::uint64_t start_ticks, std::uint64_t item) const noexcept {
        if (spans_ != nullptr) spans_->add_link(start_ticks, item);
    }

  private:
    template <class T>
    void bump(std::atomic<T>& a, T n) const noexcept {
        if (owned_) {
            bump_owned(a, n);
        } else {
            a.fetch_add(n, std::memory_order_relaxed);
        }
    }

    counter_shard* shard_;
    bool owned_;
    span_log* spans_;
    std::uint32_t stage_;
    const call_ranges* ranges_;
};

/// What one stage has done so far: sharded relaxed counters (summed when read), and sampled
/// fractions written by the monitor thread under `sample_mutex`.
class stage_counters {
  public:
    explicit stage_counters(int slots = 0) { resize(slots); }
    /// One shard for threads outside the arena, one per arena slot (`slots` of them), and one per
    /// I/O thread of the stage (`io_threads`).
    void resize(int slots, int io_threads = 0) {
        shards_.clear();
        arena_slots_ = std::max(0, slots);
        for (int i = 0; i < 1 + arena_slots_ + std::max(0, io_threads); ++i) {
            shards_.push_back(std::make_unique<counter_shard>());
        }
    }

    /// The writer for a body of the pipeline's own graph, which TBB runs on a thread of the
    /// pipeline's arena: that thread's slot's shard, owned; on one of the stage's own I/O threads
    /// (`io_thread`, its index in the stage's pool, or -1), that thread's shard. Only for code
    /// known to run in the pipeline's arena or on the stage's own I/O threads (a thread inside
    /// another arena has a slot index there too).
    [[nodiscard]] shard_writer owned(int io_thread = -1) noexcept {
        // An I/O thread first: asked for its arena slot, oneTBB would attach it to the default
        // arena and give it a slot index there.
        if (io_thread >= 0) {
            const auto i = static_cast<std::size_t>(1 + arena_slots_ + io_thread);
            if (i >= shards_.size()) return shared();
            return {*shards_[i], true, spans_, stage_, ranges_};
        }
        const int slot = tbb::this_task_arena::current_thread_index();
        if (slot < 0 || slot >= arena_slots_) return shared();
        return {*shards_[1 + static_cast<std::size_t>(slot)], true, spans_, stage_, ranges_};
    }
    /// The writer for code that may run on any thread: shard 0, atomic updates.
    [[nodiscard]] shard_writer shared() noexcept {
        return {*shards_[0], false, spans_, stage_, ranges_};
    }
    /// Where the writers record call spans (tracing on), and this stage's index there.
    void trace_to(span_log* spans, std::uint32_t stage) noexcept {
        spans_ = spans;
        stage_ = stage;
    }
    /// Where the writers open and close each call's NVTX range (its row: the stage's index in
    /// the trace's rows, as `trace_to` sets it).
    void ranges_to(const call_ranges* ranges, std::uint32_t stage) noexcept {
        ranges_ = ranges;
        stage_ = stage;
    }

    template <class T>
    [[nodiscard]] T sum(std::atomic<T> counter_shard::*field) const noexcept {
        T total{};
        for (const auto& s : shards_) total += ((*s).*field).load(std::memory_order_relaxed);
        return total;
    }

    /// Merged latency histogram of all shards.
    [[nodiscard]] std::array<std::uint64_t, latency_histogram::buckets> latency() const noexcept {
        std::array<std::uint64_t, latency_histogram::buckets> snap{};
        for (const auto& s : shards_) s->latency.add_to(snap);
        return snap;
    }

    /// Results its calls reported truncated (`this_call::note_truncated()`); rare, so unsharded.
    std::atomic<std::uint64_t> truncated{0};
    /// What its calls counted by name (`this_call::count()`).
    ferry::detail::call_counters named;
    /// batch_by: its batches' summed cost and padded cost (one writer, its serial node).
    std::atomic<double> cost{0};
    std::atomic<double> padded_cost{0};

    std::mutex sample_mutex;
    std::uint64_t samples = 0;
    double utilization_sum = 0;
    std::uint64_t starved_samples = 0;
    std::uint64_t backpressured_samples = 0;
    double queue_sum = 0;
    std::uint64_t queue_max = 0;

    [[nodiscard]] const std::vector<std::unique_ptr<counter_shard>>& shards() const noexcept {
        return shards_;
    }

  private:
    std::vector<std::unique_ptr<counter_shard>> shards_;
    int arena_slots_ = 0;
    span_log* spans_ = nullptr;
    std::uint32_t stage_ = 0;
    const call_ranges* ranges_ = nullptr;
};

}  // namespace ferry::detail
