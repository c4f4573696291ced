// SPDX-License-Identifier: Apache-2.0
/// \file
/// The source's pull: one credit, one box, one call of the user's cursor, one message out.

#include "ferry/this_call.hpp"
#include "input_label.hpp"
#include "runtime.hpp"

namespace ferry::detail {

bool pipeline_runtime::source_pull(msg& out) {
    std::lock_guard lock(source_mutex_);
    if (!source_open_ || halted_ || aborting_ || stopping_) return false;
    if (!admission_.take()) return false;
    if (source_boxes_.empty()) pool_.acquire_bulk(source_boxes_, box_batch);
    box* b = source_boxes_.back();
    source_boxes_.pop_back();
    b->credits = 1;
    // seq counts this epoch's messages from 0; the item's position in the epoch starts later
    // in a resumed epoch, and skips what an unordered pipeline had done past it.
    const std::uint64_t position = source_pos_;
    b->seq = source_seq_;
    b->source_index = position;
    b->start = resume_point{position};
    b->end = resume_point{position + 1};
    // Relaxed: only the monitor reads it, for a sampled fraction.
    source_busy_.store(true, std::memory_order_relaxed);
    const shard_writer w = source_counters_.owned();  // the input node's body, in the arena
    const auto& name_item = plan_.source.describe;
    const auto t0 = ticks();
    w.begin_call(t0, position);
    bool got = false;
    bool excluded = false;
    try {
        const call_scope scope(&stopping_, &aborting_, nullptr, &source_counters_.truncated,
                               &source_counters_.named);
        got = skip_done_positions() && cursor_(b->value);
        // Named now, while the element is what the source made: a stage that fails it later
        // sees only what the stages before it turned it into.
        if (got && name_item) {
            name_item(b->value, b->input);
            excluded = plan_.source.excluded && plan_.source.excluded(b->input);
        }
        w.record_call(t0);
        w.end_call();
    } catch (...) {
        // The source's failure ends the epoch: its message carries the stage_error. There is no
        // item to name; the one before it says where in the source it happened.
        w.record_call(t0);
        w.end_call();
        source_busy_.store(false, std::memory_order_relaxed);
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
        record_failure("source", position, 1, cause, text, log_level::error, what);
        w.add(&counter_shard::failed);
        source_open_ = false;
        ++source_seq_;
        ++source_pos_;
        admission_.issued();
        w.add(&counter_shard::emitted);
        out = b;
        return true;
    }
    source_busy_.store(false, std::memory_order_relaxed);
    if (got) {
        b->kind = msg_kind::value;
        b->items = 1;
        b->source_index = source_pos_;  // past the positions skipped
        b->start = resume_point{source_pos_};
        b->end = resume_point{source_pos_ + 1};
        ++source_pos_;
        ++source_seq_;
        bump_owned(recorder_.counts.produced, 1);
        if (name_item) last_input_ = b->input;
        if (excluded) {
            // On an exclusion list: produced and filtered here, it flows on as a gap.
            b->value.reset();
            b->kind = msg_kind::gap;
            count_filtered(b, w);
        } else {
            w.add(&counter_shard::out);
        }
    } else {
        b->kind = msg_kind::end;  // seq = number of messages before it
        source_open_ = false;
    }
    admission_.issued();
    w.add(&counter_shard::emitted);
    out = b;
    return true;
}

bool pipeline_runtime::skip_done_positions() {
    // Resuming an unordered pipeline: the items it had done past the state's position are pulled
    // and dropped (the source's own order says which comes where).
    while (resume_done_next_ < resume_done_.size() &&
           resume_done_[resume_done_next_] == source_pos_) {
        any_value dropped;
        if (!cursor_(dropped)) return false;
        ++resume_done_next_;
        ++source_pos_;
    }
    return true;
}

}  // namespace ferry::detail
