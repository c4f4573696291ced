// SPDX-License-Identifier: Apache-2.0
/// \file
/// renumber_node: a renumbering stage's state and body (batch, unbatch, batch_by's window,
/// flat_map's expansion), run by its serial node behind a sequencer. No TBB's flow graph.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "box.hpp"
#include "counters.hpp"
#include "sequencer.hpp"
#include "stage_host.hpp"
#include "stage_runtime.hpp"

namespace ferry::detail {

/// A renumbering node: puts its input in order (a sequencer: source order, unless unordered),
/// then numbers gaps, errors and the epoch's end on and hands values to its rule; what it emits
/// is listed in `outs` for the graph's node to send. Touched only by its serial node.
class renumber_node final : public stage_node {
  public:
    /// What it does with an element (`take`, in order) and at the epoch's end (`flush`, null:
    /// it holds nothing between elements). graph.cpp picks it by the stage's kind, so that no
    /// body asks the kind.
    struct rule {
        void (renumber_node::*take)(msg, const shard_writer&);
        void (renumber_node::*flush)(const shard_writer&);
    };

    renumber_node(stage_host host, stage_runtime& st, rule r)
        : host_(host), st_(st), rule_(r), seq_(std::make_unique<sequencer>(st.ordered)) {}

    /// The node's body: puts `m` in order and handles what that lets through.
    void push(msg m, const shard_writer& w);
    /// What the last `push` emitted, in order, each numbered anew (the node's body sends them).
    [[nodiscard]] std::vector<msg>& outs() noexcept { return outs_; }

    // The rules (renumber.cpp, cost_batch.cpp).
    /// batch: gathers `m`, and sends the batch out when full.
    void take_batched(msg m, const shard_writer& w);
    /// batch at the epoch's end: the last, short batch, or with drop_last its items filtered.
    void flush_batch(const shard_writer& w);
    /// unbatch: splits `m` into its elements, then expands them like a flat_map's outputs.
    void take_unbatched(msg m, const shard_writer& w);
    /// flat_map's outputs (`m->children`, after its call), an unbatch's or a window's batches:
    /// each its own message, numbered anew, the last in `m`'s box.
    void expand(msg m, const shard_writer& w);
    /// batch_by: takes `m` into the window (its cost checked), grouping the window when full.
    void take_costed(msg m, const shard_writer& w);
    /// batch_by at the epoch's end: the window's last batches (drop_last applies).
    void flush_window(const shard_writer& w);

    void forget_epoch() noexcept override;

  private:
    void emit_batch(const shard_writer& w);
    /// batch_by: groups the window by cost and sends its batches out; `at_end` at the epoch's
    /// end (where drop_last applies).
    void emit_window(const shard_writer& w, bool at_end);
    /// A gap here: retired, or in a branch passed on to the route's join.
    void pass_gap(msg x);
    /// An error or a gap passed on: numbered next.
    void emit(msg x) {
        x->seq = next_out_++;
        outs_.push_back(x);
    }

    stage_host host_;
    stage_runtime& st_;
    rule rule_;
    std::unique_ptr<sequencer> seq_;
    std::vector<msg> items_;     ///< a batch being filled, or batch_by's window
    std::vector<double> costs_;  ///< batch_by: the cost of each of items_
    std::vector<msg> outs_;
    std::uint64_t next_out_ = 0;
};

}  // namespace ferry::detail
