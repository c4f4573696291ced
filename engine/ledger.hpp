// SPDX-License-Identifier: Apache-2.0
/// \file
/// The ledger: where every source item ended (delivered, filtered, failed, cancelled) and the
/// record of each failure.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "ferry/stats.hpp"

namespace ferry::detail {

/// Counts in source items. Every item the source produced ends as exactly one of delivered,
/// filtered, failed or cancelled, each counted where it happens (cancelled: where an aborting
/// stage drops it, or when an abort reclaims the box that stood for it); `unaccounted()` is what
/// is still on its way. Each group of counters sits on its own cache line, by who writes it per
/// item.
struct ledger {
    /// Source only.
    alignas(64) std::atomic<std::uint64_t> produced{0};
    /// The consumer only (under the runtime's control mutex): one writer, relaxed updates.
    alignas(64) std::atomic<std::uint64_t> delivered{0};
    std::atomic<std::uint64_t> outputs{0};  ///< values handed to the consumer (batches count 1)
    /// The workers.
    alignas(64) std::atomic<std::uint64_t> filtered{0};
    std::atomic<std::uint64_t> failed{0};
    std::atomic<std::uint64_t> cancelled{0};
    std::atomic<std::uint64_t> epochs{0};

    /// The counts into `s` (produced, delivered, filtered, failed, cancelled, outputs, epochs).
    void snapshot(pipeline_stats& s) const noexcept {
        s.produced = produced.load();
        s.delivered = delivered.load();
        s.filtered = filtered.load();
        s.failed = failed.load();
        s.cancelled = cancelled.load();
        s.outputs = outputs.load();
        s.epochs = epochs.load();
    }
    /// Items of `s` produced and not yet delivered, filtered, failed or cancelled: on their way
    /// in a running epoch; in a stopped one, those inside calls still in progress or queued
    /// behind them until the calls end and the monitor reclaims them (`pending`).
    [[nodiscard]] static std::uint64_t unaccounted(const pipeline_stats& s) noexcept {
        const auto accounted = s.delivered + s.filtered + s.failed + s.cancelled;
        return s.produced > accounted ? s.produced - accounted : 0;
    }

    void add_failure(failure f) {
        std::lock_guard lock(mutex_);
        failures_.push_back(std::move(f));
    }
    [[nodiscard]] std::vector<failure> failures() const {
        std::lock_guard lock(mutex_);
        return failures_;
    }

  private:
    mutable std::mutex mutex_;
    std::vector<failure> failures_;
};

}  // namespace ferry::detail
