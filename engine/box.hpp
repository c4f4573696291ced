// SPDX-License-Identifier: Apache-2.0
/// \file
/// The unit that travels through the flow graph (a pooled `box`) and the pool that owns them all.
#pragma once

#include <oneapi/tbb/spin_mutex.h>

#include <cstdint>
#include <deque>
#include <exception>
#include <vector>

#include "ferry/detail/any_value.hpp"
#include "tsan.hpp"

namespace ferry::detail {

enum class msg_kind : std::uint8_t {
    value,  ///< carries an element
    gap,    ///< an element that was filtered or skipped: keeps its sequence slot
    error,  ///< a stage failed under `fail`: carries the stage_error to the consumer
    end,    ///< end of the epoch; `seq` is the number of messages before it in this seq space
};

/// One element in flight with its bookkeeping. Boxes are owned by a `box_pool`; TBB messages are
/// plain `box*` (TBB requires copyable messages; a pointer is, and a cancelled graph that drops
/// messages leaks nothing because the pool still owns the box).
struct box {
    any_value value;
    std::vector<any_value> children;  ///< flat_map outputs on their way to renumbering
    std::exception_ptr error;
    std::uint64_t seq = 0;           ///< position in the current sequence space
    std::uint64_t source_index = 0;  ///< first source item (within its epoch) it stands for
    std::uint64_t items = 0;         ///< source items it stands for (0 once accounted)
    std::uint64_t credits = 0;       ///< in-flight limiter tokens to return when it leaves
    msg_kind kind = msg_kind::value;
};

using msg = box*;

/// Owns every box of a pipeline. Acquire/release are short critical sections; `reclaim_all`
/// (only while the graph is idle) returns boxes stranded by a cancelled epoch.
class box_pool {
  public:
    box* acquire() {
        {
            tbb::spin_mutex::scoped_lock lock(mutex_);
            if (!free_.empty()) {
                box* b = free_.back();
                free_.pop_back();
                return b;
            }
            all_.emplace_back();
            return &all_.back();
        }
    }

    void release(box* b) noexcept {
        b->value.reset();
        b->children.clear();
        b->error = nullptr;
        b->items = 0;
        b->credits = 0;
        b->kind = msg_kind::value;
        tbb::spin_mutex::scoped_lock lock(mutex_);
        free_.push_back(b);
    }

    /// Frees every box, destroying whatever values were stranded. Graph must be idle.
    void reclaim_all() noexcept {
        tbb::spin_mutex::scoped_lock lock(mutex_);
        free_.clear();
        for (box& b : all_) {
            tsan_acquire(&b);  // last touched by a worker before the graph went idle
            b.value.reset();
            b.children.clear();
            b.error = nullptr;
            b.items = 0;
            b.credits = 0;
            b.kind = msg_kind::value;
            free_.push_back(&b);
        }
    }

    [[nodiscard]] std::size_t size() const noexcept { return all_.size(); }

  private:
    tbb::spin_mutex mutex_;
    std::deque<box> all_;
    std::vector<box*> free_;
};

}  // namespace ferry::detail
