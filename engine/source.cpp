// SPDX-License-Identifier: Apache-2.0
/// \file
/// The source's pull: one credit, one box, one call of the user's cursor, one message out.

#include "ferry/this_call.hpp"
#include "input_label.hpp"
#include "runtime.hpp"

namespace ferry::detail {

bool pipeline_runtime::source_pull(msg& out) {
    const tbb::spin_mutex::scoped_lock lock(src_.mutex);
    if (!src_.open || ctl_.halted || ctl_.aborting || ctl_.stopping) return false;
    if (!admission_.take()) return false;
    if (src_.boxes.empty()) pool_.acquire_bulk(src_.boxes, box_batch);
    box* b = src_.boxes.back();
    src_.boxes.pop_back();
    b->credits = 1;
    // seq counts this epoch's messages from 0; the item's position in the epoch starts later
    // in a resumed epoch, and skips what an unordered pipeline had done past it.
    const std::uint64_t position = src_.pos;
    b->seq = src_.seq;
    b->source_index = position;  // its resume points follow from it (box::plain_points)
    // Relaxed: only the monitor reads it, for a sampled fraction.
    src_.busy.store(true, std::memory_order_relaxed);
    const shard_writer w = src_.counters.owned();  // the input node's body, in the arena
    const auto& name_item = plan_.source.describe;
    const auto call = w.start_call(position);
    bool got = false;
    bool excluded = false;
    try {
        const call_scope scope(&ctl_.stopping, &ctl_.aborting, nullptr, &src_.counters.truncated,
                               &src_.counters.named);
        got = src_.skip_done_positions() && src_.cursor(b->value);
        // Named now, while the element is what the source made: a stage that fails it later
        // sees only what the stages before it turned it into.
        if (got && name_item) {
            name_item(b->value, b->input.mut());
            excluded = plan_.source.excluded && plan_.source.excluded(*b->input);
        }
        w.finish_call(call, got ? src_.pos : span_log::no_item);
    } catch (...) {
        // The source's failure ends the epoch: its message carries the stage_error. There is no
        // item to name; the one before it says where in the source it happened.
        w.finish_call(call);
        src_.busy.store(false, std::memory_order_relaxed);
        const auto cause = std::current_exception();
        const std::string text = describe(cause);
        const std::string after = position > 0 && !src_.last_input.empty()
                                      ? " (after " + quote_input(src_.last_input) + ")"
                                      : "";
        const std::string what =
            "stage 'source' failed on item " + std::to_string(position) + after + ": " + text;
        b->value.reset();
        b->input.clear();
        b->kind = msg_kind::error;
        b->error = std::make_exception_ptr(stage_error("source", position, 1, text, what));
        record_failure("source", position, 1, cause, text, log_level::error, what);
        w.add(&counter_shard::failed);
        src_.open = false;
        ++src_.seq;
        ++src_.pos;
        admission_.issued();
        w.add(&counter_shard::emitted);
        out = b;
        return true;
    }
    src_.busy.store(false, std::memory_order_relaxed);
    if (got) {
        b->kind = msg_kind::value;
        b->items = 1;
        b->source_index = src_.pos;  // past the positions skipped
        ++src_.pos;
        ++src_.seq;
        bump_owned(recorder_.counts.produced, 1);
        if (name_item) src_.last_input = *b->input;
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
        src_.open = false;
    }
    admission_.issued();
    w.add(&counter_shard::emitted);
    out = b;
    return true;
}

}  // namespace ferry::detail
