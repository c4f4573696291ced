// SPDX-License-Identifier: Apache-2.0
/// \file
/// Restores source order at renumbering points (batch, flat_map expansion, unbatch, output).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "box.hpp"

namespace ferry::detail {

/// Feeds messages of one sequence space to `process` in sequence order (ordered) or arrival order
/// (unordered), with the epoch's `end` always last. Every seq 0..n-1 arrives exactly once —
/// filtered and skipped items as gaps — so the buffer never waits for a number that will not
/// come. Used only from a serial node, so it needs no locking.
class sequencer {
  public:
    explicit sequencer(bool ordered) : ordered_(ordered) {}

    template <class Process>
    void push(msg m, Process&& process) {
        if (ordered_) {
            if (m->seq != next_) {
                pending_.emplace(m->seq, m);
                return;
            }
            emit(m, process);
            while (!pending_.empty()) {
                auto it = pending_.find(next_);
                if (it == pending_.end()) break;
                msg n = it->second;
                pending_.erase(it);
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
        pending_.clear();
        next_ = 0;
        arrived_ = 0;
        held_end_ = nullptr;
    }

  private:
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
    std::unordered_map<std::uint64_t, msg> pending_;
};

}  // namespace ferry::detail
