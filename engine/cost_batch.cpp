// SPDX-License-Identifier: Apache-2.0
/// \file
/// batch_by: a window of `buffer` elements gathered in input order, grouped by cost
/// (cost_groups.hpp), and sent out as the window's batches through the expansion that flat_map
/// uses. The window is one box from its first element's start to its last's end, and batch i of
/// it gets the points start + [i] and start + [i + 1], so a state names the window's first
/// element and the batches of it delivered; a resumed run gathers the same window again and
/// skips those. With drop_last a full window is held until the next element comes (it was not
/// the last) or the epoch ends (it was: its open buckets are left out), so the plan keeps room
/// in flight for one element more. Runs in the stage's serial renumbering node: nothing here is
/// shared.

#include <algorithm>
#include <cmath>
#include <string>

#include "call_hook.hpp"
#include "cost_groups.hpp"
#include "renumber_node.hpp"
#include "runtime.hpp"

namespace ferry::detail {

void renumber_node::take_costed(msg m, const shard_writer& w) {
    w.add(&counter_shard::in);
    double cost = 0;
    try {
        cost = st_.spec.cost_fn(m->value);
        if (!std::isfinite(cost) || cost < 0) {
            throw invalid_argument("batch_by: the cost function returned " + std::to_string(cost) +
                                   "; a cost must be a finite number >= 0");
        }
    } catch (...) {
        host_.fail_item(st_, m, std::current_exception());
        if (m->kind == msg_kind::gap) {
            host_.retire_gap(m);
        } else {
            emit(m);
        }
        return;
    }
    // drop_last: a full window waits for the next element, which says it is not the epoch's
    // last; the end (renumber.cpp) sends it out with its open buckets left out instead. Without
    // drop_last a window goes out as soon as it is full.
    if (items_.size() == st_.spec.batch_size) emit_window(w, false);
    items_.push_back(m);
    costs_.push_back(cost);
    if (!st_.spec.drop_last && items_.size() == st_.spec.batch_size) emit_window(w, false);
}

void renumber_node::flush_window(const shard_writer& w) {
    emit_window(w, true);
}

void renumber_node::emit_window(const shard_writer& w, bool at_end) {
    call_hook hook(w, span_log::no_item, call_hook::timing::detached);
    const auto t0 = hook.start();
    w.active(1);
    auto& items = items_;
    auto& costs = costs_;
    const cost_grouping groups = group_by_cost(costs, st_.spec.cost_bounds, st_.spec.max_cost);
    if (groups.oversized > 0) st_.counters.named.add("oversized batches", groups.oversized);
    // drop_last: at the epoch's end, the buckets the cost rule did not close are left out.
    std::vector<bool> dropped(items.size(), false);
    const bool drop_open = at_end && st_.spec.drop_last;
    if (drop_open) {
        for (std::size_t g = 0; g < groups.batches.size(); ++g) {
            if (groups.closed[g]) continue;
            for (const std::size_t i : groups.batches[g]) dropped[i] = true;
        }
    }
    // Each kept batch's items' positions, for the state's window (resume_state::lists_window).
    std::vector<std::vector<std::uint64_t>> positions;
    if (st_.lists_window) {
        for (std::size_t g = 0; g < groups.batches.size(); ++g) {
            if (drop_open && !groups.closed[g]) continue;
            auto& p = positions.emplace_back();
            for (const std::size_t i : groups.batches[g]) p.push_back(items[i]->source_index);
        }
    }
    msg first = items.front();
    // The window resumes from its first element's start; its last batch ends at its last's end.
    first->set_end(items.back()->end());
    std::vector<any_value> values(items.size());
    std::uint64_t kept = 0;
    std::uint64_t credits = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
        msg b = items[i];
        if (w.traced()) w.link(t0, b->source_index);  // the item's flow ends in its window
        if (dropped[i]) host_.count_filtered(b, w);
        kept += b->items;
        credits += b->credits;
        values[i] = std::move(b->value);
        if (b != first) {
            b->items = 0;  // the window's box carries them
            host_.release_box(b);
        }
    }
    items.clear();
    // The window's first box carries the accounting and credits of all its elements.
    first->items = kept;
    first->credits = credits;
    first->children.clear();
    double cost = 0;
    double padded = 0;
    try {
        for (std::size_t g = 0; g < groups.batches.size(); ++g) {
            if (drop_open && !groups.closed[g]) continue;
            std::vector<any_value> part;
            part.reserve(groups.batches[g].size());
            double largest = 0;
            for (const std::size_t i : groups.batches[g]) {
                part.push_back(std::move(values[i]));
                cost += costs[i];
                largest = std::max(largest, costs[i]);
            }
            padded += largest * static_cast<double>(part.size());
            st_.spec.pack_fn(part, first->children.emplace_back());
        }
    } catch (...) {
        host_.fail_item(st_, first, std::current_exception());
    }
    costs.clear();
    st_.counters.cost.store(st_.counters.cost.load(std::memory_order_relaxed) + cost,
                            std::memory_order_relaxed);
    st_.counters.padded_cost.store(
        st_.counters.padded_cost.load(std::memory_order_relaxed) + padded,
        std::memory_order_relaxed);
    hook.end();
    w.active(-1);
    if (first->kind == msg_kind::error) {
        emit(first);
        return;
    }
    if (first->kind == msg_kind::gap || first->children.empty()) {
        host_.retire_gap(first);
        return;
    }
    const std::size_t before = outs_.size();
    expand(first, w);
    // The batches sent out are the window's last ones (a resumed window skips its first).
    if (st_.lists_window) {
        const std::size_t sent = outs_.size() - before;
        for (std::size_t i = 0; i < sent; ++i) {
            outs_[before + i]->covers.mut() = std::move(positions[positions.size() - sent + i]);
        }
    }
}

}  // namespace ferry::detail
