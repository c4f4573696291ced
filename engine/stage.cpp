// SPDX-License-Identifier: Apache-2.0
/// \file
/// A stage's call on one element: apply the callable under the stage's error policy (retry with
/// backoff, then skip or fail); what every kind's call comes to (finish_call), and what failed.

#include <algorithm>
#include <optional>

#include "attempts.hpp"
#include "call_hook.hpp"
#include "ferry/this_call.hpp"
#include "input_label.hpp"
#include "invoke.hpp"
#include "runtime.hpp"

namespace ferry::detail {
namespace {

std::string item_label(const box& b) {
    return detail::item_label(b.source_index, b.items, *b.input);
}

}  // namespace

void pipeline_runtime::apply(stage_runtime& st, msg m, const shard_writer& w) {
    w.add(&counter_shard::in);
    w.active(1);
    const error_policy& policy = st.spec.options.on_error;
    std::exception_ptr err;
    bool keep = true;
    // The call can learn that it should give up (this_call::stop_requested()), and, where its
    // callable takes it, which item it works on.
    const call_scope scope(&ctl_.stopping(), &ctl_.aborting(), nullptr, &st.counters.truncated,
                           &st.counters.named);
    const call_share share(threads_now_.load(std::memory_order_relaxed), st.concurrency);
    std::optional<item_info> info;
    std::optional<item_scope> item;
    if (st.spec.wants_item) {
        info = item_of(*m);
        item.emplace(&*info);
    }
    for (int attempt = 1;; ++attempt) {
        const bool last = attempt >= policy.attempts;
        try {
            const call_hook hook(w, m->source_index);
            keep = invoke(st, m->value, m->value, m->children, last);
            err = nullptr;
            break;
        } catch (...) {
            err = std::current_exception();
        }
        // A consumed input (moved into the call) cannot be retried, nor a failure that would
        // only come again.
        if (!retry_allowed(policy, attempt, err, m->value.has_value(),
                           ctl_.aborting() || ctl_.stopping())) {
            break;
        }
        w.add(&counter_shard::retries);
        // Stopped during the backoff (or as it ended): no more attempts.
        if (!wait_unless_stopped(pause_before_retry(policy, attempt, err)) ||
            this_call::stop_requested()) {
            break;
        }
    }
    w.active(-1);
    finish_call(st, m, w, err, keep);
}

void pipeline_runtime::finish_call(stage_runtime& st, msg m, const shard_writer& w,
                                   const std::exception_ptr& err, bool keep) {
    if (cancelling()) {
        // The epoch is being cancelled (stop, break, a failure): whatever the call returned, its
        // item ends cancelled, not failed (a call that gave up when asked is no failure).
        drop_unprocessed(m);
        return;
    }
    if (err) {
        fail_item(st, m, err);
        return;
    }
    if (!keep) {
        count_filtered(m, w);
        m->value.reset();
        m->kind = msg_kind::gap;
    } else {
        if (!st.counted_after) w.add(&counter_shard::out);
        if (plan_.memory_budget > 0 && tuner_ != nullptr) measure_stage_output(st, *m);
    }
    st.budget.succeeded();
}

void pipeline_runtime::fail_item(stage_runtime& st, msg m, const std::exception_ptr& cause) {
    auto& c = st.counters;
    c.shared().add(&counter_shard::failed);  // rare, and called from any thread
    const std::string text = describe(cause);
    const auto [fail, reason] = st.budget.failed(text);
    const std::uint64_t items = std::max<std::uint64_t>(1, m->items);
    const std::string what = "stage '" + st.name + "' " + (fail ? "failed on " : "skipped ") +
                             item_label(*m) + ": " + reason;
    record_failure(st.name, m->source_index, items, cause, text,
                   fail ? log_level::error : log_level::warning, what, *m->input);
    recorder_.counts.failed.fetch_add(m->items, std::memory_order_relaxed);
    m->value.reset();
    m->children.clear();
    m->items = 0;
    if (!fail) {
        m->kind = msg_kind::gap;
        return;
    }
    try {
        std::rethrow_exception(cause);
    } catch (...) {
        // stage_error captures the exception being handled as its nested cause.
        m->error = std::make_exception_ptr(
            stage_error(st.name, m->source_index, items, text, what, *m->input));
    }
    m->kind = msg_kind::error;
    ctl_.halt_at(m->source_index);  // the epoch is over: stop reading the source
}

}  // namespace ferry::detail
