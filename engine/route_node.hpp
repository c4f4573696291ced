// SPDX-License-Identifier: Apache-2.0
/// \file
/// route_node: a route's state and bodies: the branch each element takes (route.cpp) and, when
/// a branch expands, the numbering per branch and the join that puts the outputs back in order
/// (rejoin.cpp). No TBB's flow graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "box.hpp"
#include "counters.hpp"
#include "sequencer.hpp"
#include "stage_host.hpp"
#include "stage_runtime.hpp"

namespace ferry::detail {

/// A route: its serial node picks each element's branch; a route that rejoins
/// (`stage_plan::rejoins`) also takes its input in order, numbers each branch's elements apart,
/// and its join's serial node puts their outputs back in the route's input order.
class route_node final : public stage_node {
  public:
    /// `route_item`'s answer for what goes straight to the join (a gap, a failure, the epoch's
    /// end, or an element that failed here).
    static constexpr std::size_t no_branch = ~std::size_t{0};

    route_node(stage_host host, stage_runtime& st);

    /// The branch `m` takes, or `no_branch`.
    std::size_t route_item(msg m, const shard_writer& w);
    /// A route that rejoins: takes `m` in order, numbers each element in its branch and lists
    /// what goes where in `routed()` (the epoch's end goes down every branch too).
    void route_numbered(msg m, const shard_writer& w);
    /// What the last `route_numbered` sends on: (branch or `no_route_branch`, message).
    [[nodiscard]] std::vector<std::pair<std::uint32_t, msg>>& routed() noexcept { return routed_; }

    /// A rejoining route's join: takes `m` from a branch or straight from the route and lists in
    /// `joined()` the outputs now due, in the route's input order, numbered anew.
    void rejoin(msg m);
    [[nodiscard]] std::vector<msg>& joined() noexcept { return join_.outs; }
    /// The join's state, which its own serial node touches (TSan's annotations name it).
    [[nodiscard]] const void* join_state() const noexcept { return &join_; }

    void forget_epoch() noexcept override;

  private:
    /// The join's node's state (rejoin.cpp).
    struct join_state_t {
        std::vector<std::unique_ptr<sequencer>> seqs;  ///< each branch's outputs in its order
        std::vector<std::deque<msg>> ready;            ///< each branch's outputs, in its order
        std::map<std::uint64_t, msg> straight;  ///< what came straight from the route, by seq
        std::uint64_t next_in = 0;              ///< the route seq whose outputs come next
        std::uint64_t next_out = 0;
        std::size_t ended = 0;  ///< branches whose end arrived this epoch
        std::vector<msg> outs;
    };

    stage_host host_;
    stage_runtime& st_;
    // The route's node.
    std::unique_ptr<sequencer> seq_;         ///< a route that rejoins: its input in order
    std::vector<std::uint64_t> branch_seq_;  ///< the next sequence number in each branch
    std::vector<std::pair<std::uint32_t, msg>> routed_;
    join_state_t join_;
};

}  // namespace ferry::detail
