// SPDX-License-Identifier: Apache-2.0
/// \file
/// stage_runtime: what every stage holds at run time (its plan, counters, failure budget, feed),
/// and `stage_node`, the base of each kind's own state. No TBB's flow graph.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "box.hpp"
#include "counters.hpp"
#include "failure_recorder.hpp"
#include "io_pool.hpp"
#include "plan.hpp"

namespace ferry::detail {

struct stage_runtime;
class gated_node;  // call_nodes.hpp

/// A stage kind's own state at run time, beside what every stage has (`stage_runtime`): a
/// renumbering node's (renumber_node.hpp), a route's (route_node.hpp), or the gate of a tuned,
/// timed or map_async stage's calls (call_nodes.hpp). graph.cpp makes each from the plan, the
/// one place that asks a stage's kind; the runtime reaches them only through these calls, none
/// of them per item.
class stage_node {
  public:
    stage_node() = default;
    virtual ~stage_node() = default;
    stage_node(const stage_node&) = delete;
    stage_node& operator=(const stage_node&) = delete;

    /// An abandoned epoch's reclaim, with nothing running: forgets what the epoch left in the
    /// node (its boxes are the pool's to take back).
    virtual void forget_epoch() noexcept = 0;
    /// An abort, before it waits for the graph: lets go of calls that may never return (a timed
    /// stage's), so that the wait does not wait for them.
    virtual void let_go() noexcept {}
    /// The watchdog (the monitor's tick): expires the calls past their deadlines.
    virtual void expire(std::chrono::steady_clock::time_point /*now*/) {}
    /// Whether the watchdog has deadlines to watch here (the monitor then ticks between epochs).
    [[nodiscard]] virtual bool watched() const noexcept { return false; }
};

/// Where a stage's input comes from: what the monitor counts as sent toward it (monitor.cpp).
struct stage_feed {
    /// After the source or a stage of its own line (`previous`, null: the source); a branch's
    /// first stage (`route`, `branch`); the first stage after a route's join (`route`).
    enum class from : std::uint8_t { previous, branch_head, join } kind = from::previous;
    const stage_runtime* previous = nullptr;
    const stage_runtime* route = nullptr;
    std::size_t branch = 0;
};

/// A route's messages by where they went, for the monitor's count of what waits in front of a
/// branch's first stage and of the stage after the join (monitor.cpp). The route's serial node
/// writes `to_branch` and `straight`, its join's serial node `joined`; the monitor reads them.
struct route_sends {
    explicit route_sends(std::size_t branches)
        : to_branch(std::make_unique<std::atomic<std::uint64_t>[]>(branches)),
          tails(branches, nullptr) {}

    std::unique_ptr<std::atomic<std::uint64_t>[]> to_branch;  ///< into each branch's head
    std::atomic<std::uint64_t> straight{0};                   ///< straight to the join
    std::atomic<std::uint64_t> joined{0};  ///< a rejoining route: what its serial join passed on
    /// Its branches' last stages (null for an empty branch), whose outputs the join takes. Set
    /// by link_feeds.
    std::vector<const stage_runtime*> tails;
};

/// Everything one stage needs at run time: what every stage has (its plan, counters, failure
/// budget, feed), and its kind's own state in `node` and `expansion`, made by graph.cpp. A map or
/// filter stage called in the graph's node has neither.
struct stage_runtime : stage_plan {
    explicit stage_runtime(stage_plan p) : stage_plan(std::move(p)), budget(spec.options) {}

    stage_counters counters;
    failure_budget budget;          ///< the skip budgets of `max_failures` and the rate
    std::unique_ptr<io_pool> pool;  ///< executor = io
    /// Where its input comes from (link_feeds).
    stage_feed feed;
    /// Messages sent toward it that abandoned epochs dropped before they arrived (counted when
    /// the epoch is reclaimed): the monitor's queue leaves them out. The monitor reads it.
    std::atomic<std::int64_t> lost{0};
    /// A route: its messages by where they went (the monitor's queues); null otherwise.
    std::unique_ptr<route_sends> sends;
    /// Its kind's gate or state: a tuned, timed or map_async stage's calls (call_nodes.hpp), a
    /// route's (route_node.hpp), a batch, unbatch or batch_by's renumbering (renumber_node.hpp);
    /// null for a map, filter or flat_map called in the graph's node.
    std::unique_ptr<stage_node> node;
    /// flat_map: the renumbering node its outputs go out through (renumber_node.hpp).
    std::unique_ptr<stage_node> expansion;
    /// A tuned or map_async stage: `node`'s gate, whose limit the tuner moves (call_nodes.hpp).
    gated_node* gate = nullptr;

    /// The calls it may run at once now: a tuned stage's moves (the tuner's set_limit). Defined
    /// in call_nodes.hpp, with the gate.
    [[nodiscard]] int limit() const noexcept;
    /// Its nodes, each asked alike (an epoch forgotten, the watchdog, an abort).
    template <class F>
    void each_node(F&& f) const {
        if (node) f(*node);
        if (expansion) f(*expansion);
    }
};

}  // namespace ferry::detail
