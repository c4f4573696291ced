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
    outside_next(consumer_side& c, bool on) : c_(c), on_(on) {
        if (!on_) return;
        if (c_.left_cpu_ns != 0 && c_.left_thread == std::this_thread::get_id()) {
            bump_owned(c_.outside_cpu_ns, thread_cpu_ns() - c_.left_cpu_ns);
        }
    }
    ~outside_next() {
        if (!on_) return;
        c_.left_cpu_ns = thread_cpu_ns();
        c_.left_thread = std::this_thread::get_id();
    }
    outside_next(const outside_next&) = delete;
    outside_next& operator=(const outside_next&) = delete;

  private:
    consumer_side& c_;
    bool on_;
};

}  // namespace

void pipeline_runtime::end_start() {
    con_.starting = false;
    if (plan_.memory_budget > 0 && tuner_ != nullptr) first_output_in_flight();
    // Raise the limit, return what the first output carried, then wake the source (admission.hpp).
    admission_.set_limit(in_flight_now_.load(std::memory_order_relaxed));
    flush_consumer_credits();
    wake_source();  // also when the first output carried no credits
}

void pipeline_runtime::flush_consumer_credits() {
    // Boxes first: the source, woken by the credits, finds them in the pool.
    pool_.release_bulk(con_.boxes);
    if (con_.credits == 0) return;
    return_credits(std::exchange(con_.credits, 0));
}

void pipeline_runtime::consumer_release(msg m) {
    box_pool::empty_out_delivered(m);
    con_.boxes.push_back(m);
    if (con_.boxes.size() >= 2 * box_batch) pool_.release_bulk(con_.boxes);
}

bool pipeline_runtime::next(any_value& out) {
    std::unique_lock control(ctl_.mutex);
    const outside_next training(con_, tuner_ != nullptr);
    if (ctl_.fatal) std::rethrow_exception(ctl_.fatal);
    if (tuner_ != nullptr && ctl_.running) {
        // The tuner found a budget that cannot work: the epoch ends with its error.
        if (auto e = tuner_error()) {
            ctl_.fatal = std::move(e);
            abort_epoch_locked();
            std::rethrow_exception(ctl_.fatal);
        }
    }
    if (ctl_.stopping) {
        cancel_for_stop();
        return false;
    }
    if (!ctl_.running && !start_epoch()) return false;  // stopped while the source opened
    for (;;) {
        msg m = nullptr;
        if (!con_.out->pop(m)) {
            const auto wait_start = clock::now();
            const auto wait_ticks = ticks();
            if (trace_.ranges) trace_.ranges->push(trace_.wait_row, 0);
            // Relaxed: stats() reads it for the wait in progress (a stall shows while it lasts).
            con_.waiting_since.store(wait_start.time_since_epoch().count(),
                                     std::memory_order_relaxed);
            if (con_.out->available() < plan_.burst) {
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
                for (int spin = 0; spin < con_.spin_limit && con_.out->available() < plan_.burst &&
                                   !ctl_.stopping;
                     ++spin) {
                    std::this_thread::yield();
                }
            }
            while (!ctl_.stopping && !con_.out->refill()) {
                flush_consumer_credits();  // the graph may be waiting for them
                con_.out->wait([this] { return ctl_.stopping.load(); });
            }
            if (trace_.ranges) trace_.ranges->pop(trace_.wait_row);
            const auto waited = clock::now() - wait_start;
            con_.waiting_since.store(0, std::memory_order_relaxed);
            con_.adapt_spin(waited);
            bump_owned(con_.wait_ns, waited.count());
            if (trace_.spans != nullptr) {
                if (!con_.named) {
                    trace_.spans->name_thread("consumer (your thread)");
                    con_.named = true;
                }
                trace_.spans->add(static_cast<std::uint32_t>(trace_.names.size() - 1), wait_ticks,
                                  ticks());
            }
            if (ctl_.stopping) {
                cancel_for_stop();
                return false;
            }
            continue;
        }
        switch (m->kind) {
            case msg_kind::value:
                if (plan_.memory_budget > 0 && tuner_ != nullptr) measure_output(*m);
                out = std::move(m->value);
                res_.frontier = m->end();
                if (res_.tracker) res_.tracker->done(*m);
                if (res_.lists_window && !m->covers.empty()) res_.note_window(*m);
                // Only this thread writes these (under ctl_.mutex): no locked instruction.
                bump_owned(recorder_.counts.delivered, m->items);
                bump_owned(recorder_.counts.outputs, 1);
                con_.credits += m->credits;
                consumer_release(m);
                if (con_.awaiting_first) {
                    con_.note_first_output(clock::now().time_since_epoch().count() - ctl_.start);
                }
                if (con_.starting) {
                    end_start();
                } else if (con_.credits >= plan_.credit_batch) {
                    flush_consumer_credits();
                }
                return true;
            case msg_kind::end: {
                con_.credits += m->credits;
                consumer_release(m);
                flush_consumer_credits();
                // Most items failed: the epoch ends with an error, not as a short success.
                const std::exception_ptr failed = epoch_failure();
                finish_epoch();
                if (failed) {
                    ctl_.fatal = failed;
                    std::rethrow_exception(ctl_.fatal);
                }
                return false;
            }
            case msg_kind::error:
                ctl_.fatal = m->error;
                abort_epoch_locked();
                std::rethrow_exception(ctl_.fatal);
            case msg_kind::gap:
                retire_gap(m);
                break;
        }
    }
}

}  // namespace ferry::detail
