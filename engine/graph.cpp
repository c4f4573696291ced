// SPDX-License-Identifier: Apache-2.0
/// \file
/// The flow graph: the one file that makes `flow::` nodes and their edges, and each stage's own
/// node state (`make_nodes`), both by the stage's kind. Each node's body hands its message to the
/// job's own file (source.cpp, stage.cpp, renumber.cpp, ...).

#include <cassert>

#include "call_nodes.hpp"
#include "flow.hpp"
#include "renumber_node.hpp"
#include "route_node.hpp"

namespace ferry::detail {
namespace {

/// priority_queue_node's order: it hands out the greatest element first, so "greater" here is
/// the lower sequence number.
struct later_seq {
    bool operator()(const msg& a, const msg& b) const noexcept { return a->seq > b->seq; }
};

/// The node make_nodes made for `st` as the type it made it (the same switch on the kind).
template <class N>
N& graph_node_of(const std::unique_ptr<stage_node>& n) {
    assert(dynamic_cast<N*>(n.get()) != nullptr);
    return static_cast<N&>(*n);
}

}  // namespace

void pipeline_runtime::make_nodes() {
    const stage_host host(*this);
    const auto renumbering = [&](stage_runtime& st, renumber_node::rule rule) {
        return std::make_unique<renumber_node>(host, st, rule);
    };
    for (auto& st : stages_) {
        switch (st.spec.kind) {
            case stage_kind::map:
            case stage_kind::filter:
            case stage_kind::flat_map:
                if (st.tuned) {
                    auto node = std::make_unique<tuned_node>(host, st);
                    st.gate = node.get();
                    st.node = std::move(node);
                } else if (st.timed) {
                    st.node = std::make_unique<timed_node>(host, st);
                }
                // flat_map: its outputs go out through a renumbering node.
                if (st.spec.kind == stage_kind::flat_map) {
                    st.expansion = renumbering(st, {&renumber_node::expand, nullptr});
                }
                break;
            case stage_kind::map_async: {
                auto node = std::make_unique<async_node>(host, st);
                st.gate = node.get();
                st.node = std::move(node);
                break;
            }
            case stage_kind::batch:
                st.node =
                    renumbering(st, {&renumber_node::take_batched, &renumber_node::flush_batch});
                break;
            case stage_kind::unbatch:
                st.node = renumbering(st, {&renumber_node::take_unbatched, nullptr});
                break;
            case stage_kind::batch_by:
                st.node =
                    renumbering(st, {&renumber_node::take_costed, &renumber_node::flush_window});
                break;
            case stage_kind::route:
                st.node = std::make_unique<route_node>(host, st);
                st.sends = std::make_unique<route_sends>(st.branches);
                break;
        }
        st.each_node([this](const stage_node& n) { timed_ = timed_ || n.watched(); });
    }
}

void pipeline_runtime::build_graph() {
    flow_->graph = std::make_unique<flow::graph>();
    flow::graph& g = *flow_->graph;
    flow_->input =
        std::make_unique<flow::input_node<msg>>(g, tsan_body([this](tbb::flow_control& fc) -> msg {
                                                    tsan_acquire(this);
                                                    msg m = nullptr;
                                                    if (!source_pull(m)) fc.stop();
                                                    tsan_release(m);
                                                    return m;
                                                }));
    flow::sender<msg>* tail = flow_->input.get();
    // Whether messages reach the next node (nearly) in sequence order: the source and the
    // renumbering nodes emit in order, a stage of concurrency n reorders by less than n; I/O and
    // async stages can finish far out of order (a preempted I/O thread, a slow request).
    bool in_order = true;

    auto add_renumbering = [&](stage_runtime& st, renumber_node& rn) {
        using node_t = flow::multifunction_node<msg, std::tuple<msg>>;
        auto node = std::make_unique<node_t>(
            g, flow::serial, tsan_body([this, &st, &rn](msg m, node_t::output_ports_type& ports) {
                tsan_receive(this, m);
                const shard_writer w = st.counters.owned();
                std::vector<msg> outs;
                {
                    const tsan_scope state(&rn);
                    if (!st.counted_after) w.add(&counter_shard::arrived);
                    rn.push(m, w);
                    outs.swap(rn.outs());
                }
                for (msg o : outs) {
                    w.add(&counter_shard::emitted);
                    tsan_send(std::get<0>(ports), o);
                }
                // Keep the larger vector for the next call: no allocation per call.
                outs.clear();
                const tsan_scope state(&rn);
                if (rn.outs().capacity() < outs.capacity()) rn.outs().swap(outs);
            }));
        flow::make_edge(*tail, *node);
        tail = &flow::output_port<0>(*node);
        flow_->nodes.push_back(std::move(node));
        in_order = true;
    };

    // I/O, timed and async stages: the node only admits each call (submits it to the stage's
    // threads, the arena or the user's start function) and never waits for one. It admits one
    // message at a time, the lowest sequence number first, so that calls start in input order:
    // with concurrency 1 item 20 is called before item 30 (and its failure budget is spent in
    // that order), whichever arena thread carried which message. The calls end in any order.
    // `accept(m, gw)` admits a message; `gw` (flow.hpp) is the node's way back into the graph.
    auto add_admission = [&](auto accept) -> gateway& {
        gateway& gw = flow_->gateways.emplace_back();
        auto body = tsan_body(
            [accept, &gw](msg m, gateway::tbb_gateway& /*the same, behind gw*/) { accept(m, gw); });
        if (in_order) {
            auto node = std::make_unique<flow::async_node<msg, msg>>(g, flow::serial, body);
            flow::make_edge(*tail, *node);
            tail = &flow::output_port<0>(*node);
            gw.bind(node->gateway());
            flow_->nodes.push_back(std::move(node));
        } else {
            auto queue = std::make_unique<flow::priority_queue_node<msg, later_seq>>(g);
            auto node = std::make_unique<flow::async_node<msg, msg, flow::rejecting>>(
                g, flow::serial, body);
            flow::make_edge(*tail, *queue);
            flow::make_edge(*queue, *node);
            tail = &flow::output_port<0>(*node);
            gw.bind(node->gateway());
            flow_->nodes.push_back(std::move(queue));
            flow_->nodes.push_back(std::move(node));
        }
        in_order = false;
        return gw;
    };

    // The route whose branches are being built: each branch starts at a broadcast node of its
    // own (the route puts an element there) and every branch's last node feeds `rejoin`, which
    // the stage after the route reads, out of order.
    struct open_route {
        int index = -1;
        stage_runtime* st = nullptr;
        std::vector<flow::broadcast_node<msg>*> heads;
        std::vector<flow::sender<msg>*> tails;
        flow::broadcast_node<msg>* rejoin = nullptr;
        std::size_t branch = 0;
        bool in_branch = false;
    };
    open_route rt;
    const auto close_route = [&] {
        if (rt.index < 0) return;
        if (rt.in_branch) rt.tails[rt.branch] = tail;
        for (std::size_t b = 0; b < rt.heads.size(); ++b) {
            flow::make_edge(rt.tails[b] != nullptr ? *rt.tails[b] : *rt.heads[b], *rt.rejoin);
        }
        tail = rt.rejoin;
        in_order = false;
        if (rt.st->rejoins) {
            // The branches renumber: a serial join puts their outputs back in order.
            using node_t = flow::multifunction_node<msg, std::tuple<msg>>;
            route_node& rn = graph_node_of<route_node>(rt.st->node);
            route_sends& sends = *rt.st->sends;
            auto node = std::make_unique<node_t>(
                g, flow::serial,
                tsan_body([this, &rn, &sends](msg m, node_t::output_ports_type& ports) {
                    tsan_receive(this, m);
                    std::vector<msg> outs;
                    {
                        const tsan_scope state(rn.join_state());
                        rn.rejoin(m);
                        outs.swap(rn.joined());
                    }
                    for (msg o : outs) {
                        bump_owned(sends.joined, 1);  // one writer: this serial node
                        tsan_send(std::get<0>(ports), o);
                    }
                    outs.clear();  // kept for the next call: no allocation per call
                    const tsan_scope state(rn.join_state());
                    if (rn.joined().capacity() < outs.capacity()) rn.joined().swap(outs);
                }));
            flow::make_edge(*tail, *node);
            tail = &flow::output_port<0>(*node);
            flow_->nodes.push_back(std::move(node));
            in_order = true;
        }
        rt = open_route{};
    };

    int i = -1;  // st's index in the plan
    for (auto& st : stages_) {
        ++i;
        if (rt.index >= 0 && st.route != rt.index) close_route();
        if (st.route >= 0 && (!rt.in_branch || st.branch != rt.branch)) {
            if (rt.in_branch) rt.tails[rt.branch] = tail;
            rt.branch = st.branch;
            rt.in_branch = true;
            tail = rt.heads[st.branch];
            in_order = true;  // the route hands each branch its elements in order
        }
        switch (st.spec.kind) {
            case stage_kind::map:
            case stage_kind::filter:
            case stage_kind::flat_map: {
                if (st.tuned) {
                    // Concurrency moved at run time: a gate of its own (tuned_stage.cpp).
                    auto& tn = graph_node_of<tuned_node>(st.node);
                    tn.bind(add_admission([this, &st, &tn](msg m, gateway& gw) {
                        tsan_receive(this, m);
                        tn.accept(m, gw, st.counters.owned());
                    }));
                } else if (st.timed) {
                    // A timeout: the calls run apart from their boxes (timed_stage.cpp).
                    auto& tn = graph_node_of<timed_node>(st.node);
                    add_admission([this, &st, &tn](msg m, gateway& gw) {
                        tsan_receive(this, m);
                        tn.accept(m, gw, st.counters.owned());
                    });
                } else if (st.io) {
                    add_admission([this, &st](msg m, gateway& gw) {
                        tsan_receive(this, m);
                        const shard_writer w = st.counters.owned();
                        w.add(&counter_shard::arrived);
                        if (m->kind != msg_kind::value) {
                            pass_on(st, m, gw, w);
                            return;
                        }
                        gw.reserve_wait();
                        launch(st, [this, &st, m, &gw] {
                            // One of the stage's I/O threads: the shard it owns.
                            run_stage(st, m, st.counters.owned(io_pool::current_index()));
                            tsan_send(gw, m);
                            gw.release_wait();
                        });
                    });
                } else {
                    // Input that arrives out of order (after I/O or async stages) waits in a
                    // priority queue, lowest sequence number first, instead of the
                    // function_node's FIFO: an item that a preempted I/O thread delivered late
                    // is taken next, not after everything read meanwhile (with 64 items read
                    // ahead, a late item 2 held up the first batch by ~30 ms on 2 cores).
                    auto body = tsan_body([this, &st](msg m) {
                        tsan_receive(this, m);
                        const shard_writer w = st.counters.owned();
                        w.add(&counter_shard::arrived);
                        run_stage(st, m, w);
                        tsan_release(m);
                        return m;
                    });
                    const auto concurrency = static_cast<std::size_t>(st.concurrency);
                    if (in_order && st.concurrency >= plan_.threads) {
                        // The arena's threads bound the calls before the stage's concurrency
                        // does: the node needs no gate of its own (`unlimited` skips TBB's
                        // aggregator, a lock-free queue and counter per message and per call
                        // that cost a third of the graph's own time per item in
                        // perf/engine_overhead). The one way a thread could run two calls at
                        // once, a call that waits for TBB work of its own (a nested
                        // parallel_for) taking up the next item's call meanwhile, is closed by
                        // isolating each call: while it waits it runs only its own work. So at
                        // most min(concurrency, threads) calls run at once, as with a gate.
                        auto node = std::make_unique<flow::function_node<msg, msg>>(
                            g, flow::unlimited, tsan_body([this, &st](msg m) {
                                tsan_receive(this, m);
                                const shard_writer w = st.counters.owned();
                                w.add(&counter_shard::arrived);
                                tbb::this_task_arena::isolate([&] { run_stage(st, m, w); });
                                tsan_release(m);
                                return m;
                            }));
                        flow::make_edge(*tail, *node);
                        tail = node.get();
                        flow_->nodes.push_back(std::move(node));
                    } else if (in_order) {
                        // FIFO is sequence order here; the predecessor may not hold a message
                        // back (a multifunction_node port drops what is rejected): queueing.
                        auto node =
                            std::make_unique<flow::function_node<msg, msg>>(g, concurrency, body);
                        flow::make_edge(*tail, *node);
                        tail = node.get();
                        flow_->nodes.push_back(std::move(node));
                    } else {
                        // The queue holds what the rejecting node cannot take yet; the node
                        // pulls the lowest sequence number whenever a slot frees up.
                        auto queue = std::make_unique<flow::priority_queue_node<msg, later_seq>>(g);
                        auto node =
                            std::make_unique<flow::function_node<msg, msg, flow::rejecting>>(
                                g, concurrency, body);
                        flow::make_edge(*tail, *queue);
                        flow::make_edge(*queue, *node);
                        tail = node.get();
                        flow_->nodes.push_back(std::move(queue));
                        flow_->nodes.push_back(std::move(node));
                    }
                }
                // flat_map: its outputs go out through a renumbering node.
                if (st.spec.kind == stage_kind::flat_map) {
                    add_renumbering(st, graph_node_of<renumber_node>(st.expansion));
                }
                break;
            }
            case stage_kind::map_async: {
                auto& an = graph_node_of<async_node>(st.node);
                an.bind(add_admission([this, &st, &an](msg m, gateway& gw) {
                    tsan_receive(this, m);
                    an.accept(m, gw, st.counters.owned());
                }));
                break;
            }
            case stage_kind::batch:
            case stage_kind::unbatch:
            case stage_kind::batch_by:
                add_renumbering(st, graph_node_of<renumber_node>(st.node));
                break;
            case stage_kind::route: {
                rt.index = i;
                rt.st = &st;
                for (std::size_t b = 0; b < st.branches; ++b) {
                    auto head = std::make_unique<flow::broadcast_node<msg>>(g);
                    rt.heads.push_back(head.get());
                    flow_->nodes.push_back(std::move(head));
                }
                rt.tails.assign(st.branches, nullptr);
                auto rejoin = std::make_unique<flow::broadcast_node<msg>>(g);
                rt.rejoin = rejoin.get();
                flow_->nodes.push_back(std::move(rejoin));
                // Serial: elements go down their branches in the order they came.
                auto& rn = graph_node_of<route_node>(st.node);
                route_sends& sends = *st.sends;
                auto node = std::make_unique<flow::function_node<msg, flow::continue_msg>>(
                    g, flow::serial,
                    tsan_body(
                        [this, &st, &rn, &sends, heads = rt.heads, rejoin = rt.rejoin](msg m) {
                            tsan_receive(this, m);
                            const shard_writer w = st.counters.owned();
                            w.add(&counter_shard::arrived);
                            if (st.rejoins) {
                                // Branches that renumber: in order, numbered per branch.
                                std::vector<std::pair<std::uint32_t, msg>> routed;
                                {
                                    const tsan_scope state(&rn);
                                    rn.route_numbered(m, w);
                                    routed.swap(rn.routed());
                                }
                                for (auto [b, x] : routed) {
                                    // Counted before it goes: the monitor's queues (monitor.cpp).
                                    if (b == no_route_branch) {
                                        bump_owned(sends.straight, 1);
                                        tsan_send(*rejoin, x);
                                    } else {
                                        bump_owned(sends.to_branch[b], 1);
                                        tsan_send(*heads[b], x);
                                    }
                                }
                                routed.clear();
                                const tsan_scope state(&rn);
                                if (rn.routed().capacity() < routed.capacity()) {
                                    rn.routed().swap(routed);
                                }
                                return flow::continue_msg();
                            }
                            const std::size_t b = rn.route_item(m, w);
                            w.add(&counter_shard::emitted);
                            // Gaps, failures and the epoch's end go straight to the join.
                            if (b < heads.size()) {
                                bump_owned(sends.to_branch[b], 1);
                                tsan_send(*heads[b], m);
                            } else {
                                bump_owned(sends.straight, 1);
                                tsan_send(*rejoin, m);
                            }
                            return flow::continue_msg();
                        }));
                flow::make_edge(*tail, *node);
                flow_->nodes.push_back(std::move(node));
                break;
            }
        }
    }
    close_route();

    // The output: one body at a time (the sequencer, the hand-off's one producer), run by the
    // thread that brings a message where no other runs it, without a task or TBB's gate per
    // message (serial_combiner.hpp); `lightweight` calls the node's body on the sender's thread.
    using out_t = flow::function_node<msg, flow::continue_msg, flow::lightweight>;
    auto out = std::make_unique<out_t>(
        g, flow::unlimited, tsan_body([this](msg m) noexcept {
            flow_->output.run(m, [this](msg x) noexcept {
                tsan_receive(this, x);
                const tsan_scope order(output_seq_.get());
                const tsan_scope producer(con_.out());  // the hand-off's producer-side state
                output_seq_->push(x, [this](msg y) {
                    if (y->kind == msg_kind::gap) {
                        retire_gap(y);
                    } else {
                        deliver(y);
                    }
                });
            });
            return flow::continue_msg();
        }));
    flow::make_edge(*tail, *out);
    flow_->nodes.push_back(std::move(out));
}

void pipeline_runtime::activate_source() {
    flow_->input->activate();
}

}  // namespace ferry::detail
