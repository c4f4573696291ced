// SPDX-License-Identifier: Apache-2.0
/// \file
/// route: the branch each element takes. The route node (graph.cpp) is serial and puts each
/// element into its branch's first node. Branches of map, filter and map_async only: an element
/// keeps its sequence number and its resume points down any branch, and the nodes after the join
/// restore the order and the state as they would after a map. A branch that expands (flat_map,
/// unbatch) starts sequence spaces of its own: such a route takes its input in order, numbers
/// each branch's elements apart, and its join (rejoin.cpp) puts the outputs back in order.

#include <algorithm>
#include <string>
#include <utility>

#include "route_node.hpp"

#include "call_hook.hpp"
#include "runtime.hpp"

namespace ferry::detail {

route_node::route_node(stage_host host, stage_runtime& st) : host_(host), st_(st) {
    if (!st.rejoins) return;
    seq_ = std::make_unique<sequencer>(true);
    branch_seq_.assign(st.branches, 0);
    join_.ready.resize(st.branches);
    for (std::size_t b = 0; b < st.branches; ++b) {
        join_.seqs.push_back(std::make_unique<sequencer>(true));
    }
}

void route_node::forget_epoch() noexcept {
    // What the route's and the join's serial nodes' last calls wrote.
    tsan_acquire(this);
    tsan_acquire(&join_);
    if (seq_) seq_->clear();
    std::fill(branch_seq_.begin(), branch_seq_.end(), 0);
    routed_.clear();
    for (auto& s : join_.seqs) s->clear();
    for (auto& r : join_.ready) r.clear();
    join_.straight.clear();
    join_.next_in = 0;
    join_.next_out = 0;
    join_.ended = 0;
    join_.outs.clear();
}

std::size_t route_node::route_item(msg m, const shard_writer& w) {
    if (m->kind != msg_kind::value) return no_branch;
    if (host_.should_drop(m)) {
        host_.drop_unprocessed(m);
        return no_branch;
    }
    w.add(&counter_shard::in);
    call_hook hook(w, span_log::no_item, call_hook::timing::detached);
    std::int64_t b = 0;
    try {
        b = st_.spec.select_fn(m->value);
        if (b < 0 || static_cast<std::uint64_t>(b) >= st_.branches) {
            throw invalid_argument("route: the selector returned branch " + std::to_string(b) +
                                   "; this route's branches are 0 to " +
                                   std::to_string(st_.branches - 1));
        }
    } catch (...) {
        hook.end();
        host_.fail_item(st_, m, std::current_exception());
        return no_branch;
    }
    hook.end();
    w.add(&counter_shard::out);
    return static_cast<std::size_t>(b);
}

void route_node::route_numbered(msg m, const shard_writer& w) {
    seq_->push(m, [this, &w](msg x) {
        x->route_seq = x->seq;
        x->last_of_route = true;
        x->route_branch = no_route_branch;
        if (x->kind == msg_kind::end) {
            // Every branch ends too (its renumbering nodes start their next epoch); the join
            // ends the epoch once the route's end and every branch's have come.
            for (std::size_t b = 0; b < st_.branches; ++b) {
                box* e = host_.acquire_box();
                e->kind = msg_kind::end;
                e->seq = std::exchange(branch_seq_[b], 0);
                e->route_branch = static_cast<std::uint32_t>(b);
                routed_.emplace_back(e->route_branch, e);
            }
            routed_.emplace_back(no_route_branch, x);
            w.add(&counter_shard::emitted);
            return;
        }
        const std::size_t b = route_item(x, w);
        w.add(&counter_shard::emitted);
        if (b != no_branch) {
            x->route_branch = static_cast<std::uint32_t>(b);
            x->seq = branch_seq_[b]++;
        }
        routed_.emplace_back(x->route_branch, x);
    });
}

}  // namespace ferry::detail
