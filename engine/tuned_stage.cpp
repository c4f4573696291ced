// SPDX-License-Identifier: Apache-2.0
/// \file
/// Stages whose concurrency the tuner moves (`ferry::tuned`). A `function_node`'s concurrency is
/// fixed when it is made, so a tuned stage has none: an admission node (serial, lowest sequence
/// number first) hands each item to `tuned_node::accept` (call_nodes.hpp), which starts its call
/// when fewer than the stage's `limit` run and queues it otherwise; a call that ends starts the
/// next queued one while the count is under the limit. A raised limit starts queued calls at
/// once; a lowered one takes effect as calls end. Compute calls run as tasks on the pipeline's
/// arena, I/O calls on the stage's own threads (as many as the range's top, idle until the limit
/// lets them work). The gate is the node's `call_gate` (call_gate.hpp), as a map_async stage's is
/// (async_stage.cpp): `gated_node::set_limit` moves the limit of either and starts their queued
/// calls.

#include "call_nodes.hpp"
#include "flow.hpp"

namespace ferry::detail {
namespace {

/// An epoch being cancelled drains a tuned stage's queue whatever the limit (each call is then
/// dropped when it starts), so that waiting for the graph never waits on a queued item.
call_gate<msg>::admit drain_if(bool cancelling) noexcept {
    return cancelling ? call_gate<msg>::past_limit : call_gate<msg>::within_limit;
}

}  // namespace

void tuned_node::accept(msg m, gateway& gw, const shard_writer& w) {
    w.add(&counter_shard::arrived);
    if (m->kind != msg_kind::value) {
        host_.pass_on(st_, m, gw, w);
        return;
    }
    gw.reserve_wait();  // released when the call's result has been passed on
    tsan_release(m);
    if (calls_.try_enter(m, drain_if(host_.cancelling()))) launch_call(m);
}

void tuned_node::launch_call(msg m) {
    auto job = [this, m] {
        tsan_acquire(m);
        stage_runtime& st = st_;
        // The thread's own shard: an I/O thread's, or the arena slot's.
        const shard_writer w =
            st.io ? st.counters.owned(io_pool::current_index()) : st.counters.owned();
        host_.run_stage(st, m, w);
        gateway& gw = *gw_;
        tsan_send(gw, m);
        call_ended();
        gw.release_wait();
    };
    host_.launch(st_, std::move(job));
}

void tuned_node::call_ended() {
    if (const auto next = calls_.leave(drain_if(host_.cancelling()))) launch_call(*next);
}

}  // namespace ferry::detail
