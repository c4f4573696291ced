// SPDX-License-Identifier: Apache-2.0
/// \file
/// The unit that travels through the flow graph (a pooled `box`) and the pool that owns them all.
#pragma once

#include <oneapi/tbb/spin_mutex.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <string>
#include <vector>

#include "ferry/detail/any_value.hpp"
#include "out_of_line.hpp"
#include "tsan.hpp"

namespace ferry::detail {

enum class msg_kind : std::uint8_t {
    value,  ///< carries an element
    gap,    ///< an element that was filtered or skipped: keeps its sequence slot
    error,  ///< a stage failed under `fail`: carries the stage_error to the consumer
    end,    ///< end of the epoch; `seq` is the number of messages before it in this seq space
};

/// Where a resume would continue (see `ferry::pipeline_state`): a source position, and for an
/// output of flat_map or unbatch stages, how many outputs of the item there to skip at each of
/// them (`depth` of them; more than `max_depth` nested expansions cannot resume).
struct resume_point {
    static constexpr std::uint8_t max_depth = 4;
    static constexpr std::uint8_t too_deep = 0xff;
    std::uint64_t position = 0;
    std::uint32_t children[max_depth] = {};
    std::uint8_t depth = 0;

    /// The point `i` outputs into this one's expansion (one level deeper).
    [[nodiscard]] resume_point child(std::uint64_t i) const noexcept {
        resume_point r = *this;
        if (depth >= max_depth || i > UINT32_MAX) {
            r.depth = too_deep;
        } else {
            r.children[depth] = static_cast<std::uint32_t>(i);
            ++r.depth;
        }
        return r;
    }
};

/// One element in flight with its bookkeeping. Boxes are owned by a `box_pool`; TBB messages are
/// plain `box*` (TBB requires copyable messages; a pointer is, and a cancelled graph that drops
/// messages leaks nothing because the pool still owns the box).
///
/// Laid out for the hand-off to the consumer thread: what the consumer reads (kind, items,
/// credits, the source index its frontier follows from, and the value with the start of its
/// inline storage) shares the box's first cache line, and what only the workers touch lies after
/// the value. Every line the consumer touches moves between cores twice per item (to the
/// consumer, and back when the source reuses the box). Four cache lines: the flags sit in
/// `kind`'s padding, and what few boxes use (the source item's description, an unordered batch's
/// positions) lies out of line.
struct alignas(64) box {
    msg_kind kind = msg_kind::value;
    /// In and after a branch of a route whose branches expand (rejoin.cpp): whether this is the
    /// last message the branch makes of the element, and its branch (`no_route_branch`: it went
    /// straight to the join); the element's sequence number at the route is `route_seq`.
    bool last_of_route = true;
    bool cancelled = false;  ///< dropped unprocessed: not done
    /// The resume points are the ones every source item starts with, `{source_index}` and
    /// `{source_index + 1}`, and are not stored: the source writes none, so its box's last two
    /// cache lines stay where they are (only an expansion, a batch or a window sets them).
    bool plain_points = true;
    std::uint32_t route_branch = 0;
    std::uint64_t items = 0;         ///< source items it stands for (0 once accounted)
    std::uint64_t credits = 0;       ///< in-flight limiter tokens to return when it leaves
    std::uint64_t source_index = 0;  ///< first source item (within its epoch) it stands for
    any_value value;
    std::uint64_t seq = 0;  ///< position in the current sequence space
    std::uint64_t route_seq = 0;
    std::exception_ptr error;         ///< only in a box of kind `error`
    std::vector<any_value> children;  ///< flat_map outputs on their way to renumbering
    /// The source item's description (`failure::input`), for a failure later on: written when the
    /// source pulls it (only from a source that describes its elements; otherwise it is never
    /// allocated), passed to flat_map outputs, a batch's is its first item's.
    out_of_line<std::string> input;
    /// An unordered pipeline's batch: the positions of its items (a single item's is its
    /// `source_index`, not listed).
    out_of_line<std::vector<std::uint64_t>> covers;
    /// Next among the messages left for a serial_combiner's running thread (serial_combiner.hpp).
    box* link = nullptr;

    /// Where a resume continues to deliver this box's output again.
    [[nodiscard]] resume_point start() const noexcept {
        return plain_points ? resume_point{source_index} : start_;
    }
    /// What follows this box's output: the consumer's position once it has taken it.
    [[nodiscard]] resume_point end() const noexcept {
        return plain_points ? resume_point{source_index + 1} : end_;
    }
    void set_start(const resume_point& p) noexcept {
        store_points();
        start_ = p;
    }
    void set_end(const resume_point& p) noexcept {
        store_points();
        end_ = p;
    }
    void set_points(const resume_point& start, const resume_point& end) noexcept {
        start_ = start;
        end_ = end;
        plain_points = false;
    }

