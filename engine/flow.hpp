// SPDX-License-Identifier: Apache-2.0
/// \file
/// The TBB side of a pipeline_runtime: its arena, its flow graph and the gateways of its async
/// nodes. Only the files that build the graph or hand messages back into it include this header
/// (graph.cpp, runtime.cpp, async_stage.cpp, timed_stage.cpp, tuned_stage.cpp), and with it
/// `flow_graph.h`; the rest of the engine sees `flow_parts` and `gateway` as declared in
/// runtime.hpp. It defines `launch` and `pass_on`, the runtime's and stage_host's.
#pragma once

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <deque>
#include <memory>
#include <vector>

#include "runtime.hpp"
#include "serial_combiner.hpp"

namespace ferry::detail {

namespace flow = tbb::flow;

/// An async node's way back into the graph (TBB's gateway, behind a type of ferry's own so that
/// runtime.hpp need not name TBB's): a message put through it leaves the node; reserve_wait /
/// release_wait keep the graph's wait_for_all waiting for a call that has not returned yet.
class gateway {
  public:
    using tbb_gateway = flow::async_node<msg, msg>::gateway_type;

    void bind(tbb_gateway& g) noexcept { g_ = &g; }
    bool try_put(msg m) { return g_->try_put(m); }
    void reserve_wait() { g_->reserve_wait(); }
    void release_wait() { g_->release_wait(); }

  private:
    tbb_gateway* g_ = nullptr;
};

/// The arena the pipeline's work runs in and its flow graph (built by graph.cpp). Reset only with
/// nothing running: construction, an abort's reclaim, destruction.
struct flow_parts {
    bool budget_held = false;  ///< the worker_budget counts the arena's threads
    std::unique_ptr<tbb::task_arena> arena;
    std::unique_ptr<flow::graph> graph;
    std::unique_ptr<flow::input_node<msg>> input;
    std::vector<std::unique_ptr<flow::graph_node>> nodes;
    std::deque<gateway> gateways;  ///< one per async node; stable addresses (stages keep them)
    serial_combiner output;        ///< the output node's one-at-a-time body (graph.cpp)
};

template <class F>
void pipeline_runtime::launch(const stage_runtime& st, F&& job) {
    if (st.io) {
        st.pool->submit(std::forward<F>(job));
    } else {
        flow_->arena->enqueue(tsan_body(std::forward<F>(job)));
    }
}

inline void pipeline_runtime::pass_on(const stage_runtime& st, msg m, gateway& gw,
                                      const shard_writer& w) {
    if (!st.counted_after) w.add(&counter_shard::emitted);
    tsan_send(gw, m);
}

template <class F>
void stage_host::launch(const stage_runtime& st, F&& job) {
    rt_->launch(st, std::forward<F>(job));
}

inline void stage_host::pass_on(const stage_runtime& st, msg m, gateway& gw,
                                const shard_writer& w) {
    rt_->pass_on(st, m, gw, w);
}

}  // namespace ferry::detail
