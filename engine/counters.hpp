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

    /// Counts `weight` calls of `ns` (a sampled call stands for the calls not timed before it).
    void record(std::uint64_t ns, std::uint64_t weight = 1) noexcept {
        counts_[index(ns)].fetch_add(weight, std::memory_order_relaxed);
    }
    /// `record` for the only thread that writes this histogram: no locked instruction.
    void record_owned(std::uint64_t ns, std::uint64_t weight = 1) noexcept {
        bump_owned(counts_[index(ns)], weight);
    }

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

/// A clock for the calls that are not timed (`shard_writer::start_call`): `ticks()` as the
/// monitor last read it (each tick of any pipeline's monitor thread, at most 10 ms apart while an
/// epoch runs, 50 ms between epochs, and at each epoch's start). Never ahead of `ticks()`, so a
/// call in progress counted from it shows at least as long as it has run, at most one monitor
/// period longer. Reading it is a load of a line that changes once per tick.
class coarse_clock {
  public:
    [[nodiscard]] static std::uint64_t now() noexcept {
        return value_.load(std::memory_order_relaxed);
    }
    /// Reads `ticks()` for the calls that start from now on.
    static void advance() noexcept {
        value_.store(std::max<std::uint64_t>(1, ticks()), std::memory_order_relaxed);
    }

  private:
    static inline std::atomic<std::uint64_t> value_{std::max<std::uint64_t>(1, ticks())};
};

/// How a stage's calls are timed. Two timestamps per call cost more than the rest of the
/// engine's bookkeeping of a call whose work is a few hundred nanoseconds, so where calls are
/// short a thread times every `sample_every`th call, and that call's time stands for itself and
/// the calls it left untimed before it (busy time and the latency histogram count it with that
/// weight). The next call after one of `long_call_ticks` or more is timed too: a stage whose
/// calls take ~10 us or more (where two timestamps cost under 0.5%) is timed on every call.
/// Which call is timed depends only on the calls before it, never on its own time, so the
/// estimates are unbiased while calls' times do not follow a period of `sample_every`.
struct call_sampling {
    static constexpr std::uint32_t sample_every = 16;
    static constexpr std::uint64_t long_call_ticks = std::uint64_t{1} << 15;
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
    /// start in ticks (0: none; a call not timed has the coarse clock's time when it started).
    /// Only owned shards track calls (a shared one has many writers).
    std::atomic<std::uint64_t> call_item{0};
    std::atomic<std::uint64_t> call_start{0};
    /// Sampling (owned shards; `call_sampling`): calls left untimed since the last timed one,
    /// and how many to leave untimed before the next.
    std::atomic<std::uint32_t> untimed{0};
    std::atomic<std::uint32_t> skip{0};
    latency_histogram latency;  ///< in ticks, calls weighted by what they stand for
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
    /// `every_call`: `start_call` times every call (see `call_sampling` for when it need not).
    shard_writer(counter_shard& shard, bool owned, span_log* spans = nullptr,
                 std::uint32_t stage = 0, const call_ranges* ranges = nullptr,
                 bool every_call = false) noexcept
        : shard_(&shard),
          owned_(owned),
          sampled_(owned && spans == nullptr && !every_call),
          spans_(spans),
          stage_(stage),
          ranges_(ranges) {}

    /// A call started by `start_call`: its start in ticks if it is timed (0: not timed), and the
    /// calls its time stands for.
    struct call_mark {
        std::uint64_t start = 0;
        std::uint32_t weight = 0;
    };
    /// Starts a call on `item`, timed or not (`call_sampling`: every call on a shared shard,
    /// with tracing on, or where the stage asks for it), and marks it running on this thread for
    /// the stats (owned shards; a call not timed from the coarse clock). With NVTX ranges on
    /// (call_ranges), the call is one, open until `finish_call`.
    [[nodiscard]] call_mark start_call(std::uint64_t item) const noexcept {
        call_mark c;
        if (sampled_) {
            const std::uint32_t untimed = shard_->untimed.load(std::memory_order_relaxed);
            if (untimed < shard_->skip.load(std::memory_order_relaxed)) {
                shard_->untimed.store(untimed + 1, std::memory_order_relaxed);
                begin_call(coarse_clock::now(), item);
                return c;
            }
            shard_->untimed.store(0, std::memory_order_relaxed);
            c.weight = untimed + 1;
        } else {
            c.weight = 1;
        }
        c.start = std::max<std::uint64_t>(1, ticks());  // 0 means "not timed"
        begin_call(c.start, item);
        return c;
    }
    /// Ends a call started by `start_call`: a timed one records its time, `weight` times (and
    /// with tracing on its span, on `item` if it had one), and sets how many calls go untimed
    /// before the next timed one.
    void finish_call(const call_mark& c, std::uint64_t item = span_log::no_item) const noexcept {
        if (c.start != 0) finish_timed(c, item);
        end_call();
    }

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
    /// Records one call that started at `start_ticks`, standing for `weight` calls: busy time and
    /// the latency histogram (and with tracing on, its span, on `item` if it had one). Returns
    /// its time in ticks.
    std::uint64_t record_call(std::uint64_t start_ticks, std::uint64_t item = span_log::no_item,
                              std::uint64_t weight = 1) const noexcept {
        const std::uint64_t now = ticks();
        const std::uint64_t d = now > start_ticks ? now - start_ticks : 0;
        bump(shard_->busy_ticks, d * weight);
        if (owned_) {
            shard_->latency.record_owned(d, weight);
        } else {
            shard_->latency.record(d, weight);
        }
        if (spans_ != nullptr) spans_->add(stage_, start_ticks, now, item);
        return d;
    }

    /// Tracing on: the call started at `start_ticks` (a batch's) took in item `item`.
    [[nodiscard]] bool traced() const noexcept { return spans_ != nullptr; }
    void link(std::uint64_t start_ticks, std::uint64_t item) const noexcept {
        if (spans_ != nullptr) spans_->add_link(start_ticks, item);
    }

  private:
    /// `finish_call`'s part for a timed call.
    void finish_timed(const call_mark& c, std::uint64_t item) const noexcept {
        const std::uint64_t d = record_call(c.start, item, c.weight);
        if (sampled_) {
            shard_->skip.store(
                d >= call_sampling::long_call_ticks ? 0 : call_sampling::sample_every - 1,
                std::memory_order_relaxed);
        }
    }

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
    bool sampled_;  ///< start_call leaves calls untimed (call_sampling)
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
            return {*shards_[i], true, spans_, stage_, ranges_, every_call_};
        }
        const int slot = tbb::this_task_arena::current_thread_index();
        if (slot < 0 || slot >= arena_slots_) return shared();
        return {*shards_[1 + static_cast<std::size_t>(slot)],
                true,
                spans_,
                stage_,
                ranges_,
                every_call_};
    }
    /// The writer for code that may run on any thread: shard 0, atomic updates.
    [[nodiscard]] shard_writer shared() noexcept {
        return {*shards_[0], false, spans_, stage_, ranges_, every_call_};
    }
    /// Times every call of the stage (`shard_writer::start_call`): a tuned stage, whose times
    /// the tuner reads interval by interval.
    void time_every_call() noexcept { every_call_ = true; }
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
    bool every_call_ = false;
};

}  // namespace ferry::detail
