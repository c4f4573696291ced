// SPDX-License-Identifier: Apache-2.0
/// \file
/// route: the branch each element takes. The route node (graph.cpp) is serial and puts each
/// element into its branch's first node; branches hold map, filter and map_async stages only, so
/// an element keeps its sequence number and its resume points down any branch, and the nodes
/// after the join restore the order and the state as they would after a map.

#include <string>

#include "runtime.hpp"

namespace ferry::detail {

std::size_t pipeline_runtime::route_item(stage_runtime& st, msg m, const shard_writer& w) {
    if (m->kind != msg_kind::value) return no_branch;
    if (should_drop(m)) {
        drop_unprocessed(m);
        return no_branch;
    }
    w.add(&counter_shard::in);
    const auto t0 = ticks();
    std::int64_t b = 0;
    try {
        b = st.spec.select_fn(m->value);
        if (b < 0 || static_cast<std::uint64_t>(b) >= st.branches) {
            throw invalid_argument("route: the selector returned branch " + std::to_string(b) +
                                   "; this route's branches are 0 to " +
                                   std::to_string(st.branches - 1));
        }
    } catch (...) {
        w.record_call(t0);
        fail_item(st, m, std::current_exception());
        return no_branch;
    }
    w.record_call(t0);
    w.add(&counter_shard::out);
    return static_cast<std::size_t>(b);
}

}  // namespace ferry::detail
