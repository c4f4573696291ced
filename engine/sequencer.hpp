// SPDX-License-Identifier: Apache-2.0
/// \file
/// Restores source order at renumbering points (batch, flat_map expansion, unbatch, output).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "box.hpp"

namespace ferry::detail {

/// Feeds messages of one sequence space to `process` in sequence order (ordered) or arrival order
/// (unordered), with the epoch's `end` always last. Every seq 0..n-1 arrives exactly once —
/// filtered and skipped items as gaps — so the buffer never waits for a number that will not
/// come. Used only from a serial node or the output's serial_combiner, so it needs no locking.
class sequencer {
  public:
    explicit sequencer(bool ordered) : ordered_(ordered) {}

    template <class Process>
    void push(msg m, Process&& process) {
        if (ordered_) {
            if (m->seq != next_) {
                park(m);
                return;
            }
            emit(m, process);
            while (parked_ > 0) {
                msg& slot = ring_[next_ & (ring_.size() - 1)];
                if (slot == nullptr || slot->seq != next_) break;
                msg n = std::exchange(slot, nullptr);
                --parked_;
                emit(n, process);
            }
            return;
        }
        if (m->kind == msg_kind::end) {
            if (arrived_ == m->seq) {
                finish(m, process);
            } else {
                held_end_ = m;
            }
            return;
        }
        ++arrived_;
        process(m);
        if (held_end_ != nullptr && arrived_ == held_end_->seq) finish(held_end_, process);
    }

    /// Forgets everything (after a cancelled epoch; the pool reclaims the boxes).
    void clear() noexcept {
        std::fill(ring_.begin(), ring_.end(), nullptr);
        parked_ = 0;
        next_ = 0;
        arrived_ = 0;
        held_end_ = nullptr;
    }

  private:
    /// Parks an early message in a ring indexed by seq (no allocation in steady state); the ring
    /// doubles when a message arrives further ahead than it spans.
    void park(msg m) {
        if (ring_.empty()) ring_.assign(64, nullptr);
        while (m->seq - next_ >= ring_.size()) grow();
        ring_[m->seq & (ring_.size() - 1)] = m;
        ++parked_;
    }
    void grow() {
        std::vector<msg> bigger(ring_.size() * 2, nullptr);
        for (msg p : ring_) {
            if (p != nullptr) bigger[p->seq & (bigger.size() - 1)] = p;
        }
        ring_.swap(bigger);
    }

    template <class Process>
    void emit(msg m, Process& process) {
        if (m->kind == msg_kind::end) {
            finish(m, process);
        } else {
            ++next_;
            process(m);
        }
    }
    template <class Process>
    void finish(msg end, Process& process) {
        clear();
        process(end);
    }

    bool ordered_;
    std::uint64_t next_ = 0;
    std::uint64_t arrived_ = 0;
    msg held_end_ = nullptr;
    std::vector<msg> ring_;  ///< size is a power of two; slot = seq mod size
    std::size_t parked_ = 0;
};

}  // namespace ferry::detail
