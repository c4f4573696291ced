// SPDX-License-Identifier: Apache-2.0
/// \file
/// Renumbering: batch, unbatch and the expansion after flat_map (batch_by's window is
/// cost_batch.cpp's). Each runs in a serial node behind a sequencer (source order, unless
/// unordered) and numbers what it emits anew; what the node does with an element and at the
/// epoch's end is its `renumber_rule`, which graph.cpp picks by the stage's kind.

#include "call_hook.hpp"
#include "runtime.hpp"

namespace ferry::detail {

void pipeline_runtime::renumber(stage_runtime& st, const renumber_rule& rule, msg m,
                                const shard_writer& w) {
    st.renum.seq->push(m, [this, &st, &rule, &w](msg x) {
        switch (x->kind) {
            case msg_kind::gap:
                pass_gap(st, x);
                break;
            case msg_kind::error:
                x->seq = st.renum.next_out++;
                st.renum.outs.push_back(x);
                break;
            case msg_kind::end:
                if (rule.flush != nullptr && !st.renum.batch_items.empty()) {
                    (this->*rule.flush)(st, w);
                }
                x->seq = st.renum.next_out;
                st.renum.next_out = 0;
                st.renum.outs.push_back(x);
                break;
            case msg_kind::value:
                (this->*rule.take)(st, x, w);
                break;
        }
    });
}

void pipeline_runtime::take_batched(stage_runtime& st, msg x, const shard_writer& w) {
    w.add(&counter_shard::in);
    st.renum.batch_items.push_back(x);
    if (st.renum.batch_items.size() == st.spec.batch_size) emit_batch(st, w);
}

void pipeline_runtime::flush_batch(stage_runtime& st, const shard_writer& w) {
    if (!st.spec.drop_last) {
        emit_batch(st, w);
        return;
    }
    for (msg b : st.renum.batch_items) {
        count_filtered(b, w);
        retire_gap(b);
    }
    st.renum.batch_items.clear();
}

void pipeline_runtime::pass_gap(stage_runtime& st, msg x) {
    if (st.route < 0) {
        retire_gap(x);
        return;
    }
    // In a branch (of a route that rejoins, as only those renumber in branches): the join waits
    // for the element's marked last message, so the gap goes on, numbered here.
    x->seq = st.renum.next_out++;
    st.renum.outs.push_back(x);
}

void pipeline_runtime::emit_batch(stage_runtime& st, const shard_writer& w) {
    call_hook hook(w, span_log::no_item, call_hook::timing::detached);
    const auto t0 = hook.start();
    w.active(1);
    msg first = st.renum.batch_items.front();
    // The batch resumes from its first item's start; the consumer moves on to its last's end.
    first->set_end(st.renum.batch_items.back()->end());
    std::vector<any_value> values;
    values.reserve(st.renum.batch_items.size());
    std::uint64_t items = 0;
    std::uint64_t credits = 0;
    for (msg b : st.renum.batch_items) {
        if (w.traced()) w.link(t0, b->source_index);  // the item's flow ends in this batch
        if (res_.tracker()) {
            // Unordered: the batch's items are any; it lists their positions.
            if (b->covers.empty()) {
                first->covers.mut().push_back(b->source_index);
            } else if (b != first) {
                auto& to = first->covers.mut();
                to.insert(to.end(), b->covers->begin(), b->covers->end());
            }
        }
        values.push_back(std::move(b->value));
        items += b->items;
        credits += b->credits;
        if (b != first) {
            b->items = 0;  // the batch's box carries them
            pool_.release(b);
        }
    }
    st.renum.batch_items.clear();
    // The batch's first box carries the accounting and credits of all its items.
    first->items = items;
    first->credits = credits;
    try {
        st.spec.pack_fn(values, first->value);
        w.add(&counter_shard::out);
    } catch (...) {
        fail_item(st, first, std::current_exception());
    }
    hook.end();
    w.active(-1);
    if (first->kind == msg_kind::gap) {
        retire_gap(first);
        return;
    }
    first->seq = st.renum.next_out++;
    st.renum.outs.push_back(first);
}

void pipeline_runtime::take_unbatched(stage_runtime& st, msg x, const shard_writer& w) {
    w.add(&counter_shard::in);
    {
        const call_hook hook(w, span_log::no_item, call_hook::timing::detached);
        try {
            x->children.clear();
            st.spec.expand_fn(x->value, x->children, true);
        } catch (...) {
            fail_item(st, x, std::current_exception());
        }
    }
    if (x->kind == msg_kind::gap) {
        pass_gap(st, x);
        return;
    }
    if (x->kind == msg_kind::error) {
        x->seq = st.renum.next_out++;
        st.renum.outs.push_back(x);
        return;
    }
    expand(st, x, w);
}

void pipeline_runtime::expand(stage_runtime& st, msg x, const shard_writer& w) {
    auto& children = x->children;
    // A resumed epoch's first item may have delivered some of its outputs before the save.
    const std::size_t skip = std::min<std::size_t>(res_.skip(x->start()), children.size());
    if (children.size() == skip) {
        count_filtered(x, w);
        x->value.reset();
        children.clear();
        x->kind = msg_kind::gap;
        pass_gap(st, x);
        return;
    }
    const std::size_t k = children.size();
    const resume_point parent = x->start();
    for (std::size_t i = skip; i + 1 < k; ++i) {
        box* b = pool_.acquire();
        b->value = std::move(children[i]);
        b->kind = msg_kind::value;
        b->seq = st.renum.next_out++;
        b->source_index = x->source_index;
        b->input.assign(x->input);
        b->set_points(parent.child(i), parent.child(i + 1));
        // In a rejoining route's branch: the element the route numbered; the last output, x,
        // keeps the mark.
        b->route_seq = x->route_seq;
        b->route_branch = x->route_branch;
        b->last_of_route = false;
        st.renum.outs.push_back(b);
    }
    // The last output carries the input's accounting and credits (and its end).
    x->value = std::move(children[k - 1]);
    children.clear();
    x->set_start(parent.child(k - 1));
    x->seq = st.renum.next_out++;
    st.renum.outs.push_back(x);
    w.add(&counter_shard::out, k - skip);
}

}  // namespace ferry::detail
