// SPDX-License-Identifier: Apache-2.0
/// \file
/// Stages whose concurrency the tuner moves (`ferry::tuned`). A `function_node`'s concurrency is
/// fixed when it is made, so a tuned stage has none: an admission node (serial, lowest sequence
/// number first) hands each item to `tuned_accept`, which starts its call when fewer than the
/// stage's `limit` run and queues it otherwise; a call that ends starts the next queued one while
/// the count is under the limit. A raised limit starts queued calls at once; a lowered one takes
/// effect as calls end. Compute calls run as tasks on the pipeline's arena, I/O calls on the
/// stage's own threads (as many as the range's top, idle until the limit lets them work). A
/// tuned map_async stage keeps its own gate (async_stage.cpp), bounded by `limit` too: set_limit
/// starts its queued calls.

#include "flow.hpp"

namespace ferry::detail {

void pipeline_runtime::tuned_accept(stage_runtime& st, msg m, gateway& gw, const shard_writer& w) {
    w.add(&counter_shard::arrived);
    if (m->kind != msg_kind::value) {
        pass_on(st, m, gw, w);
        return;
    }
    gw.reserve_wait();  // released when the call's result has been passed on
    {
        std::lock_guard lock(st.slots.mutex);
        if (st.slots.running >= st.limit.load(std::memory_order_relaxed) && !cancelling()) {
            tsan_release(m);
            st.slots.waiting.push_back(m);
            return;
        }
        ++st.slots.running;
    }
    tsan_release(m);
    tuned_launch(st, m);
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
    if (st.io) {
        st.pool->submit(std::move(job));
    } else {
        flow_->arena->enqueue(tsan_body(std::move(job)));
    }
}

void pipeline_runtime::tuned_call_ended(stage_runtime& st) {
    msg next = nullptr;
    {
        std::lock_guard lock(st.slots.mutex);
        // An epoch being cancelled drains its queue whatever the limit (each call is dropped).
        if (!st.slots.waiting.empty() &&
            (st.slots.running <= st.limit.load(std::memory_order_relaxed) || cancelling())) {
            next = st.slots.waiting.front();
            st.slots.waiting.pop_front();
        } else {
            --st.slots.running;
        }
    }
    if (next != nullptr) tuned_launch(st, next);
}

void pipeline_runtime::set_limit(stage_runtime& st, int limit) {
    std::vector<msg> start;
    {
        std::lock_guard lock(st.slots.mutex);
        st.limit.store(limit, std::memory_order_relaxed);
        while (st.slots.running < limit && !st.slots.waiting.empty()) {
            start.push_back(st.slots.waiting.front());
            st.slots.waiting.pop_front();
            ++st.slots.running;
        }
    }
    for (msg m : start) {
        if (st.spec.kind == stage_kind::map_async) {
            async_start(st, m, st.counters.shared());  // the monitor's thread: shared counters
        } else {
            tuned_launch(st, m);
        }
    }
}

}  // namespace ferry::detail
