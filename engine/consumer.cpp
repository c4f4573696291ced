// SPDX-License-Identifier: Apache-2.0
/// \file
/// The consumer's side: next() takes results from the hand-off (spinning briefly, then
/// sleeping), accounts for what it delivers, and gives credits and boxes back in batches.

#include "runtime.hpp"

namespace ferry::detail {

void pipeline_runtime::end_start() {
    starting_ = false;
    // Raise the limit, return what the first output carried, then wake the source (admission.hpp).
    admission_.set_limit(plan_.in_flight);
    flush_consumer_credits();
    wake_source();  // also when the first output carried no credits
}

void pipeline_runtime::flush_consumer_credits() {
    // Boxes first: the source, woken by the credits, finds them in the pool.
    pool_.release_bulk(consumer_boxes_);
    if (consumer_credits_ == 0) return;
    return_credits(std::exchange(consumer_credits_, 0));
}

void pipeline_runtime::consumer_release(msg m) {
    box_pool::empty_out_delivered(m);
    consumer_boxes_.push_back(m);
    if (consumer_boxes_.size() >= 2 * box_batch) pool_.release_bulk(consumer_boxes_);
}

bool pipeline_runtime::next(any_value& out) {
    std::unique_lock control(control_mutex_);
    if (fatal_) std::rethrow_exception(fatal_);
    if (stopping_) {
        cancel_for_stop();
        return false;
    }
    if (!epoch_running_) start_epoch();
    for (;;) {
        msg m = nullptr;
        if (!out_->pop(m)) {
            const auto wait_start = clock::now();
            const auto wait_ticks = ticks();
            // Relaxed: stats() reads it for the wait in progress (a stall shows while it lasts).
            consumer_waiting_since_.store(wait_start.time_since_epoch().count(),
                                          std::memory_order_relaxed);
            if (out_->available() < plan_.burst) {
                // Spin briefly before sleeping, until a burst has gathered: results usually
                // arrive within microseconds, a futex sleep/wake pair per item costs more than
                // the item (measured: 3x fewer items/s for cheap stages), and taking items in
                // bursts rather than one cache-line transfer each is what keeps the
                // worker-to-consumer hand-off cheap. Yielding keeps the spin from starving
                // the workers. The spin adapts: where results come slowly (a decode per item)
                // it would only take CPU time from the workers — on a machine whose cores they
                // fill, 10-15% of the throughput (measured, perf/image_pipeline on 2 cores) —
                // so each wait longer than 50 us (a spin that did not pay: a yield lets a busy
                // worker run for a while) halves the next spin, and each short one doubles it,
                // up to 64 yields.
                flush_consumer_credits();
                for (int spin = 0;
                     spin < spin_limit_ && out_->available() < plan_.burst && !stopping_; ++spin) {
                    std::this_thread::yield();
                }
            }
            while (!stopping_ && !out_->refill()) {
                flush_consumer_credits();  // the graph may be waiting for them
                out_->wait([this] { return stopping_.load(); });
            }
            const auto waited = clock::now() - wait_start;
            consumer_waiting_since_.store(0, std::memory_order_relaxed);
            if (waited < std::chrono::microseconds(50)) {
                spin_limit_ = std::min(64, 2 * spin_limit_ + 1);
            } else {
                spin_limit_ /= 2;
            }
            bump_owned(consumer_wait_ns_, waited.count());
            if (spans_ != nullptr) {
                if (!consumer_named_) {
                    spans_->name_thread("consumer (your thread)");
                    consumer_named_ = true;
                }
                spans_->add(static_cast<std::uint32_t>(span_names_.size() - 1), wait_ticks,
                            ticks());
            }
            if (stopping_) {
                cancel_for_stop();
                return false;
            }
            continue;
        }
        switch (m->kind) {
            case msg_kind::value:
                out = std::move(m->value);
                frontier_ = m->end;
                if (tracker_) tracker_->done(*m);
                // Only this thread writes these (under control_mutex_): no locked instruction.
                bump_owned(recorder_.counts.delivered, m->items);
                bump_owned(recorder_.counts.outputs, 1);
                consumer_credits_ += m->credits;
                consumer_release(m);
                if (awaiting_first_) {
                    awaiting_first_ = false;
                    const std::int64_t ns = clock::now().time_since_epoch().count() - epoch_start_;
                    first_output_ns_.store(ns, std::memory_order_relaxed);
                    if (ns > first_output_max_ns_.load(std::memory_order_relaxed)) {
                        first_output_max_ns_.store(ns, std::memory_order_relaxed);
                    }
                }
                if (starting_) {
                    end_start();
                } else if (consumer_credits_ >= plan_.credit_batch) {
                    flush_consumer_credits();
                }
                return true;
            case msg_kind::end: {
                consumer_credits_ += m->credits;
                consumer_release(m);
                flush_consumer_credits();
                // Most items failed: the epoch ends with an error, not as a short success.
                const std::exception_ptr failed = epoch_failure();
                finish_epoch();
                if (failed) {
                    fatal_ = failed;
                    std::rethrow_exception(fatal_);
                }
                return false;
            }
            case msg_kind::error:
                fatal_ = m->error;
                abort_epoch_locked();
                std::rethrow_exception(fatal_);
            case msg_kind::gap:
                retire_gap(m);
                break;
        }
    }
}

}  // namespace ferry::detail
