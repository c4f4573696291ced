// SPDX-License-Identifier: Apache-2.0
/// \file
/// stage_runtime: what one stage holds at run time (its plan, counters, gate, renumbering and
/// route state), and the parts of it that some kinds use. No TBB's flow graph.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "box.hpp"
#include "call_gate.hpp"
#include "counters.hpp"
#include "deadlines.hpp"
#include "failure_recorder.hpp"
#include "io_pool.hpp"
#include "plan.hpp"
#include "sequencer.hpp"

namespace ferry::detail {

class gateway;      // flow.hpp: an async node's way back into the graph
struct timed_item;  // timed_stage.cpp

/// A stage's calls that hold a slot or wait for one, each kind behind its `call_gate`
/// (call_gate.hpp, its own lock): map_async and tuned stages gate their messages, a timed compute
/// stage its `timed_item`s.
struct call_slots {
    explicit call_slots(int limit) : calls(limit), timed(limit) {}

    /// map_async and tuned stages: the limit is the concurrency, or a tuned stage's now (the
    /// tuner moves it: set_limit).
    call_gate<msg> calls;
    /// A timed compute stage (timed_stage.cpp): its items waiting for a slot, `concurrency` at
    /// once.
    call_gate<std::shared_ptr<timed_item>> timed;
    /// A stage with a timeout: its items not yet passed on (for an abort), under `mutex`.
    std::mutex mutex;
    std::list<std::shared_ptr<timed_item>> timed_items;

    /// Forgets an abandoned epoch's calls (reclaim_epoch_locked, with nothing running).
    void clear() noexcept {
        calls.clear();
        timed.clear();
        const std::lock_guard lock(mutex);
        timed_items.clear();
    }
};

/// A renumbering stage's state (renumber.cpp), touched only by its serial node.
struct renumber_state {
    std::unique_ptr<sequencer> seq;
    std::vector<msg> batch_items;
    std::vector<double> batch_costs;  ///< batch_by: the cost of each of batch_items
    std::vector<msg> outs;
    std::uint64_t next_out = 0;
};

/// A route whose branches expand: how it numbers each branch's elements (its serial node) and
/// how its join puts their outputs back in order (the join's serial node; rejoin.cpp).
struct rejoin_state {
    // The route's node.
    std::vector<std::uint64_t> branch_seq;  ///< the next sequence number in each branch
    /// What the route's node sends on: (branch or `no_route_branch`, message).
    std::vector<std::pair<std::uint32_t, msg>> routed;
    // The join's node.
    std::vector<std::unique_ptr<sequencer>> seqs;  ///< each branch's outputs back in its order
    std::vector<std::deque<msg>> ready;            ///< each branch's outputs, in its order
    std::map<std::uint64_t, msg> straight;  ///< what came straight from the route, by route seq
    std::uint64_t next_in = 0;              ///< the route seq whose outputs come next
    std::uint64_t next_out = 0;
    std::size_t ended = 0;  ///< branches whose end arrived this epoch
    std::vector<msg> outs;

    /// Forgets the epoch (after a cancelled one; the pool reclaims the boxes).
    void clear() noexcept {
        std::fill(branch_seq.begin(), branch_seq.end(), 0);
        routed.clear();
        for (auto& s : seqs) s->clear();
        for (auto& r : ready) r.clear();
        straight.clear();
        next_in = 0;
        next_out = 0;
        ended = 0;
        outs.clear();
    }
};

/// A route's messages by where they went, for the monitor's count of what waits in front of a
/// branch's first stage and of the stage after the join (monitor.cpp). The route's serial node
/// writes `to_branch` and `straight`, its join's serial node `joined`; the monitor reads them.
struct route_sends {
    std::unique_ptr<std::atomic<std::uint64_t>[]> to_branch;  ///< into each branch's head
    std::atomic<std::uint64_t> straight{0};                   ///< straight to the join
    std::atomic<std::uint64_t> joined{0};  ///< a rejoining route: what its serial join passed on
};

struct stage_runtime;

/// Where a stage's input comes from: what the monitor counts as sent toward it (monitor.cpp).
struct stage_feed {
    /// After the source or a stage of its own line (`previous`, null: the source); a branch's
    /// first stage (`route`, `branch`); the first stage after a route's join (`route`).
    enum class from : std::uint8_t { previous, branch_head, join } kind = from::previous;
    const stage_runtime* previous = nullptr;
    const stage_runtime* route = nullptr;
    std::size_t branch = 0;
};

/// Everything one stage needs at run time: its plan, its counters, and the state of its kind.
struct stage_runtime : stage_plan {
    explicit stage_runtime(stage_plan p)
        : stage_plan(std::move(p)), slots(concurrency), budget(spec.options) {}

    stage_counters counters;
    std::unique_ptr<io_pool> pool;  ///< executor = io
    gateway* gw = nullptr;          ///< map_async

    /// The deadlines of its calls in progress (timed_stage.cpp); null without a timeout.
    std::unique_ptr<deadline_list> deadlines;
    call_slots slots;       ///< map_async, tuned and timed stages: calls in progress and waiting
    failure_budget budget;  ///< the skip budgets of `max_failures` and the rate
    renumber_state renum;   ///< batch, unbatch, flat_map: touched only by its serial node
    /// A route that rejoins (`stage_plan::rejoins`): `renum.seq` puts its input in order.
    rejoin_state rejoin;
    /// The calls it may run at once now: a tuned stage's moves (the tuner's set_limit).
    [[nodiscard]] int limit() const noexcept { return slots.calls.limit(); }
    /// batch_by, the first stage to renumber: its batches list their items' positions
    /// (resume_state::lists_window).
    bool lists_window = false;
    /// Where its input comes from (link_feeds), and a route's messages by where they went.
    stage_feed feed;
    route_sends sends;
    /// Messages sent toward it that abandoned epochs dropped before they arrived (counted when
    /// the epoch is reclaimed): the monitor's queue leaves them out. The monitor reads it.
    std::atomic<std::int64_t> lost{0};
    /// A route: its branches' last stages (null for an empty branch), whose outputs the join
    /// takes. Set by link_feeds.
    std::vector<const stage_runtime*> branch_tails;
};

}  // namespace ferry::detail
