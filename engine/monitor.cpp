// SPDX-License-Identifier: Apache-2.0
/// \file
/// The monitor thread (sampling, periodic reports, polling the futures of map_async calls) and
/// what it feeds: the stats rows, stats() and write_trace().

#include "call_nodes.hpp"
#include "runtime.hpp"

namespace ferry::detail {

void pipeline_runtime::expire_timeouts() {
    const auto now = clock::now();
    for (auto& st : stages_) st.each_node([now](stage_node& n) { n.expire(now); });
}

void pipeline_runtime::monitor_tick() {
    coarse_clock::advance();  // where the calls not timed start from (counters.hpp)
    expire_timeouts();        // the watchdog: calls past their stage's timeout
    if (!ctl_.running()) return;
    settle_stopped_epoch();
    sample();
    const auto now = clock::now();
    if (tuner_ != nullptr) tune();
    if (opts_.on_report && now >= next_report_) {
        next_report_ = now + opts_.report_every;
        try {
            opts_.on_report(stats());
        } catch (...) {
            recorder_.log("report", log_level::warning, "on_report callback threw; ignored");
        }
    }
}

std::chrono::microseconds pipeline_runtime::monitor_period() const {
    // Sampling wakes this thread, which on a machine with few cores preempts a worker: every
    // 1 ms for an epoch's first 50 ms (short epochs still get samples), then every 10 ms.
    const clock::duration running_for(clock::now().time_since_epoch().count() - ctl_.start());
    const auto sample_every = running_for < std::chrono::milliseconds(50)
                                  ? std::chrono::microseconds(1000)
                                  : std::chrono::microseconds(10000);
    return ctl_.running() ? sample_every
           : timed_       ? std::chrono::microseconds(10000)
                          : std::chrono::microseconds(50000);
}

void pipeline_runtime::sample() {
    const bool saturated = admission_.saturated(in_flight_now_.load(std::memory_order_relaxed));
    full_.add(saturated);
    if (tuner_ != nullptr) tune_sample(saturated);
    // An idle stage with nothing queued waits on downstream (backpressure) only when the
    // pipeline is full with nothing waiting upstream of it; full with items queued before it (in
    // front of a slow stage) means it waits on upstream: starved.
    auto record = [&](stage_counters& c, int concurrency, std::int64_t queued, int active,
                      bool queued_upstream) {
        std::lock_guard lock(c.sample_mutex);
        ++c.samples;
        c.utilization_sum += std::min(1.0, static_cast<double>(active) / concurrency);
        if (active < concurrency && queued <= 0) {
            if (saturated && !queued_upstream) {
                ++c.backpressured_samples;
            } else {
                ++c.starved_samples;
            }
        }
        const auto q = static_cast<std::uint64_t>(std::max<std::int64_t>(0, queued));
        c.queue_sum += static_cast<double>(q);
        c.queue_max = std::max(c.queue_max, q);
    };
    // The source has no upstream: it is busy, or held back by the in-flight limit.
    src_.sample(saturated);
    // Tracing: the items in flight and each stage's queue as counter tracks (series 0, 1, ...).
    const std::uint64_t now = ticks();
    std::uint32_t series = 1;
    if (trace_.spans) trace_.spans->add_count(0, now, admission_.out_now());
    bool queued_upstream = false;
    for (auto& st : stages_) {
        const auto active = st.counters.sum(&counter_shard::active);
        const std::int64_t queued = queued_before(st);
        // A compute stage runs on the arena's threads: with more slots than threads it can use
        // only `threads` of them at once, and is judged against those.
        const int limit = st.tuned ? st.limit() : st.concurrency;
        const int slots =
            st.own_slots ? limit : std::min(limit, threads_now_.load(std::memory_order_relaxed));
        record(st.counters, slots, queued, static_cast<int>(active), queued_upstream);
        if (trace_.spans) {
            trace_.spans->add_count(series, now,
                                    static_cast<std::uint64_t>(std::max<std::int64_t>(0, queued)));
        }
        ++series;
        queued_upstream = queued_upstream || queued > 0;
    }
    if (trace_.spans && plan_.tuning) {
        // The tuner's settings, in the order the constructor named their series.
        for (const auto& st : stages_) {
            if (!st.tuned) continue;
            trace_.spans->add_count(series++, now, static_cast<std::uint64_t>(st.limit()));
        }
        trace_.spans->add_count(series++, now, in_flight_now_.load(std::memory_order_relaxed));
        trace_.spans->add_count(
            series, now, static_cast<std::uint64_t>(threads_now_.load(std::memory_order_relaxed)));
    }
}

void pipeline_runtime::link_feeds() {
    const stage_runtime* line = nullptr;  // the main line's last stage so far (null: the source)
    stage_runtime* route = nullptr;       // the route whose branches come next
    for (auto& st : stages_) {
        if (st.route >= 0) {
            // A branch's stage: after the one before it in the branch, or at the branch's head.
            auto& tail = route->sends->tails[st.branch];
            st.feed = tail != nullptr
                          ? stage_feed{stage_feed::from::previous, tail, nullptr, 0}
                          : stage_feed{stage_feed::from::branch_head, nullptr, route, st.branch};
            tail = &st;
            continue;
        }
        st.feed = route != nullptr ? stage_feed{stage_feed::from::join, nullptr, route, 0}
                                   : stage_feed{stage_feed::from::previous, line, nullptr, 0};
        route = nullptr;
        line = &st;
        if (st.sends) route = &st;  // a route (make_nodes gave it its sends)
    }
}

std::int64_t pipeline_runtime::sent_toward(const stage_runtime& st) const noexcept {
    const auto emitted = [this](const stage_runtime* s) {
        const stage_counters& c = s != nullptr ? s->counters : src_.counters();
        return static_cast<std::int64_t>(c.sum(&counter_shard::emitted));
    };
    const auto load = [](const std::atomic<std::uint64_t>& n) {
        return static_cast<std::int64_t>(n.load(std::memory_order_relaxed));
    };
    const stage_feed& f = st.feed;
    switch (f.kind) {
        case stage_feed::from::previous:
            return emitted(f.previous);
        case stage_feed::from::branch_head:
            return load(f.route->sends->to_branch[f.branch]);
        case stage_feed::from::join:
            break;
    }
    const stage_runtime& r = *f.route;
    // A rejoining route's serial join retires gaps and the branches' ends: count what it passes
    // on. Otherwise the join is a broadcast node: what went straight, and each branch's output
    // (an empty branch's head feeds it directly).
    const route_sends& sends = *r.sends;
    if (r.rejoins) return load(sends.joined);
    std::int64_t n = load(sends.straight);
    for (std::size_t b = 0; b < r.branches; ++b) {
        n += sends.tails[b] != nullptr ? emitted(sends.tails[b]) : load(sends.to_branch[b]);
    }
    return n;
}

std::int64_t pipeline_runtime::queued_before(stage_runtime& st) const {
    // What was sent is read before what arrived: a message that arrives in between makes the
    // count low, never high. `lost` last: a sample taken while an epoch is reclaimed counts low.
    const std::int64_t sent = sent_toward(st);
    const auto arrived = static_cast<std::int64_t>(st.counters.sum(&counter_shard::arrived));
    std::int64_t queued = sent - arrived - st.lost.load(std::memory_order_relaxed);
    // An I/O stage's calls wait in its pool's queue after they have "arrived".
    if (st.pool) queued += static_cast<std::int64_t>(st.pool->waiting());
    if (st.tuned) {
        // Its gate's queue (tuned_stage.cpp).
        queued += static_cast<std::int64_t>(st.gate->waiting());
    }
    return queued;
}

stage_stats pipeline_runtime::row(const stage_runtime* st) const {
    const stage_counters& c = st != nullptr ? st->counters : src_.counters();
    stage_stats r;
    if (st != nullptr) {
        r.name = st->name;
        r.kind = st->kind;
        r.concurrency = st->tuned ? st->limit() : st->concurrency;
        r.io = st->io;
        if (st->tuned) {
            r.tuned_lo = st->tuned_lo;
            r.tuned_hi = st->tuned_hi;
        }
    } else {
        r.name = "source";
        r.kind = "source";
    }
    r.items_in = st != nullptr ? c.sum(&counter_shard::in) : c.sum(&counter_shard::out);
    r.items_out = c.sum(&counter_shard::out);
    r.failed = c.sum(&counter_shard::failed);
    r.filtered = c.sum(&counter_shard::filtered);
    r.retries = c.sum(&counter_shard::retries);
    r.truncated = c.truncated.load(std::memory_order_relaxed);
    r.counters = c.named.snapshot();
    r.cost = c.cost.load(std::memory_order_relaxed);
    r.padded_cost = c.padded_cost.load(std::memory_order_relaxed);
    const double ns_per_tick = rate_.ns_per_tick();
    auto ns = [&](double t) {
        return std::chrono::nanoseconds(static_cast<std::int64_t>(t * ns_per_tick));
    };
    r.timeouts = c.sum(&counter_shard::timeouts);
    // Calls in progress count with their time so far: a call stuck for seconds shows in p99 and
    // busy time while it runs, not only once it returns.
    auto hist = c.latency();
    double running_ticks = 0;
    std::uint64_t oldest_start = 0;
    const std::uint64_t now = ticks();
    for (const auto& shard : c.shards()) {
        const std::uint64_t start = shard->call_start.load(std::memory_order_acquire);
        if (start == 0) continue;
        const std::uint64_t item = shard->call_item.load(std::memory_order_relaxed);
        const std::uint64_t so_far = now > start ? now - start : 0;
        ++r.running;
        running_ticks += static_cast<double>(so_far);
        latency_histogram::add_sample(hist, so_far);
        if (oldest_start == 0 || start < oldest_start) {
            oldest_start = start;
            r.oldest_item = item;
        }
    }
    const auto calls = latency_histogram::total(hist);
    const auto busy = static_cast<double>(c.sum(&counter_shard::busy_ticks)) + running_ticks;
    r.busy = ns(busy);
    r.task_mean = ns(calls > 0 ? busy / static_cast<double>(calls) : 0.0);
    r.task_p50 = ns(static_cast<double>(latency_histogram::quantile(hist, 0.50)));
    r.task_p99 = ns(static_cast<double>(latency_histogram::quantile(hist, 0.99)));
    if (oldest_start != 0) r.oldest_running = ns(static_cast<double>(now - oldest_start));
    auto& sc = const_cast<stage_counters&>(c);  // the sample mutex is the only mutable part
    std::lock_guard lock(sc.sample_mutex);
    if (c.samples > 0) {
        const auto n = static_cast<double>(c.samples);
        r.utilization = c.utilization_sum / n;
        r.starved = static_cast<double>(c.starved_samples) / n;
        r.backpressured = static_cast<double>(c.backpressured_samples) / n;
        r.queue_mean = c.queue_sum / n;
    }
    r.queue_max = c.queue_max;
    return r;
}

pipeline_stats pipeline_runtime::stats() const {
    // In a forked child, a lock these rows take may have been held by a thread that stayed in
    // the parent: an error, not a hang.
    check_same_process(built_in_, "stats()");
    pipeline_stats s;
    s.stages.push_back(row(nullptr));
    for (const auto& st : stages_) s.stages.push_back(row(&st));
    recorder_.counts.snapshot(s);
    // Not a count of its own: what the others do not yet account for. Tests hold it to 0 once
    // an epoch has ended, which is what makes the sum a check rather than a definition.
    s.pending = ledger::unaccounted(s);
    s.threads = threads_now_.load(std::memory_order_relaxed);
    s.in_flight = in_flight_now_.load(std::memory_order_relaxed);
    if (tuner_ != nullptr) {
        s.tuning = tuning_decisions();
        if (plan_.memory_budget > 0) s.bytes_in_flight = tuning_bytes_in_flight();
    }
    s.elapsed = std::chrono::nanoseconds(ctl_.elapsed());
    s.consumer_wait = std::chrono::nanoseconds(con_.wait_ns());
    s.consumer_cpu = std::chrono::nanoseconds(con_.outside_cpu_ns());
    if (const auto since = con_.waiting_since(); since != 0) {
        const auto now = clock::now().time_since_epoch().count();
        s.consumer_waiting = std::chrono::nanoseconds(now > since ? now - since : 0);
    }
    s.first_output = std::chrono::nanoseconds(con_.first_output_ns());
    s.first_output_max = std::chrono::nanoseconds(con_.first_output_max_ns());
    s.full = full_.fraction();
    return s;
}

void pipeline_runtime::write_trace(std::ostream& os) const {
    check_same_process(built_in_, "write_trace()");
    if (trace_.spans == nullptr) {
        throw invalid_argument(
            "write_trace: this pipeline records no spans (build it with trace_spans > 0)");
    }
    write_chrome_trace(os, *trace_.spans, trace_.names, trace_.series, rate_.ns_per_tick());
}

}  // namespace ferry::detail
