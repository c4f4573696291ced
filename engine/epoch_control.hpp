// SPDX-License-Identifier: Apache-2.0
/// \file
/// epoch_control: the pipeline's control state — which epoch runs, whether it is being stopped,
/// abandoned or halted by a failure, the sticky fatal error — and the lock the consumer holds
/// while it drives an epoch. No TBB.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>

namespace ferry::detail {

/// Control of the epochs. The consumer locks `mutex` on every item (next(), state(), abandon);
/// the flags are read by the workers on every item, lock-free, on a cache line of their own.
///
/// Who writes what: `stopping` any thread (stop(), destruction); `aborting` and `halt_after`
/// the thread that reclaims an epoch (under `mutex`) and, for `halt_after`/`halted`, a worker
/// whose item fails the pipeline; `fatal`, `running`, `epoch` and the bases the consumer under
/// `mutex`.
struct epoch_control {
    using clock = std::chrono::steady_clock;
    static constexpr std::uint64_t no_halt = std::numeric_limits<std::uint64_t>::max();

    alignas(64) mutable std::mutex mutex;
    alignas(64) std::atomic<bool> stopping{false};
    std::atomic<bool> aborting{false};
    std::atomic<bool> halted{false};  ///< a stage failed: the source stops producing
    std::atomic<std::uint64_t> halt_after{no_halt};
    std::atomic<bool> running{false};
    /// A stopped epoch's leftovers are counted (settle_stopped_epoch): nothing more to reclaim.
    std::atomic<bool> stop_settled{false};
    std::exception_ptr fatal;  ///< sticky stage_error
    std::atomic<std::uint64_t> epoch{0};
    std::atomic<clock::rep> start{0};  ///< steady_clock ticks
    std::atomic<std::int64_t> elapsed_ns{0};
    /// The ledger's produced and failed counts when the epoch started (consumer thread only).
    std::uint64_t produced_base = 0;
    std::uint64_t failed_base = 0;

    /// The epoch's items can only end cancelled: it is being abandoned, or the pipeline stopped
    /// (stop() from any thread: no call starts after it, and a result that arrives after it is
    /// dropped).
    [[nodiscard]] bool cancelling() const noexcept { return aborting || stopping; }
    /// True for the item at `source_index` whose work would be wasted: its epoch is being
    /// cancelled, or it comes after an item that failed the pipeline.
    [[nodiscard]] bool should_drop(std::uint64_t source_index) const noexcept {
        return cancelling() || source_index > halt_after.load(std::memory_order_relaxed);
    }
    /// The item at `source_index` failed the pipeline: the source stops, items after it are
    /// dropped unprocessed, the ones before it still finish.
    void halt_at(std::uint64_t source_index) noexcept {
        halted = true;
        auto idx = halt_after.load();
        while (source_index < idx && !halt_after.compare_exchange_weak(idx, source_index)) {
        }
    }
    /// An abandoned epoch is reclaimed: the next one starts unhalted.
    void clear_halt() noexcept {
        halted = false;
        halt_after = no_halt;
    }
    /// Time spent in epochs, the running one's so far included.
    [[nodiscard]] std::int64_t elapsed() const noexcept {
        auto ns = elapsed_ns.load();
        if (running) ns += clock::now().time_since_epoch().count() - start;
        return ns;
    }
};

}  // namespace ferry::detail
