// SPDX-License-Identifier: Apache-2.0
/// \file
/// The pipeline's lifecycle: construction (plan, threads, graph), epochs (start, finish, abort),
/// stop, and destruction. See runtime.hpp for the shape of the graph and where each job lives.

#include "runtime.hpp"

#include "input_label.hpp"
#include "worker_budget.hpp"

namespace ferry::detail {

pipeline_runtime::pipeline_runtime(pipeline_spec spec, pipeline_options opts)
    : plan_(make_plan(std::move(spec), opts)),
      opts_(std::move(opts)),
      // Opens the quarantine file first, so that a path that cannot work fails build() before
      // any thread starts.
      recorder_(opts_) {
    for (auto& p : plan_.stages) {
        auto& st = stages_.emplace_back(std::move(p));
        if (st.renumbers()) st.seq = std::make_unique<sequencer>(st.ordered);
        if (st.spec.options.timeout.count() > 0) {
            st.deadlines = std::make_unique<deadline_list>();
            timed_ = true;
        }
    }
    plan_.stages.clear();  // the stage_runtimes own the callables now
    take_resume_state();
    output_seq_ = std::make_unique<sequencer>(plan_.output_ordered);

    // Every message in the hand-off but flat_map children carries a credit: the ring rarely
    // overflows.
    out_ = std::make_unique<handoff>(plan_.in_flight + 2);
    source_boxes_.reserve(box_batch);
    consumer_boxes_.reserve(2 * plan_.credit_batch + box_batch);

    // An arena has at least two slots (oneTBB gives an arena of one thread two), and a thread
    // that enters it with execute() takes one too: a shard for each, so that every arena thread
    // owns one.
    const int slots = std::max(plan_.threads, 2) + 1;
    source_counters_.resize(slots);
    for (auto& st : stages_) st.counters.resize(slots, st.io ? 2 * st.concurrency : 0);
    if (opts_.trace_spans > 0) {
        spans_ = std::make_unique<span_log>(opts_.trace_spans);
        span_names_.emplace_back("source");
        source_counters_.trace_to(spans_.get(), 0);
        for (auto& st : stages_) {
            st.counters.trace_to(spans_.get(), static_cast<std::uint32_t>(span_names_.size()));
            span_names_.push_back(st.name);
        }
        span_names_.emplace_back("waiting for the pipeline");
    }
    worker_budget::instance().acquire(plan_.threads);
    budget_held_ = true;
    try {
        for (auto& st : stages_) {
            if (st.io) {
                st.pool = std::make_unique<io_pool>(st.concurrency, spans_.get(), "io " + st.name);
            }
        }
        arena_ = std::make_unique<tbb::task_arena>(plan_.threads, 0);
        // Built inside the arena: the graph attaches to the arena it is constructed in.
        arena_->execute(tsan_body([this] {
            build_graph();
            tsan_release(this);
        }));
        tsan_acquire(this);
        monitor_ = std::thread([this] { monitor_loop(); });
    } catch (...) {
        nodes_.clear();
        input_.reset();
        graph_.reset();
        arena_.reset();
        worker_budget::instance().release(plan_.threads);
        budget_held_ = false;
        throw;
    }
}

pipeline_runtime::~pipeline_runtime() {
    stopping_ = true;
    {
        std::lock_guard lock(control_mutex_);
        abort_epoch_locked();
        if (graph_) {
            graph_->cancel();
            graph_->wait_for_all();
        }
    }
    // Calls of timed stages that ran past their deadline may still run: they use this object.
    wait_timed_jobs();
    {
        std::lock_guard lock(monitor_mutex_);
        monitor_closing_ = true;
    }
    monitor_cv_.notify_all();
    if (monitor_.joinable()) monitor_.join();
    recorder_.flush();
    nodes_.clear();
    input_.reset();
    graph_.reset();
    arena_.reset();
    for (auto& st : stages_) st.pool.reset();
    if (budget_held_) worker_budget::instance().release(plan_.threads);
}

void pipeline_runtime::start_epoch() {
    source_cursor cursor;
    try {
        cursor = open_epoch();
    } catch (...) {
        const auto cause = std::current_exception();
        const std::string text = describe(cause);
        record_failure("source", 0, 1, cause, text, log_level::error, {});
        fatal_ = std::make_exception_ptr(stage_error(
            "source", 0, 1, text,
            "stage 'source' failed to open epoch " + std::to_string(epoch_.load()) + ": " + text));
        std::rethrow_exception(fatal_);
    }
    {
        std::lock_guard lock(source_mutex_);
        cursor_ = std::move(cursor);
        source_seq_ = 0;
        source_pos_ = frontier_.position;  // 0, or a resumed epoch's position
        source_open_ = true;
    }
    // fast_start: admit only what the first output needs until the consumer has taken it, so
    // that every thread works on it and nothing else competes with its last steps (the batch's
    // last items, collate, waking the consumer) for a core.
    starting_ = opts_.fast_start && plan_.first_output_items < plan_.in_flight;
    awaiting_first_ = true;
    admission_.set_limit(starting_ ? plan_.first_output_items : plan_.in_flight);
    recorder_.counts.epochs.fetch_add(1, std::memory_order_relaxed);
    epoch_produced_base_ = recorder_.counts.produced.load();
    epoch_failed_base_ = recorder_.counts.failed.load();
    epoch_start_ = clock::now().time_since_epoch().count();
    epoch_running_ = true;
    monitor_cv_.notify_one();
    tsan_release(this);
    input_->activate();
}

void pipeline_runtime::finish_epoch() {
    elapsed_ns_.fetch_add(clock::now().time_since_epoch().count() - epoch_start_,
                          std::memory_order_relaxed);
    epoch_running_ = false;
    stop_settled_ = false;
    {
        std::lock_guard lock(source_mutex_);
        cursor_ = nullptr;
    }
    resume_active_ = false;
    carried_produced_ = 0;
    carried_failed_ = 0;
    resumed_from_ranks_.clear();
    resume_done_.clear();
    resume_done_next_ = 0;
    frontier_ = resume_point{};
    if (tracker_) tracker_->reset(0, {});
    ++epoch_;
    recorder_.flush();
}

void pipeline_runtime::cancel_for_stop() noexcept {
    // Return to the caller at once: cancel what has not started and let the calls in progress
    // finish in the background (they are told to give up); the destructor waits for them and
    // reclaims what is left. Every item still in flight now ends cancelled.
    if (!epoch_running_) return;
    aborting_ = true;
    graph_->cancel();
}

void pipeline_runtime::abandon_epoch() noexcept {
    std::lock_guard lock(control_mutex_);
    abort_epoch_locked();
}

void pipeline_runtime::abort_epoch_locked() noexcept {
    if (!epoch_running_) return;
    reclaim_epoch_locked();
    finish_epoch();
}

void pipeline_runtime::settle_stopped_epoch() noexcept {
    if (!stopping_ || !epoch_running_ || stop_settled_) return;
    // A call in progress holds up the graph's wait: settle once none runs (nothing starts a call
    // after a stop). Calls of timed map, filter and flat_map stages do not: an abort lets go of
    // their items. A map_async call does, and its timeout or polled future needs this thread.
    if (source_busy_.load(std::memory_order_relaxed)) return;
    for (const auto& st : stages_) {
        if (st.deadlines && st.spec.kind != stage_kind::map_async) continue;
        if (st.counters.sum(&counter_shard::active) != 0) return;
    }
    std::unique_lock control(control_mutex_, std::try_to_lock);
    if (!control.owns_lock() || !epoch_running_ || stop_settled_) return;
    reclaim_epoch_locked();
    stop_settled_ = true;
}

void pipeline_runtime::reclaim_epoch_locked() noexcept {
    if (stop_settled_) return;  // already reclaimed; nothing has run since
    aborting_ = true;
    graph_->cancel();
    // Calls that ran past their timeout, or may, hold up no wait for the graph: their items are
    // let go here (their boxes are reclaimed below) while the calls run on.
    release_timed_items();
    graph_->wait_for_all();
    // Now nothing runs: clear every buffer (TBB's and ours) and return the stranded boxes.
    for (auto& st : stages_) tsan_acquire(&st);
    tsan_acquire(output_seq_.get());
    // graph::reset re-attaches the graph to the arena of the calling thread: call it from inside
    // the pipeline's arena, or later epochs would run in the default arena.
    arena_->execute(tsan_body([this] { graph_->reset(flow::rf_reset_protocol); }));
    for (auto& st : stages_) {
        if (st.seq) st.seq->clear();
        st.batch_items.clear();
        st.outs.clear();
        st.next_out = 0;
        {
            std::lock_guard async_lock(st.async_mutex);
            st.async_waiting.clear();
            st.async_running = 0;
            st.timed_waiting.clear();
            st.timed_items.clear();
        }
        for (const auto& shard : st.counters.shards())
            shard->active.store(0, std::memory_order_relaxed);
    }
    output_seq_->clear();
    tsan_acquire(out_.get());
    out_->clear();
    consumer_boxes_.clear();
    consumer_credits_ = 0;
    {
        std::lock_guard lock(source_mutex_);
        source_open_ = false;
        source_boxes_.clear();
        admission_.reset();
    }
    // What was still in the graph (in TBB's buffers, the sequencers, the hand-off, a call that
    // was let go) is cancelled: counted box by box.
    recorder_.counts.cancelled.fetch_add(pool_.reclaim_all());
    halted_ = false;
    halt_after_ = std::numeric_limits<std::uint64_t>::max();
    aborting_ = false;
}

void pipeline_runtime::stop() noexcept {
    stopping_ = true;
    {
        std::lock_guard lock(source_mutex_);
        source_open_ = false;
    }
    out_->interrupt();
    // A consumer inside next() cancels and cleans up itself; otherwise cancel queued work now.
    if (control_mutex_.try_lock()) {
        if (epoch_running_) graph_->cancel();
        control_mutex_.unlock();
    }
}

std::exception_ptr pipeline_runtime::epoch_failure() const {
    const auto& counts = recorder_.counts;
    return recorder_.epoch_failure(
        opts_.max_epoch_failure_rate, epoch_.load(),
        counts.produced.load() - epoch_produced_base_ + carried_produced_,
        counts.failed.load() - epoch_failed_base_ + carried_failed_);
}

std::unique_ptr<runtime> compile(pipeline_spec spec, pipeline_options options) {
    return std::make_unique<pipeline_runtime>(std::move(spec), std::move(options));
}

}  // namespace ferry::detail
