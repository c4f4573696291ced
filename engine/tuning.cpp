// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner on the runtime's side, on the monitor thread: every `autotune.interval` it reads
/// what the interval did (each tuned stage's call time, the items the consumer took and how long
/// it waited, the share of samples the pipeline was full, the CPU time of every thread but the
/// consumer's time outside next()), hands that to `tuner_policy` and applies its decisions:
/// stage limits (tuned_stage.cpp), the arena's working threads (arena_threads.cpp) and
/// `in_flight`.

#include "tuning.hpp"

#include <algorithm>

#include "runtime.hpp"

namespace ferry::detail {
namespace {

std::int64_t process_cpu_ns() noexcept {
    return cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

/// A stage's call time so far, in ticks: the calls that ended and the ones running now.
double busy_ticks(const stage_counters& c, std::uint64_t now) {
    auto busy = static_cast<double>(c.sum(&counter_shard::busy_ticks));
    for (const auto& shard : c.shards()) {
        const std::uint64_t start = shard->call_start.load(std::memory_order_acquire);
        if (start != 0 && now > start) busy += static_cast<double>(now - start);
    }
    return busy;
}

}  // namespace

void pipeline_runtime::make_tuner() {
    std::vector<tuned_stage_range> ranges;
    std::vector<stage_runtime*> tuned;
    for (auto& st : stages_) {
        if (!st.tuned) continue;
        // map_async calls hold no arena thread either: an I/O stage to the policy.
        ranges.push_back({st.name, st.own_slots, st.tuned_lo, st.tuned_hi, st.concurrency});
        tuned.push_back(&st);
    }
    tuner_budget budget;
    budget.cpu_cores = plan_.cpu_budget;
    budget.threads = plan_.threads;
    budget.memory_bytes = plan_.memory_budget;
    budget.min_in_flight = plan_.first_output_items;
    budget.max_in_flight = plan_.in_flight;
    tuner_ = std::make_unique<tuner_state>(std::move(ranges), budget);
    tuner_->stages = std::move(tuned);
    tuner_->busy_ticks.assign(tuner_->stages.size(), 0);
}

void pipeline_runtime::tune_sample(bool saturated) noexcept {
    auto& t = *tuner_;
    ++t.samples;
    if (saturated) ++t.full_samples;
    t.in_flight_sum += static_cast<double>(admission_.out_now());
}

void pipeline_runtime::tune() {
    auto& t = *tuner_;
    const auto now = clock::now();
    const std::uint64_t now_ticks = ticks();
    const auto epochs = recorder_.counts.epochs.load(std::memory_order_relaxed);
    const auto read = [&] {
        for (std::size_t i = 0; i < t.stages.size(); ++i) {
            t.busy_ticks[i] = busy_ticks(t.stages[i]->counters, now_ticks);
        }
        t.delivered = recorder_.counts.delivered.load(std::memory_order_relaxed);
        t.outputs_read = recorder_.counts.outputs.load(std::memory_order_relaxed);
        t.wait_ns = con_.wait_ns.load(std::memory_order_relaxed);
        t.cpu_ns = process_cpu_ns() - con_.outside_cpu_ns.load(std::memory_order_relaxed);
        t.samples = 0;
        t.full_samples = 0;
        t.in_flight_sum = 0;
        t.last = now;
        t.epochs = epochs;
    };
    const auto outputs = recorder_.counts.outputs.load(std::memory_order_relaxed);
    if (t.epochs != epochs) {
        // A new epoch (or the first): the time between epochs is no interval to judge.
        read();
        t.warm = false;
        t.outputs = outputs;
        return;
    }
    if (!t.warm) {
        // Nor is the wait for the epoch's first output (fast_start, cold caches): the first
        // interval starts when the consumer has taken it.
        read();
        t.warm = outputs != t.outputs;
        return;
    }
    if (now - t.last < plan_.tune_every) return;

    tuner_sample s;
    s.at_s = std::chrono::duration<double>(now - t.built).count();
    s.interval_s = std::chrono::duration<double>(now - t.last).count();
    const double s_per_tick = rate_.ns_per_tick() / 1e9;
    for (std::size_t i = 0; i < t.stages.size(); ++i) {
        s.busy_s.push_back((busy_ticks(t.stages[i]->counters, now_ticks) - t.busy_ticks[i]) *
                           s_per_tick);
    }
    s.items = static_cast<double>(recorder_.counts.delivered.load(std::memory_order_relaxed) -
                                  t.delivered);
    s.outputs = static_cast<double>(outputs - t.outputs_read);
    s.consumer_wait_s =
        static_cast<double>(con_.wait_ns.load(std::memory_order_relaxed) - t.wait_ns) / 1e9;
    // A wait in progress counts up to now.
    if (const auto since = con_.waiting_since.load(std::memory_order_relaxed); since != 0) {
        const auto from = std::max(since, t.last.time_since_epoch().count());
        s.consumer_wait_s +=
            std::chrono::duration<double>(clock::duration(now.time_since_epoch().count() - from))
                .count();
    }
    s.consumer_wait_s = std::min(s.consumer_wait_s, s.interval_s);
    s.full =
        t.samples > 0 ? static_cast<double>(t.full_samples) / static_cast<double>(t.samples) : 0.0;
    s.items_in_flight = t.samples > 0 ? t.in_flight_sum / static_cast<double>(t.samples) : 0.0;
    // Bytes: what the items in flight hold, at the bytes per source item of the outputs the
    // consumer took in the interval (or before, when it took none).
    const auto out_bytes = con_.out_bytes.load(std::memory_order_relaxed);
    const auto out_items = con_.out_items.load(std::memory_order_relaxed);
    if (out_items > t.out_items) {
        t.bytes_per_item = static_cast<double>(out_bytes - t.out_bytes) /
                           static_cast<double>(out_items - t.out_items);
    }
    t.out_bytes = out_bytes;
    t.out_items = out_items;
    s.bytes_in_flight = s.items_in_flight * t.bytes_per_item;
    s.largest_batch_bytes = static_cast<double>(con_.largest_bytes.load(std::memory_order_relaxed));
    s.in_flight = in_flight_now_.load(std::memory_order_relaxed);
    s.cpu_s = static_cast<double>(process_cpu_ns() -
                                  con_.outside_cpu_ns.load(std::memory_order_relaxed) - t.cpu_ns) /
              1e9;

    const auto made = t.policy.step(s);
    read();
    {
        // Every interval: the last decision's rate after it is filled in one interval later.
        std::lock_guard lock(t.mutex);
        t.decisions = t.policy.decisions();
        if (const auto& e = t.policy.memory_error(); e && !t.error) {
            t.error = std::make_exception_ptr(invalid_argument(*e));
            t.failed = true;
        }
    }
    if (made.empty()) return;
    if (t.policy.threads() != threads_now_.load(std::memory_order_relaxed)) {
        set_threads(t.policy.threads());
    }
    for (std::size_t i = 0; i < t.stages.size(); ++i) {
        const int limit = t.policy.limits()[i];
        if (limit != t.stages[i]->limit.load(std::memory_order_relaxed)) {
            set_limit(*t.stages[i], limit);
        }
    }
    const bool moved = std::any_of(made.begin(), made.end(),
                                   [](const tuning_decision& d) { return d.stage == "in_flight"; });
    const std::size_t in_flight = t.policy.in_flight();
    if (moved && in_flight != in_flight_now_.load(std::memory_order_relaxed)) {
        in_flight_now_.store(in_flight, std::memory_order_relaxed);
        // While fast_start holds the source, the consumer raises the limit to this at the
        // first output (it clears `starting`, then reads in_flight_now_).
        if (!con_.starting.load()) {
            admission_.set_limit(in_flight);
            wake_source();
        }
    }
}

void pipeline_runtime::set_threads(int threads) {
    tuner_->threads->set(threads);
    threads_now_.store(threads, std::memory_order_relaxed);
}

std::exception_ptr pipeline_runtime::tuner_error() const {
    if (!tuner_->failed.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard lock(tuner_->mutex);
    return tuner_->error;
}

void pipeline_runtime::first_output_in_flight() {
    // The bytes of one output are known now: in_flight starts at what they allow, before the
    // source fills the pipeline (fast_start holds it until here).
    const tuner_budget& b = tuner_->policy.budget();
    const auto largest = static_cast<double>(con_.largest_bytes.load(std::memory_order_relaxed));
    if (auto e = tuner_policy::memory_check(b, largest)) {
        // The consumer's next call ends the epoch with it (next()).
        std::lock_guard lock(tuner_->mutex);
        if (!tuner_->error) tuner_->error = std::make_exception_ptr(invalid_argument(*e));
        tuner_->failed = true;
        return;
    }
    const auto items = con_.out_items.load(std::memory_order_relaxed);
    if (items == 0) return;
    const double per_item = static_cast<double>(con_.out_bytes.load(std::memory_order_relaxed)) /
                            static_cast<double>(items);
    in_flight_now_.store(std::min(in_flight_now_.load(), tuner_policy::in_flight_for(b, per_item)));
}

void pipeline_runtime::measure_output(box& m) noexcept {
    std::uint64_t bytes = 0;
    try {
        bytes = plan_.output_bytes != nullptr ? plan_.output_bytes(m.value) : 0;
    } catch (...) {
        return;  // a user's ferry_byte_size that throws: not counted
    }
    bump_owned(con_.out_bytes, bytes);
    bump_owned(con_.out_items, m.items);
    if (bytes > con_.largest_bytes.load(std::memory_order_relaxed)) {
        con_.largest_bytes.store(bytes, std::memory_order_relaxed);
    }
}

std::vector<tuning_decision> pipeline_runtime::tuning_decisions() const {
    std::lock_guard lock(tuner_->mutex);
    return tuner_->decisions;
}

}  // namespace ferry::detail