  private:
    /// Writes out the implied points before one of them changes.
    void store_points() noexcept {
        if (!plain_points) return;
        start_ = resume_point{source_index};
        end_ = resume_point{source_index + 1};
        plain_points = false;
    }

    resume_point start_;
    resume_point end_;
};
static_assert(sizeof(box) <= 256, "a box is four cache lines: keep rare members out of line");

/// `box::route_branch` of a message the route sends straight to its join.
inline constexpr std::uint32_t no_route_branch = ~std::uint32_t{0};

using msg = box*;

/// Boxes the source takes from the pool, and the consumer gives back, per pool lock.
constexpr std::size_t box_batch = 16;

/// Owns every box of a pipeline. Acquire/release are short critical sections; `reclaim_all`
/// (only while the graph is idle, and with every cache filled by `acquire_bulk` or waiting for
/// `release_bulk` emptied first) returns boxes stranded by a cancelled epoch.
class box_pool {
  public:
    box* acquire() {
        box* b = nullptr;
        {
            tbb::spin_mutex::scoped_lock lock(mutex_);
            if (free_.empty()) return &all_.emplace_back();
            b = free_.back();
            free_.pop_back();
        }
        reset_bookkeeping(b);
        return b;
    }

    void release(box* b) noexcept {
        empty_out(b);
        tbb::spin_mutex::scoped_lock lock(mutex_);
        free_.push_back(b);
    }

    /// Moves up to `n` free boxes (allocating new ones where none are free) onto `cache`: one
    /// lock for many boxes, for a side that takes boxes one at a time (the source).
    void acquire_bulk(std::vector<box*>& cache, std::size_t n) {
        const std::size_t first = cache.size();
        {
            tbb::spin_mutex::scoped_lock lock(mutex_);
            while (n > 0 && !free_.empty()) {
                cache.push_back(free_.back());
                free_.pop_back();
                --n;
            }
            for (; n > 0; --n) cache.push_back(&all_.emplace_back());
        }
        for (std::size_t i = first; i < cache.size(); ++i) reset_bookkeeping(cache[i]);
    }

    /// Destroys what a box holds (value, flat_map children, error) before it goes back to the
    /// pool. The bookkeeping fields are reset when the box is acquired again.
    static void empty_out(box* b) noexcept {
        b->value.reset();
        b->children.clear();
        b->error = nullptr;
    }

    /// `empty_out` for a box that reached the consumer, touching only the box's first cache line
    /// (see `box`): such a box has no children (renumbering moved them out) and an error only if
    /// it is of kind `error`.
    static void empty_out_delivered(box* b) noexcept {
        b->items = 0;  // delivered: accounted for
        b->value.reset();
        if (b->kind == msg_kind::error) b->error = nullptr;
    }

    /// Takes back every box on `cache`, each emptied by `empty_out` (or `empty_out_delivered`),
    /// and empties `cache`: one
    /// lock for many boxes, for a side that frees boxes one at a time (the consumer).
    void release_bulk(std::vector<box*>& cache) noexcept {
        if (cache.empty()) return;
        tbb::spin_mutex::scoped_lock lock(mutex_);
        free_.insert(free_.end(), cache.begin(), cache.end());
        cache.clear();
    }

    /// Frees every box, destroying whatever values were stranded. Graph must be idle. Returns
    /// the source items the stranded boxes stood for (a box whose items were accounted for —
    /// delivered, filtered, failed, cancelled — or merged into a batch holds 0).
    std::uint64_t reclaim_all() noexcept {
        std::uint64_t stranded = 0;
        tbb::spin_mutex::scoped_lock lock(mutex_);
        free_.clear();
        for (box& b : all_) {
            tsan_acquire(&b);  // last touched by a worker before the graph went idle
            stranded += b.items;
            b.value.reset();
            b.children.clear();
            b.error = nullptr;
            b.items = 0;
            b.credits = 0;
            b.kind = msg_kind::value;
            b.cancelled = false;
            b.plain_points = true;
            b.covers.clear();
            free_.push_back(&b);
        }
        return stranded;
    }

    [[nodiscard]] std::size_t size() const noexcept { return all_.size(); }

  private:
    static void reset_bookkeeping(box* b) noexcept {
        b->items = 0;
        b->plain_points = true;
        b->credits = 0;
        b->kind = msg_kind::value;
        b->cancelled = false;
        b->covers.clear();
    }

    tbb::spin_mutex mutex_;
    std::deque<box> all_;
    std::vector<box*> free_;
};

}  // namespace ferry::detail
