// SPDX-License-Identifier: Apache-2.0
/// \file
/// Always-on, lock-free per-stage counters and a log-bucketed latency histogram.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace ferry::detail {

/// Latency histogram with 8 sub-buckets per power of two (bucket width <= 12.5% of its value):
/// recording is one relaxed atomic increment, cheap enough to leave on.
class latency_histogram {
  public:
    static constexpr int sub_bits = 3;
    static constexpr int buckets = 64 << sub_bits;

    void record(std::uint64_t ns) noexcept {
        counts_[index(ns)].fetch_add(1, std::memory_order_relaxed);
    }

    /// The value below which fraction `q` of the samples lie (upper edge of its bucket).
    [[nodiscard]] std::uint64_t quantile(double q) const noexcept {
        std::array<std::uint64_t, buckets> snap{};
        std::uint64_t total = 0;
        for (int i = 0; i < buckets; ++i) {
            snap[i] = counts_[i].load(std::memory_order_relaxed);
            total += snap[i];
        }
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

/// What one stage has done so far. Hot counters are relaxed atomics; sampled fractions are
/// written by the monitor thread under `sample_mutex`.
struct stage_counters {
    std::atomic<std::uint64_t> arrived{0};   ///< messages (any kind) that reached the node
    std::atomic<std::uint64_t> emitted{0};   ///< messages (any kind) it passed on
    std::atomic<std::uint64_t> in{0};        ///< values given to the callable
    std::atomic<std::uint64_t> out{0};       ///< values produced
    std::atomic<std::uint64_t> failed{0};    ///< values that failed after retries
    std::atomic<std::uint64_t> filtered{0};  ///< values dropped on purpose
    std::atomic<std::uint64_t> retries{0};
    std::atomic<std::uint64_t> skipped{0};  ///< failures skipped: the budget's count
    std::atomic<std::uint64_t> calls{0};
    std::atomic<std::uint64_t> busy_ns{0};
    std::atomic<int> active{0};  ///< calls running now (or async calls outstanding)
    latency_histogram latency;

    std::mutex sample_mutex;
    std::uint64_t samples = 0;
    double utilization_sum = 0;
    std::uint64_t starved_samples = 0;
    std::uint64_t backpressured_samples = 0;
    double queue_sum = 0;
    std::uint64_t queue_max = 0;

    void record_call(std::chrono::steady_clock::duration d) noexcept {
        const auto ns = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
        calls.fetch_add(1, std::memory_order_relaxed);
        busy_ns.fetch_add(ns, std::memory_order_relaxed);
        latency.record(ns);
    }
};

}  // namespace ferry::detail
