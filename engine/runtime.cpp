// SPDX-License-Identifier: Apache-2.0
/// \file
/// The pipeline's lifecycle: construction (plan, threads, graph), epochs (start, finish, abort),
/// stop, and destruction. See runtime.hpp for the shape of the graph and where each job lives.

#include "ferry/this_call.hpp"
#include "flow.hpp"
#include "fork_guard.hpp"

#include "input_label.hpp"
#include "tuning.hpp"
#include "worker_budget.hpp"

namespace ferry::detail {

pipeline_runtime::pipeline_runtime(pipeline_spec spec, pipeline_options opts)
    : plan_(make_plan(std::move(spec), opts)),
      opts_(std::move(opts)),
      // Opens the quarantine file first, so that a path that cannot work fails build() before
      // any thread starts.
      recorder_(opts_),
      src_(plan_.source, ctl_, admission_, pool_, recorder_),
      con_(pool_),
      flow_(std::make_unique<flow_parts>()) {
    for (auto& p : plan_.stages) stages_.emplace_back(std::move(p));
    plan_.stages.clear();  // the stage_runtimes own the callables now
    make_nodes();
    link_feeds();
    // What a state means for this pipeline, and resume_from checked against it.
    const auto any = [this](bool stage_plan::*flag) {
        return std::any_of(stages_.begin(), stages_.end(),
                           [flag](const stage_runtime& s) { return s.*flag; });
    };
    ctl_.number_from(res_.take(plan_.source, plan_.shape, plan_.output_ordered,
                               any(&stage_plan::expands), any(&stage_plan::lists_window),
                               opts_.resume_from));
    output_seq_ = std::make_unique<sequencer>(plan_.output_ordered);

    // Every message in the hand-off but flat_map children carries a credit: the ring rarely
    // overflows.
    con_.prepare(plan_.in_flight + 2, plan_.credit_batch);

    // An arena has at least two slots (oneTBB gives an arena of one thread two), and a thread
    // that enters it with execute() takes one too: a shard for each, so that every arena thread
    // owns one.
    const int slots = std::max(plan_.threads, 2) + 1;
    for (auto& st : stages_) {
        st.counters.resize(slots, st.io ? 2 * (st.tuned ? st.tuned_hi : st.concurrency) : 0);
        // The tuner reads a tuned stage's call time interval by interval: every call timed.
        if (st.tuned) st.counters.time_every_call();
    }
    in_flight_now_ = plan_.in_flight;
    threads_now_ = plan_.threads;
    if (plan_.tuning) make_tuner();
    // The rows of the trace and of the NVTX ranges: the source, each stage, the consumer's waits.
    std::vector<std::string> rows{"source"};
    for (const auto& st : stages_) rows.push_back(st.name);
    rows.emplace_back("waiting for the pipeline");
    if (opts_.trace_spans > 0) {
        trace_.spans = std::make_unique<span_log>(opts_.trace_spans);
        trace_.names = rows;
        trace_.series.emplace_back("in flight");
        for (const auto& st : stages_) trace_.series.push_back("queue " + st.name);
        // The tuner's settings over time: each tuned stage's concurrency, and in_flight.
        for (const auto& st : stages_) {
            if (st.tuned) trace_.series.push_back("concurrency " + st.name);
        }
        if (plan_.tuning) {
            trace_.series.emplace_back("in_flight limit");
            trace_.series.emplace_back("threads");
        }
    }
    if (opts_.nvtx) trace_.ranges = call_ranges::make(rows);
    src_.prepare(slots, trace_.spans.get(), trace_.ranges.get());
    if (trace_.spans || trace_.ranges) {
        std::uint32_t row = 1;
        for (auto& st : stages_) {
            st.counters.trace_to(trace_.spans.get(), row);
            st.counters.ranges_to(trace_.ranges.get(), row++);
        }
        trace_.wait_row = row;
    }
    worker_budget::instance().acquire(plan_.threads);
    flow_->budget_held = true;
    try {
        for (auto& st : stages_) {
            if (st.io) {
                // A tuned stage has a thread for the top of its range; the limit says how
                // many work.
                st.pool = std::make_unique<io_pool>(st.tuned ? st.tuned_hi : st.concurrency,
                                                    trace_.spans.get(), "io " + st.name);
            }
        }
        flow_->arena = std::make_unique<tbb::task_arena>(plan_.threads, 0);
        // Built inside the arena: the graph attaches to the arena it is constructed in.
        flow_->arena->execute(tsan_body([this] {
            build_graph();
            tsan_release(this);
        }));
        tsan_acquire(this);
        if (tuner_) {
            tuner_->threads =
                std::make_unique<arena_threads>(plan_.threads, [this](std::function<void()> park) {
                    flow_->arena->enqueue(tsan_body(std::move(park)));
                });
        }
        next_report_ = clock::now() + opts_.report_every;
        monitor_.start([this] { monitor_tick(); }, [this] { return monitor_period(); });
    } catch (...) {
        flow_->nodes.clear();
        flow_->input.reset();
        flow_->graph.reset();
        flow_->arena.reset();
        worker_budget::instance().release(plan_.threads);
        flow_->budget_held = false;
        throw;
    }
}

pipeline_runtime::~pipeline_runtime() {
    ctl_.request_stop();
    {
        std::lock_guard lock(ctl_.mutex());
        abort_epoch_locked();
        // A thread that waits for the graph may pick up a parking task: none parks now.
        if (tuner_ && tuner_->threads) tuner_->threads->close();
        if (flow_->graph) {
            flow_->graph->cancel();
            flow_->graph->wait_for_all();
        }
    }
    // Calls of timed stages that ran past their deadline may still run: they use this object.
    timed_jobs_.wait();
    monitor_.close();
    recorder_.flush();
    flow_->nodes.clear();
    flow_->input.reset();
    flow_->graph.reset();
    flow_->arena.reset();
    for (auto& st : stages_) st.pool.reset();
    if (flow_->budget_held) worker_budget::instance().release(plan_.threads);
}

bool pipeline_runtime::start_epoch() {
    resume_state::opening opened;
    try {
        // Opening can take long (a resume pulls a generator to its position): it stops when
        // the pipeline does, through this_call::stop_requested().
        const call_scope scope(&ctl_.stopping(), &ctl_.aborting());
        opened = res_.open(plan_.source, ctl_.epoch());
    } catch (const error& e) {
        // Stopped while opening: nothing has started, nothing failed; a resume stays pending.
        if (e.code() != errc::cancelled || !ctl_.stopping()) fail_to_open_epoch();
        return false;
    } catch (...) {
        fail_to_open_epoch();
    }
    run_ = std::make_unique<epoch_run>(
        source_epoch(std::move(opened.cursor), opened.position, std::move(opened.skip)),
        std::move(opened.resumed), recorder_.counts.produced.load(),
        recorder_.counts.failed.load());
    res_.open_epoch(run_->resumed);
    src_.open_epoch(run_->source);
    // fast_start: admit only what the first output needs until the consumer has taken it, so
    // that every thread works on it and nothing else competes with its last steps (the batch's
    // last items, collate, waking the consumer) for a core.
    const std::size_t in_flight = in_flight_now_.load(std::memory_order_relaxed);
    const bool starting = opts_.fast_start && plan_.first_output_items < in_flight;
    con_.open_epoch(run_->consumer, starting);
    admission_.set_limit(starting ? plan_.first_output_items : in_flight);
    recorder_.counts.epochs.fetch_add(1, std::memory_order_relaxed);
    ctl_.begin();
    coarse_clock::advance();  // the calls not timed count from here until the monitor's tick
    monitor_.wake();
    tsan_release(this);
    flow_->input->activate();
    return true;
}

void pipeline_runtime::fail_to_open_epoch() {
    const auto cause = std::current_exception();
    const std::string text = describe(cause);
    record_failure("source", 0, 1, cause, text, log_level::error, {});
    ctl_.set_fatal(std::make_exception_ptr(stage_error(
        "source", 0, 1, text,
        "stage 'source' failed to open epoch " + std::to_string(ctl_.epoch()) + ": " + text)));
    std::rethrow_exception(ctl_.fatal());
}

void pipeline_runtime::finish_epoch() {
    ctl_.end();
    // Every part lets go of its piece of the epoch, then the epoch is dropped whole.
    src_.close_epoch();
    res_.close_epoch();
    con_.close_epoch();
    run_.reset();
    recorder_.flush();
}

void pipeline_runtime::cancel_for_stop() noexcept {
    // Return to the caller at once: cancel what has not started and let the calls in progress
    // finish in the background (they are told to give up); the destructor waits for them and
    // reclaims what is left. Every item still in flight now ends cancelled.
    if (!ctl_.running()) return;
    ctl_.abort();
    flow_->graph->cancel();
}

void pipeline_runtime::abandon_epoch() noexcept {
    if (orphaned()) return;  // its threads stayed in the parent: nothing here to wait for
    std::lock_guard lock(ctl_.mutex());
    abort_epoch_locked();
}

void pipeline_runtime::abort_epoch_locked() noexcept {
    if (!ctl_.running()) return;
    reclaim_epoch_locked();
    finish_epoch();
}

void pipeline_runtime::settle_stopped_epoch() noexcept {
    if (!ctl_.stopping() || !ctl_.running() || ctl_.stop_settled()) return;
    // A call in progress holds up the graph's wait: settle once none runs (nothing starts a call
    // after a stop). Calls of timed map, filter and flat_map stages do not: an abort lets go of
    // their items. A map_async call does, and its timeout or polled future needs this thread.
    if (src_.busy()) return;
    for (const auto& st : stages_) {
        if (st.timed) continue;
        if (st.counters.sum(&counter_shard::active) != 0) return;
    }
    std::unique_lock control(ctl_.mutex(), std::try_to_lock);
    if (!control.owns_lock() || !ctl_.running() || ctl_.stop_settled()) return;
    reclaim_epoch_locked();
    ctl_.settled();
}

void pipeline_runtime::reclaim_epoch_locked() noexcept {
    if (ctl_.stop_settled()) return;  // already reclaimed; nothing has run since
    ctl_.abort();
    flow_->graph->cancel();
    // Calls that ran past their timeout, or may, hold up no wait for the graph: their items are
    // let go here (their boxes are reclaimed below) while the calls run on.
    for (auto& st : stages_) st.each_node([](stage_node& n) { n.let_go(); });
    // A thread that waits for the graph may pick up a parking task: none parks while it waits.
    if (tuner_) tuner_->threads->release();
    flow_->graph->wait_for_all();
    // Now nothing runs: clear every buffer (TBB's and ours) and return the stranded boxes (each
    // serial node's state is acquired where it is forgotten: forget_epoch).
    tsan_acquire(output_seq_.get());
    // graph::reset re-attaches the graph to the arena of the calling thread: call it from inside
    // the pipeline's arena, or later epochs would run in the default arena.
    flow_->arena->execute(tsan_body([this] { flow_->graph->reset(flow::rf_reset_protocol); }));
    if (tuner_) tuner_->threads->set(tuner_->threads->active());
    for (auto& st : stages_) {
        st.each_node([](stage_node& n) { n.forget_epoch(); });
        for (const auto& shard : st.counters.shards())
            shard->active.store(0, std::memory_order_relaxed);
    }
    // What was sent toward a stage and never arrived was dropped with the graph's buffers: the
    // monitor's queues leave it out from now on.
    for (auto& st : stages_) {
        st.lost.store(
            sent_toward(st) - static_cast<std::int64_t>(st.counters.sum(&counter_shard::arrived)),
            std::memory_order_relaxed);
    }
    output_seq_->clear();
    flow_->output.clear();
    con_.reclaim();
    src_.reclaim();  // the graph is idle: no pull runs
    // What was still in the graph (in TBB's buffers, the sequencers, the hand-off, a call that
    // was let go) is cancelled: counted box by box.
    recorder_.counts.cancelled.fetch_add(pool_.reclaim_all());
    ctl_.reclaimed();
}

void pipeline_runtime::stop() noexcept {
    if (orphaned()) return;  // its threads stayed in the parent: nothing here to stop
    ctl_.request_stop();
    // A pull in progress ends its item (counted as produced) before stop() returns.
    src_.shut();
    con_.out()->interrupt();
    // A consumer inside next() cancels and cleans up itself; otherwise cancel queued work now.
    if (ctl_.mutex().try_lock()) {
        if (ctl_.running()) flow_->graph->cancel();
        ctl_.mutex().unlock();
    }
}

std::exception_ptr pipeline_runtime::epoch_failure() const {
    const auto& counts = recorder_.counts;
    return recorder_.epoch_failure(
        opts_.max_epoch_failure_rate, ctl_.epoch(),
        counts.produced.load() - run_->produced_base + res_.carried_produced(),
        counts.failed.load() - run_->failed_base + res_.carried_failed());
}

pipeline_state pipeline_runtime::state() const {
    check_same_process(built_in_, "state()");
    if (const char* why = res_.stateless()) {
        throw invalid_argument(std::string("pipeline::state(): ") + why);
    }
    std::lock_guard lock(ctl_.mutex());
    return res_.state(ctl_.epoch(), recorder_.counts, plan_.source.identity);
}

std::unique_ptr<runtime> compile(pipeline_spec spec, pipeline_options options) {
    check_build_after_fork();  // before any thread starts
    return std::make_unique<pipeline_runtime>(std::move(spec), std::move(options));
}

}  // namespace ferry::detail
