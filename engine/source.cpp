// SPDX-License-Identifier: Apache-2.0
/// \file
/// The source's pull: one credit, one box, one call of the user's cursor, one message out.

#include "call_hook.hpp"
#include "ferry/this_call.hpp"
#include "input_label.hpp"
#include "source_driver.hpp"

namespace ferry::detail {

bool source_driver::skip_done_positions(source_epoch& run) {
    // Resuming an unordered pipeline: the items it had done past the state's position are
    // pulled and dropped (the source's own order says which comes where).
    while (run.skip_next_ < run.skip_.size() && run.skip_[run.skip_next_] == run.pos_) {
        any_value dropped;
        if (!run.cursor_(dropped)) return false;
        ++run.skip_next_;
        ++run.pos_;
    }
    return true;
}

void source_driver::fail(source_epoch& run, box* b, std::uint64_t position, const shard_writer& w) {
    // The source's failure ends the epoch: its message carries the stage_error. There is no
    // item to name; the one before it says where in the source it happened.
    const auto cause = std::current_exception();
    const std::string text = describe(cause);
    const std::string after =
        position > 0 && !last_input_.empty() ? " (after " + quote_input(last_input_) + ")" : "";
    const std::string what =
        "stage 'source' failed on item " + std::to_string(position) + after + ": " + text;
    b->value.reset();
    b->input.clear();
    b->kind = msg_kind::error;
    b->error = std::make_exception_ptr(stage_error("source", position, 1, text, what));
    recorder_.record("source", position, 1, ctl_.epoch(), cause, text, log_level::error, what);
    w.add(&counter_shard::failed);
    open_ = false;
    ++run.seq_;
    ++run.pos_;
}

bool source_driver::pull(msg& out) {
    const tbb::spin_mutex::scoped_lock lock(mutex_);
    if (!open_ || ctl_.halted() || ctl_.aborting() || ctl_.stopping()) return false;
    if (!admission_.take()) return false;
    source_epoch& run = *run_;
    if (boxes_.empty()) pool_.acquire_bulk(boxes_, box_batch);
    box* b = boxes_.back();
    boxes_.pop_back();
    b->credits = 1;
    // seq counts this epoch's messages from 0; the item's position in the epoch starts later
    // in a resumed epoch, and skips what an unordered pipeline had done past it.
    const std::uint64_t position = run.pos_;
    b->seq = run.seq_;
    b->source_index = position;  // its resume points follow from it (box::plain_points)
    // Relaxed: only the monitor reads it, for a sampled fraction.
    busy_.store(true, std::memory_order_relaxed);
    const shard_writer w = counters_.owned();  // the input node's body, in the arena
    const auto& name_item = spec_.describe;
    call_hook call(w, position);
    bool got = false;
    bool excluded = false;
    try {
        const call_scope scope(&ctl_.stopping(), &ctl_.aborting(), nullptr, &counters_.truncated,
                               &counters_.named);
        got = skip_done_positions(run) && run.cursor_(b->value);
        // Named now, while the element is what the source made: a stage that fails it later
        // sees only what the stages before it turned it into.
        if (got && name_item) {
            name_item(b->value, b->input.mut());
            excluded = spec_.excluded && spec_.excluded(*b->input);
        }
        call.name_item(got ? run.pos_ : span_log::no_item);
        call.end();
    } catch (...) {
        call.name_item(span_log::no_item);
        call.end();
        busy_.store(false, std::memory_order_relaxed);
        fail(run, b, position, w);
        admission_.issued();
        w.add(&counter_shard::emitted);
        out = b;
        return true;
    }
    busy_.store(false, std::memory_order_relaxed);
    if (got) {
        b->kind = msg_kind::value;
        b->items = 1;
        b->source_index = run.pos_;  // past the positions skipped
        ++run.pos_;
        ++run.seq_;
        bump_owned(recorder_.counts.produced, 1);
        if (name_item) last_input_ = *b->input;
        if (excluded) {
            // On an exclusion list: produced and filtered here, it flows on as a gap.
            b->value.reset();
            b->kind = msg_kind::gap;
            w.add(&counter_shard::filtered);
            recorder_.counts.filtered.fetch_add(b->items, std::memory_order_relaxed);
            b->items = 0;
        } else {
            w.add(&counter_shard::out);
        }
    } else {
        b->kind = msg_kind::end;  // seq = number of messages before it
        open_ = false;
    }
    admission_.issued();
    w.add(&counter_shard::emitted);
    out = b;
    return true;
}

}  // namespace ferry::detail
