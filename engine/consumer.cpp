// SPDX-License-Identifier: Apache-2.0
/// \file
/// The consumer's side: next() takes results from the hand-off (spinning briefly, then
/// sleeping), accounts for what it delivers, and gives credits and boxes back in batches.

#include <thread>

#include "runtime.hpp"
#include "tuning.hpp"

namespace ferry::detail {
namespace {

std::int64_t thread_cpu_ns() noexcept {
    return cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/// While tuning: counts the consumer thread's CPU time between two next() calls (its training
/// work) apart, so that the CPU budget measures the pipeline's threads.
class outside_next {
  public:
    outside_next(consumer_side& c, bool on) : c_(c), on_(on) { c_.enter_next(on_); }
    ~outside_next() { c_.leave_next(on_); }
    outside_next(const outside_next&) = delete;
    outside_next& operator=(const outside_next&) = delete;

  private:
    consumer_side& c_;
    bool on_;
};

}  // namespace

void consumer_side::enter_next(bool on) noexcept {
    if (on && left_cpu_ns_ != 0 && left_thread_ == std::this_thread::get_id()) {
        // Not bump_owned: the entering thread may change (runtime::consumer_enters).
        outside_cpu_ns_.fetch_add(thread_cpu_ns() - left_cpu_ns_, std::memory_order_relaxed);
    }
}

void consumer_side::leave_next(bool on) noexcept {
    if (!on) return;
    left_cpu_ns_ = thread_cpu_ns();
    left_thread_ = std::this_thread::get_id();
}

template <class Flush>
bool consumer_side::wait(std::size_t burst, const std::atomic<bool>& stopping, trace_rows& trace,
                         Flush&& flush) {
    const auto wait_start = clock::now();
    const auto wait_ticks = ticks();
    if (trace.ranges) trace.ranges->push(trace.wait_row, 0);
    // Relaxed: stats() reads it for the wait in progress (a stall shows while it lasts).
    waiting_since_.store(wait_start.time_since_epoch().count(), std::memory_order_relaxed);
    if (out_->available() < burst) {
        // Spin briefly before sleeping, until a burst has gathered: results usually arrive
        // within microseconds, a futex sleep/wake pair per item costs more than the item
        // (measured: 3x fewer items/s for cheap stages), and taking items in bursts rather than
        // one cache-line transfer each is what keeps the worker-to-consumer hand-off cheap.
        // Yielding keeps the spin from starving the workers. The spin adapts: where results
        // come slowly (a decode per item) it would only take CPU time from the workers — on a
        // machine whose cores they fill, 10-15% of the throughput (measured,
        // perf/image_pipeline on 2 cores) — so each wait longer than 50 us (a spin that did not
        // pay: a yield lets a busy worker run for a while) halves the next spin, and each short
        // one doubles it, up to 64 yields.
        flush();
        for (int spin = 0; spin < spin_limit_ && out_->available() < burst && !stopping; ++spin) {
            std::this_thread::yield();
        }
    }
    while (!stopping && !out_->refill()) {
        flush();  // the graph may be waiting for them
        out_->wait([&stopping] { return stopping.load(); });
    }
    if (trace.ranges) trace.ranges->pop(trace.wait_row);
    const auto waited = clock::now() - wait_start;
    waiting_since_.store(0, std::memory_order_relaxed);
    adapt_spin(waited);
    bump_owned(wait_ns_, waited.count());
    if (trace.spans != nullptr) {
        if (!named_) {
            trace.spans->name_thread("consumer (your thread)");
            named_ = true;
        }
        trace.spans->add(static_cast<std::uint32_t>(trace.names.size() - 1), wait_ticks, ticks());
    }
    return !stopping;
}

void pipeline_runtime::end_start() {
    con_.end_start();
    if (plan_.memory_budget > 0 && tuner_ != nullptr) first_output_in_flight();
    // Raise the limit, return what the first output carried, then wake the source (admission.hpp).
    admission_.set_limit(in_flight_now_.load(std::memory_order_relaxed));
    flush_consumer_credits();
    wake_source();  // also when the first output carried no credits
}

bool pipeline_runtime::next(any_value& out) {
    // Before the lock: in a forked child, a thread that is not there may hold it.
    check_same_process(built_in_, "next()");
    std::unique_lock control(ctl_.mutex());
    const outside_next training(con_, tuner_ != nullptr);
    if (ctl_.fatal()) std::rethrow_exception(ctl_.fatal());
    if (tuner_ != nullptr && ctl_.running()) {
        // The tuner found a budget that cannot work: the epoch ends with its error.
        if (auto e = tuner_error()) {
            ctl_.set_fatal(std::move(e));
            abort_epoch_locked();
            std::rethrow_exception(ctl_.fatal());
        }
    }
    if (ctl_.stopping()) {
        cancel_for_stop();
        return false;
    }
    if (!ctl_.running() && !start_epoch()) return false;  // stopped while the source opened
    for (;;) {
        msg m = nullptr;
        if (!con_.out()->pop(m)) {
            if (!con_.wait(plan_.burst, ctl_.stopping(), trace_,
                           [this] { flush_consumer_credits(); })) {
                cancel_for_stop();
                return false;
            }
            continue;
        }
        switch (take(m, out)) {
            case next_poll::value:
                return true;
            case next_poll::end:
                return false;
            case next_poll::not_ready:
                break;
        }
    }
}

next_poll pipeline_runtime::try_next(any_value& out) {
    check_same_process(built_in_, "next()");
    std::unique_lock control(ctl_.mutex(), std::try_to_lock);
    if (!control.owns_lock()) return next_poll::not_ready;
    // What next() does before it takes a message (an error to rethrow, the tuner's verdict, a
    // stop, an epoch to start, the first output's start-up) stays next()'s.
    if (ctl_.fatal() || (tuner_ != nullptr && tuner_->failed.load(std::memory_order_acquire)) ||
        ctl_.stopping() || !ctl_.running() || con_.starting()) {
        return next_poll::not_ready;
    }
    for (;;) {
        msg m = nullptr;
        if (!con_.out()->pop(m) && !(con_.out()->refill() && con_.out()->pop(m))) {
            return next_poll::not_ready;
        }
        if (const next_poll got = take(m, out); got != next_poll::not_ready) return got;
    }
}

next_poll pipeline_runtime::take(msg m, any_value& out) {
    switch (m->kind) {
        case msg_kind::value:
            if (plan_.memory_budget > 0 && tuner_ != nullptr) measure_output(*m);
            out = std::move(m->value);
            res_.delivered(*m);
            // Only this thread writes these (under the epoch mutex): no locked instruction.
            bump_owned(recorder_.counts.delivered, m->items);
            bump_owned(recorder_.counts.outputs, 1);
            con_.take_back(m);
            if (con_.awaiting_first()) {
                con_.note_first_output(clock::now().time_since_epoch().count() - ctl_.start());
            }
            if (con_.starting()) {
                end_start();
            } else if (con_.credits() >= plan_.credit_batch || admission_.parked()) {
                // A parked source waits for these credits: a batch is for a source that runs.
                flush_consumer_credits();
            }
            return next_poll::value;
        case msg_kind::end: {
            con_.take_back(m);
            flush_consumer_credits();
            // Most items failed: the epoch ends with an error, not as a short success.
            const std::exception_ptr failed = epoch_failure();
            finish_epoch();
            if (failed) {
                ctl_.set_fatal(failed);
                std::rethrow_exception(ctl_.fatal());
            }
            return next_poll::end;
        }
        case msg_kind::error:
            ctl_.set_fatal(m->error);
            abort_epoch_locked();
            std::rethrow_exception(ctl_.fatal());
        case msg_kind::gap:
            retire_gap(m);
            break;
    }
    return next_poll::not_ready;
}

}  // namespace ferry::detail
