// SPDX-License-Identifier: Apache-2.0
/// \file
/// route: the branch each element takes. The route node (graph.cpp) is serial and puts each
/// element into its branch's first node. Branches of map, filter and map_async only: an element
/// keeps its sequence number and its resume points down any branch, and the nodes after the join
/// restore the order and the state as they would after a map. A branch that expands (flat_map,
/// unbatch) starts sequence spaces of its own: such a route takes its input in order, numbers
/// each branch's elements apart, and its join (rejoin.cpp) puts the outputs back in order.

#include <string>
#include <utility>

#include "call_hook.hpp"
#include "runtime.hpp"

namespace ferry::detail {

std::size_t pipeline_runtime::route_item(stage_runtime& st, msg m, const shard_writer& w) {
    if (m->kind != msg_kind::value) return no_branch;
    if (should_drop(m)) {
        drop_unprocessed(m);
        return no_branch;
    }
    w.add(&counter_shard::in);
    call_hook hook(w, span_log::no_item, call_hook::timing::detached);
    std::int64_t b = 0;
    try {
        b = st.spec.select_fn(m->value);
        if (b < 0 || static_cast<std::uint64_t>(b) >= st.branches) {
            throw invalid_argument("route: the selector returned branch " + std::to_string(b) +
                                   "; this route's branches are 0 to " +
                                   std::to_string(st.branches - 1));
        }
    } catch (...) {
        hook.end();
        fail_item(st, m, std::current_exception());
        return no_branch;
    }
    hook.end();
    w.add(&counter_shard::out);
    return static_cast<std::size_t>(b);
}

void pipeline_runtime::route_numbered(stage_runtime& st, msg m, const shard_writer& w) {
    st.renum.seq->push(m, [this, &st, &w](msg x) {
        auto& rj = st.rejoin;
        x->route_seq = x->seq;
        x->last_of_route = true;
        x->route_branch = no_route_branch;
        if (x->kind == msg_kind::end) {
            // Every branch ends too (its renumbering nodes start their next epoch); the join
            // ends the epoch once the route's end and every branch's have come.
            for (std::size_t b = 0; b < st.branches; ++b) {
                box* e = pool_.acquire();
                e->kind = msg_kind::end;
                e->seq = std::exchange(rj.branch_seq[b], 0);
                e->route_branch = static_cast<std::uint32_t>(b);
                rj.routed.emplace_back(e->route_branch, e);
            }
            rj.routed.emplace_back(no_route_branch, x);
            w.add(&counter_shard::emitted);
            return;
        }
        const std::size_t b = route_item(st, x, w);
        w.add(&counter_shard::emitted);
        if (b != no_branch) {
            x->route_branch = static_cast<std::uint32_t>(b);
            x->seq = rj.branch_seq[b]++;
        }
        rj.routed.emplace_back(x->route_branch, x);
    });
}

}  // namespace ferry::detail
