// SPDX-License-Identifier: Apache-2.0
/// \file
/// Stages whose concurrency the tuner moves (`ferry::tuned`). A `function_node`'s concurrency is
/// fixed when it is made, so a tuned stage has none: an admission node (serial, lowest sequence
/// number first) hands each item to `tuned_accept`, which starts its call when fewer than the
/// stage's `limit` run and queues it otherwise; a call that ends starts the next queued one while
/// the count is under the limit. A raised limit starts queued calls at once; a lowered one takes
/// effect as calls end. Compute calls run as tasks on the pipeline's arena, I/O calls on the
/// stage's own threads (as many as the range's top, idle until the limit lets them work). The
/// gate is the stage's `call_gate` (call_gate.hpp), which a map_async stage's calls pass too
/// (async_stage.cpp): set_limit moves the limit of either and starts their queued calls.

#include "flow.hpp"

namespace ferry::detail {
namespace {

/// An epoch being cancelled drains a tuned stage's queue whatever the limit (each call is then
/// dropped when it starts), so that waiting for the graph never waits on a queued item.
call_gate<msg>::admit drain_if(bool cancelling) noexcept {
    return cancelling ? call_gate<msg>::past_limit : call_gate<msg>::within_limit;
}

}  // namespace

void pipeline_runtime::tuned_accept(stage_runtime& st, msg m, gateway& gw, const shard_writer& w) {
    w.add(&counter_shard::arrived);
    if (m->kind != msg_kind::value) {
        pass_on(st, m, gw, w);
        return;
    }
    gw.reserve_wait();  // released when the call's result has been passed on
    tsan_release(m);
    if (st.slots.calls.try_enter(m, drain_if(cancelling()))) tuned_launch(st, m);
}

void pipeline_runtime::tuned_launch(stage_runtime& st, msg m) {
    auto job = [this, &st, m] {
        tsan_acquire(m);
        // The thread's own shard: an I/O thread's, or the arena slot's.
        const shard_writer w =
            st.io ? st.counters.owned(io_pool::current_index()) : st.counters.owned();
        run_stage(st, m, w);
        gateway& gw = *st.gw;
        tsan_send(gw, m);
        tuned_call_ended(st);
        gw.release_wait();
    };
    launch(st, std::move(job));
}

void pipeline_runtime::tuned_call_ended(stage_runtime& st) {
    if (const auto next = st.slots.calls.leave(drain_if(cancelling()))) tuned_launch(st, *next);
}

void pipeline_runtime::set_limit(stage_runtime& st, int limit) {
    for (msg m : st.slots.calls.set_limit(limit)) {
        if (st.applies) {
            tuned_launch(st, m);
        } else {
            async_start(st, m, st.counters.shared());  // map_async; the monitor's thread: shared
        }
    }
}

}  // namespace ferry::detail
