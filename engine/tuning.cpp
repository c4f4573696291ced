// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner on the runtime's side, on the monitor thread: every `autotune.interval` it reads
/// what the interval did (each tuned stage's call time, the items the consumer took and how long
/// it waited, the share of samples the pipeline was full, the CPU time of every thread but the
/// consumer's time outside next()), hands that to `tuner_policy` and applies its decisions:
/// stage limits (`gated_node::set_limit`, call_nodes.hpp), the arena's working threads
/// (arena_threads.cpp) and `in_flight`.

#include "tuning.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "call_nodes.hpp"
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
    std::vector<stage_runtime*> measured;
    std::vector<stage_runtime*> arena;
    for (auto& st : stages_) {
        // The arena's busy time: every stage whose calls run there (batching too).
        if (!st.own_slots) arena.push_back(&st);
        // The policy measures the tuned stages and the untuned map-like ones without a timeout
        // (a bound on what a move can gain); map_async calls hold no arena thread either: an
        // I/O stage to the policy.
        if (st.tuned) {
            ranges.push_back({st.name, st.own_slots, st.tuned_lo, st.tuned_hi, st.concurrency});
        } else if (st.tunable && st.spec.options.timeout.count() == 0) {
            ranges.push_back(
                {st.name, st.own_slots, st.concurrency, st.concurrency, st.concurrency, false});
        } else {
            continue;
        }
        measured.push_back(&st);
    }
    tuner_budget budget;
    budget.cpu_cores = plan_.cpu_budget;
    budget.threads = plan_.threads;
    budget.memory_bytes = plan_.memory_budget;
    budget.min_in_flight = plan_.first_output_items;
    budget.min_in_flight_by = plan_.first_output_holds;
    budget.max_in_flight = plan_.in_flight;
    tuner_ = std::make_unique<tuner_state>(std::move(ranges), std::move(budget));
    tuner_->stages = std::move(measured);
    tuner_->arena = std::move(arena);
    tuner_->busy_ticks.assign(tuner_->stages.size(), 0);
    // With a memory budget the source admits what the first output needs until an output has
    // been measured (measure_output), with fast_start or without: before that nothing says
    // what an item holds.
    if (plan_.memory_budget > 0) {
        in_flight_now_ = std::min(in_flight_now_.load(), plan_.first_output_items);
    }
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
    const auto arena_ticks = [&] {
        double sum = 0;
        for (const stage_runtime* st : t.arena) sum += busy_ticks(st->counters, now_ticks);
        return sum;
    };
    const auto read = [&] {
        for (std::size_t i = 0; i < t.stages.size(); ++i) {
            t.busy_ticks[i] = busy_ticks(t.stages[i]->counters, now_ticks);
        }
        t.arena_ticks = arena_ticks();
        t.delivered = recorder_.counts.delivered.load(std::memory_order_relaxed);
        t.outputs_read = recorder_.counts.outputs.load(std::memory_order_relaxed);
        t.wait_ns = con_.wait_ns();
        t.cpu_ns = process_cpu_ns() - con_.outside_cpu_ns();
        t.samples = 0;
        t.full_samples = 0;
        t.in_flight_sum = 0;
        t.last = now;
        t.epochs = epochs;
    };
    const auto outputs = recorder_.counts.outputs.load(std::memory_order_relaxed);
    if (t.epochs != epochs) {
        // A new epoch (or the first): the time between epochs is no interval to judge; its
        // first interval runs from here.
        read();
        t.warm = false;
        return;
    }
    const double elapsed = std::chrono::duration<double>(now - t.last).count();
    // The epoch's first output ends its first interval, the pipeline filling (a stage that
    // holds the first batch up is raised then, not an interval later); every later interval
    // lasts `autotune.interval`, stretched until it holds a few outputs (tuner_policy).
    const bool first = !t.warm;
    if (first) {
        if (outputs == t.outputs_read) return;
        t.warm = true;
    } else if (!tuner_policy::interval_done(elapsed,
                                            std::chrono::duration<double>(plan_.tune_every).count(),
                                            static_cast<double>(outputs - t.outputs_read))) {
        return;
    }

    tuner_sample s;
    s.at_s = std::chrono::duration<double>(now - t.built).count();
    s.interval_s = elapsed;
    s.first = first;
    const double s_per_tick = rate_.ns_per_tick() / 1e9;
    for (std::size_t i = 0; i < t.stages.size(); ++i) {
        s.busy_s.push_back((busy_ticks(t.stages[i]->counters, now_ticks) - t.busy_ticks[i]) *
                           s_per_tick);
    }
    s.arena_busy_s = (arena_ticks() - t.arena_ticks) * s_per_tick;
    // The interval's delivered rate: the source items the consumer took in it, over its length.
    s.items = static_cast<double>(recorder_.counts.delivered.load(std::memory_order_relaxed) -
                                  t.delivered);
    s.outputs = static_cast<double>(outputs - t.outputs_read);
    s.consumer_wait_s = static_cast<double>(con_.wait_ns() - t.wait_ns) / 1e9;
    // A wait in progress counts up to now.
    if (const auto since = con_.waiting_since(); since != 0) {
        const auto from = std::max(since, t.last.time_since_epoch().count());
        s.consumer_wait_s +=
            std::chrono::duration<double>(clock::duration(now.time_since_epoch().count() - from))
                .count();
    }
    s.consumer_wait_s = std::min(s.consumer_wait_s, s.interval_s);
    s.full =
        t.samples > 0 ? static_cast<double>(t.full_samples) / static_cast<double>(t.samples) : 0.0;
    s.items_in_flight = t.samples > 0 ? t.in_flight_sum / static_cast<double>(t.samples) : 0.0;
    // Bytes: the most per source item measured at the outputs and at the stages, each the last
    // interval's in which one was measured; the budget counts every item in flight at the
    // larger. (An interval in which the consumer took items that a stage had grown before it
    // does not make them small.)
    const auto out_most = t.interval_item_bytes.exchange(0, std::memory_order_relaxed);
    std::uint64_t stage_most = 0;
    if (t.item_bytes.load(std::memory_order_relaxed) > 0) {
        stage_most = t.stage_item_bytes.exchange(0, std::memory_order_relaxed);
    }
    if (out_most > 0) t.last_output_bytes = out_most;
    if (stage_most > 0) t.last_stage_bytes = stage_most;
    if (out_most > 0 || stage_most > 0) {
        t.item_bytes.store(std::max(t.last_output_bytes, t.last_stage_bytes),
                           std::memory_order_relaxed);
    }
    s.item_bytes = static_cast<double>(t.item_bytes.load(std::memory_order_relaxed));
    s.largest_output_bytes = static_cast<double>(con_.largest_bytes());
    s.in_flight = in_flight_now_.load(std::memory_order_relaxed);
    s.cpu_s = static_cast<double>(process_cpu_ns() - con_.outside_cpu_ns() - t.cpu_ns) / 1e9;

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
        if (t.stages[i]->tuned && limit != t.stages[i]->limit()) {
            t.stages[i]->gate->set_limit(limit);  // a raised one starts queued calls now
        }
    }
    const bool moved = std::any_of(made.begin(), made.end(),
                                   [](const tuning_decision& d) { return d.stage == "in_flight"; });
    const std::size_t in_flight = t.policy.in_flight();
    if (moved && in_flight != in_flight_now_.load(std::memory_order_relaxed)) {
        in_flight_now_.store(in_flight, std::memory_order_relaxed);
        // While fast_start holds the source, the consumer raises the limit to this at the
        // first output (it clears `starting`, then reads in_flight_now_).
        if (!con_.starting()) {
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
    // fast_start's end: where no output has carried a source item's accounting yet (a
    // batch_by window's first batches), the source stays held until one has (measure_output).
    if (!tuner_->sized) {
        in_flight_now_.store(std::min(in_flight_now_.load(), plan_.first_output_items));
    }
}

void pipeline_runtime::measure_stage_output(const stage_runtime& st, box& m) noexcept {
    const auto kind = st.spec.kind;
    const bool expands = kind == stage_kind::flat_map;
    const bool maps =
        kind == stage_kind::map || kind == stage_kind::filter || kind == stage_kind::map_async;
    if (st.spec.value_bytes == nullptr || m.items == 0 ||
        !(expands || (maps && m.value.has_value()))) {
        return;
    }
    std::uint64_t bytes = 0;
    try {
        if (expands) {
            // A flat_map's outputs all exist at once, as its input's expansion: the source
            // items it carries hold their sum.
            for (auto& child : m.children) bytes += st.spec.value_bytes(child);
        } else {
            bytes = st.spec.value_bytes(m.value);
        }
    } catch (...) {
        return;  // a user's ferry_byte_size that throws: not counted
    }
    note_stage_bytes(bytes, m.items);
}

void pipeline_runtime::measure_source_output(box& m) noexcept {
    const auto value_bytes = plan_.source.value_bytes;
    if (value_bytes == nullptr || m.kind != msg_kind::value || m.items == 0) return;
    std::uint64_t bytes = 0;
    try {
        bytes = value_bytes(m.value);
    } catch (...) {
        return;  // a user's ferry_byte_size that throws: not counted
    }
    note_stage_bytes(bytes, m.items);
}

void pipeline_runtime::note_stage_bytes(std::uint64_t bytes, std::uint64_t items) noexcept {
    const std::uint64_t per_item = (bytes + items - 1) / items;
    auto& most = tuner_->stage_item_bytes;
    for (auto now = most.load(std::memory_order_relaxed);
         per_item > now && !most.compare_exchange_weak(now, per_item, std::memory_order_relaxed);) {
    }
}

void pipeline_runtime::measure_output(box& m) noexcept {
    std::uint64_t bytes = 0;
    try {
        bytes = plan_.output_bytes != nullptr ? plan_.output_bytes(m.value) : 0;
    } catch (...) {
        return;  // a user's ferry_byte_size that throws: not counted
    }
    const std::uint64_t out_bytes = con_.note_output_bytes(bytes);
    if (m.items == 0) return;  // its bytes count with the output that carries its items
    auto& t = *tuner_;
    const auto per_item =
        (out_bytes - std::exchange(t.carried_bytes, out_bytes) + m.items - 1) / m.items;
    auto& most = t.interval_item_bytes;
    for (auto now = most.load(std::memory_order_relaxed);
         per_item > now && !most.compare_exchange_weak(now, per_item, std::memory_order_relaxed);) {
    }
    if (t.sized) return;
    // The first measurement: a budget the shape cannot keep is the error the next next()
    // throws; else in_flight is what the budget holds of such items, and the source, held for
    // it, fills to that (at once, or at fast_start's end: end_start applies in_flight_now_).
    t.sized = true;
    // The most an item held: as it leaves, or in an earlier stage's output (measure_stage_output).
    const std::uint64_t largest =
        std::max(per_item, t.stage_item_bytes.load(std::memory_order_relaxed));
    t.item_bytes.store(largest, std::memory_order_relaxed);
    const tuner_budget& b = t.policy.budget();
    try {
        if (auto e = tuner_policy::memory_check(b, static_cast<double>(largest),
                                                static_cast<double>(con_.largest_bytes()))) {
            std::lock_guard lock(t.mutex);
            if (!t.error) t.error = std::make_exception_ptr(invalid_argument(*e));
            t.failed = true;
            return;
        }
    } catch (...) {
        return;  // no memory for the message: the monitor's next interval checks again
    }
    in_flight_now_.store(tuner_policy::in_flight_for(b, static_cast<double>(largest)));
    if (!con_.starting()) {
        admission_.set_limit(in_flight_now_.load());
        wake_source();
    }
}

std::uint64_t pipeline_runtime::tuning_bytes_in_flight() const noexcept {
    return admission_.out_now() * tuner_->item_bytes.load(std::memory_order_relaxed);
}

std::vector<tuning_decision> pipeline_runtime::tuning_decisions() const {
    std::lock_guard lock(tuner_->mutex);
    return tuner_->decisions;
}

}  // namespace ferry::detail
