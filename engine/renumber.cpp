// SPDX-License-Identifier: Apache-2.0
/// \file
/// Renumbering: batch, unbatch and the expansion after flat_map (batch_by's window is
/// cost_batch.cpp's). Each runs in a serial node behind a sequencer (source order, unless
/// unordered) and numbers what it emits anew; what the node does with an element and at the
/// epoch's end is its `renumber_node::rule`, which graph.cpp picks by the stage's kind.

#include "renumber_node.hpp"

#include "call_hook.hpp"
#include "runtime.hpp"

namespace ferry::detail {

void renumber_node::push(msg m, const shard_writer& w) {
    seq_->push(m, [this, &w](msg x) {
        switch (x->kind) {
            case msg_kind::gap:
                pass_gap(x);
                break;
            case msg_kind::error:
                emit(x);
                break;
            case msg_kind::end:
                if (rule_.flush != nullptr && !items_.empty()) (this->*rule_.flush)(w);
                x->seq = next_out_;
                next_out_ = 0;
                outs_.push_back(x);
                break;
            case msg_kind::value:
                (this->*rule_.take)(x, w);
                break;
        }
    });
}

void renumber_node::forget_epoch() noexcept {
    tsan_acquire(this);  // what the serial node's last call wrote
    seq_->clear();
    items_.clear();
    costs_.clear();
    outs_.clear();
    next_out_ = 0;
}

void renumber_node::take_batched(msg x, const shard_writer& w) {
    w.add(&counter_shard::in);
    items_.push_back(x);
    if (items_.size() == st_.spec.batch_size) emit_batch(w);
}

void renumber_node::flush_batch(const shard_writer& w) {
    if (!st_.spec.drop_last) {
        emit_batch(w);
        return;
    }
    for (msg b : items_) {
        host_.count_filtered(b, w);
        host_.retire_gap(b);
    }
    items_.clear();
}

void renumber_node::pass_gap(msg x) {
    if (st_.route < 0) {
        host_.retire_gap(x);
        return;
    }
    // In a branch (of a route that rejoins, as only those renumber in branches): the join waits
    // for the element's marked last message, so the gap goes on, numbered here.
    emit(x);
}

void renumber_node::emit_batch(const shard_writer& w) {
    call_hook hook(w, span_log::no_item, call_hook::timing::detached);
    const auto t0 = hook.start();
    w.active(1);
    msg first = items_.front();
    // The batch resumes from its first item's start; the consumer moves on to its last's end.
    first->set_end(items_.back()->end());
    std::vector<any_value> values;
    values.reserve(items_.size());
    std::uint64_t items = 0;
    std::uint64_t credits = 0;
    for (msg b : items_) {
        if (w.traced()) w.link(t0, b->source_index);  // the item's flow ends in this batch
        if (host_.tracks_positions()) {
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
            host_.release_box(b);
        }
    }
    items_.clear();
    // The batch's first box carries the accounting and credits of all its items.
    first->items = items;
    first->credits = credits;
    try {
        st_.spec.pack_fn(values, first->value);
        w.add(&counter_shard::out);
    } catch (...) {
        host_.fail_item(st_, first, std::current_exception());
    }
    hook.end();
    w.active(-1);
    if (first->kind == msg_kind::gap) {
        host_.retire_gap(first);
        return;
    }
    emit(first);
}

void renumber_node::take_unbatched(msg x, const shard_writer& w) {
    w.add(&counter_shard::in);
    {
        const call_hook hook(w, span_log::no_item, call_hook::timing::detached);
        try {
            x->children.clear();
            st_.spec.expand_fn(x->value, x->children, true);
        } catch (...) {
            host_.fail_item(st_, x, std::current_exception());
        }
    }
    if (x->kind == msg_kind::gap) {
        pass_gap(x);
        return;
    }
    if (x->kind == msg_kind::error) {
        emit(x);
        return;
    }
    expand(x, w);
}

void renumber_node::expand(msg x, const shard_writer& w) {
    auto& children = x->children;
    // A resumed epoch's first item may have delivered some of its outputs before the save.
    const std::size_t skip = std::min<std::size_t>(host_.skip(x->start()), children.size());
    if (children.size() == skip) {
        host_.count_filtered(x, w);
        x->value.reset();
        children.clear();
        x->kind = msg_kind::gap;
        pass_gap(x);
        return;
    }
    const std::size_t k = children.size();
    const resume_point parent = x->start();
    for (std::size_t i = skip; i + 1 < k; ++i) {
        box* b = host_.acquire_box();
        b->value = std::move(children[i]);
        b->kind = msg_kind::value;
        b->seq = next_out_++;
        b->source_index = x->source_index;
        b->input.assign(x->input);
        b->set_points(parent.child(i), parent.child(i + 1));
        // In a rejoining route's branch: the element the route numbered; the last output, x,
        // keeps the mark.
        b->route_seq = x->route_seq;
        b->route_branch = x->route_branch;
        b->last_of_route = false;
        outs_.push_back(b);
    }
    // The last output carries the input's accounting and credits (and its end).
    x->value = std::move(children[k - 1]);
    children.clear();
    x->set_start(parent.child(k - 1));
    emit(x);
    w.add(&counter_shard::out, k - skip);
}

}  // namespace ferry::detail
