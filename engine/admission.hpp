// SPDX-License-Identifier: Apache-2.0
/// \file
/// Admission: the in-flight credits that bound how many source items are inside the graph.
///
/// The protocol. Every message the source emits carries one credit; it comes back when the
/// consumer takes the message (in batches of `credit_batch`, at once while the source is parked)
/// or when a worker retires a gap. The source takes a credit before it reads an item (`take`); out
/// of credits it *parks*: its input node stops, and whoever next returns credits (or raises the
/// limit) re-activates it, once.
///
/// Memory order. `take` parks, then looks again; `give_back` and `set_limit` publish, then look
/// for the park flag. All four accesses are seq_cst, so one of the two sides sees the other: either
/// the source sees the credits returned meanwhile and goes on, or the returner sees the flag, takes
/// it (`exchange`) and re-activates the source. Whoever takes the flag owns the wake-up, so the
/// source is never activated twice nor left parked. The counts themselves are relaxed elsewhere:
/// only the source writes `issued_`, and the monitor reads both counts as a sampled estimate.
///
/// fast_start lowers the limit to the items the first output needs until the consumer takes it
/// (`set_limit`), so that every thread works on the first batch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "counters.hpp"

namespace ferry::detail {

class admission {
  public:
    /// The source asks for the credit of its next message; false: out of credits, now parked
    /// (its input node must stop and wait to be re-activated).
    [[nodiscard]] bool take() noexcept {
        const auto issued = issued_.load(std::memory_order_relaxed);  // written only here
        if (issued - returned_.load(std::memory_order_relaxed) <
            limit_.load(std::memory_order_relaxed)) {
            return true;
        }
        // Out of credits: park, then look again, so that credits returned (or a limit raised)
        // meanwhile are not missed. If a returner took the flag meanwhile, this call stops and
        // the returner's activation goes on.
        parked_.store(true, std::memory_order_seq_cst);
        if (issued - returned_.load(std::memory_order_seq_cst) >=
            limit_.load(std::memory_order_seq_cst)) {
            return false;
        }
        return parked_.exchange(false);
    }
    /// The source emitted the message it took a credit for (source only).
    void issued() noexcept { bump_owned(issued_, 1); }

    /// `n` credits come back. True: the source was parked, and the caller must re-activate it.
    [[nodiscard]] bool give_back(std::uint64_t n) noexcept {
        if (n == 0) return false;
        returned_.fetch_add(n, std::memory_order_seq_cst);
        return unpark();
    }
    /// The credits the source may hold from now on. A raised limit wakes no one by itself: call
    /// `unpark` after it.
    void set_limit(std::size_t n) noexcept { limit_.store(n, std::memory_order_seq_cst); }
    /// True (once) when the source is parked: the caller must re-activate it.
    [[nodiscard]] bool unpark() noexcept {
        return parked_.load(std::memory_order_seq_cst) && parked_.exchange(false);
    }

    /// Whether the source is parked now (a hint: the consumer returns its credits at once rather
    /// than at the end of a batch, so that the source does not wait for the batch).
    [[nodiscard]] bool parked() const noexcept { return parked_.load(std::memory_order_relaxed); }

    /// After an abandoned epoch, with nothing running: every credit counts as returned.
    void reset() noexcept {
        returned_.store(issued_.load());
        parked_ = false;
    }
    /// Credits out now (a sampled estimate, clamped at zero): source items in the graph.
    [[nodiscard]] std::uint64_t out_now() const noexcept {
        // Issued first: a count returned later can only make the difference smaller, so the
        // estimate never exceeds what was out at one moment (nor the limit).
        const auto issued = issued_.load(std::memory_order_acquire);
        const auto returned = returned_.load(std::memory_order_acquire);
        return issued > returned ? issued - returned : 0;
    }
    /// Whether `in_flight` credits are out now (a sampled estimate, clamped at zero).
    [[nodiscard]] bool saturated(std::size_t in_flight) const noexcept {
        const auto returned = returned_.load(std::memory_order_acquire);
        const auto issued = issued_.load(std::memory_order_acquire);
        return issued >= returned && issued - returned >= in_flight;
    }

  private:
    // The source writes `issued_` per item, the consumer and the workers `returned_`: separate
    // cache lines.
    alignas(64) std::atomic<std::uint64_t> issued_{0};
    alignas(64) std::atomic<std::uint64_t> returned_{0};
    std::atomic<bool> parked_{false};
    std::atomic<std::size_t> limit_{0};
};

}  // namespace ferry::detail
