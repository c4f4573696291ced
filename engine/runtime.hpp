// SPDX-License-Identifier: Apache-2.0
/// \file
/// pipeline_runtime: the compiled pipeline, and the one place its parts meet.
///
/// Shape of the compiled graph (built in graph.cpp):
///
///   input_node(source) -> stage nodes ... -> output node -> consumer
///
///  * map / filter / flat_map run in `function_node`s (concurrency n) on the pipeline's arena, or
///    in an `async_node` fed to the stage's own I/O threads (`executor = io`); map_async uses an
///    `async_node` whose calls complete through callbacks or the monitor's future poller.
///  * batch, batch_by, the expansion after flat_map, unbatch and the output are serial
///    renumbering nodes: a `sequencer` restores source order (unless unordered), then they start
///    a new sequence space. The output's body runs one at a time through a `serial_combiner`
///    (no TBB gate, no task: serial_combiner.hpp), on whichever thread sends it a message.
///  * Every message is a pooled `box*`. Filtered and skipped items keep flowing as gaps so that
///    sequencers never wait for a number that will not come; every message the source emits
///    carries one credit (admission.hpp), so at most `in_flight` source items are ever inside the
///    graph.
///  * Epochs re-open the source and re-activate the input node on the same graph. An abandoned
///    epoch is cancelled, waited for and reset (`graph::reset`), and the pool reclaims its boxes.
///
/// Where each job lives (engine/README.md draws who owns which state and which lock guards it):
///   plan.cpp        options -> validated plan, and what each stage kind means at run time
///   runtime.cpp     construction, epochs (making and dropping the epoch_run), stop, abort,
///                   state(), destruction
///   graph.cpp       the flow graph: the only file that makes `flow::` nodes, and each stage's
///                   node state (make_nodes); with plan.cpp and invoke.hpp the only files that
///                   ask a stage's kind
///   source.cpp      source_driver::pull: a credit, a box, the epoch's cursor
///   invoke.hpp      calling a map / filter / flat_map by its kind, on every executor
///   stage.cpp       a stage's call: apply, retry, what any call came to (finish_call), failures
///                   (fail_item), filtered gaps
///   consumer.cpp    next(); consumer_side's wait on the hand-off (the adaptive spin)
///   resume.cpp      resume_state: taking a pipeline_state, checking it, opening a resumed epoch,
///                   the state now
///   monitor.cpp     the monitor's tick: the watchdog, sampling, reports; stats()
///   tuning.cpp      the tuner's intervals and what it moves
/// runtime.cpp, graph.cpp, stage.cpp, consumer.cpp, monitor.cpp and tuning.cpp define
/// pipeline_runtime's own methods, and no other file does. Each stage kind's state and body is a
/// node of its own (stage_runtime.hpp's `stage_node`), which reaches the runtime through a
/// `stage_host` (stage_host.hpp) only:
///   renumber_node.hpp  batch, unbatch, flat_map's expansion (renumber.cpp), batch_by's window
///                      (cost_batch.cpp)
///   route_node.hpp     route (route.cpp) and a rejoining route's join (rejoin.cpp)
///   call_nodes.hpp     tuned stages (tuned_stage.cpp), map_async (async_stage.cpp), stages with
///                      a timeout (timed_stage.cpp)
/// The parts the runtime composes, each with its own state and lock, none including flow_graph.h,
/// each a class whose fields only its own methods write:
///   epoch_control.hpp, source_driver.hpp, consumer_side.hpp, resume_state.hpp, and the epoch's
///   pieces they hold while it runs (epoch_run.hpp, made per epoch);
///   failure_recorder.*, monitor_thread.*, timed_jobs.hpp; the TBB side (arena, graph, gateways)
///   is flow.hpp's `flow_parts`, included only by graph.cpp, runtime.cpp, async_stage.cpp,
///   timed_stage.cpp and tuned_stage.cpp; and one helper each:
///   admission.hpp, ledger.hpp, trace.*, call_ranges.* (NVTX), io_pool.*, worker_budget.*,
///   failure_log.*, quarantine_writer.*, input_label.hpp, deadlines.hpp, sequencer.hpp,
///   handoff.hpp, stage_runtime.hpp (what every stage holds at run time), call_gate.hpp (the
///   slots of the call nodes), call_hook.hpp (the bookkeeping around every user call),
///   attempts.hpp (the retry guard); flow.hpp's `launch` starts every call on a stage's I/O
///   threads or the arena.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "admission.hpp"
#include "box.hpp"
#include "consumer_side.hpp"
#include "counters.hpp"
#include "deadlines.hpp"
#include "epoch_control.hpp"
#include "epoch_run.hpp"
#include "failure_recorder.hpp"
#include "ferry/detail/spec.hpp"
#include "ferry/item.hpp"
#include "fork_guard.hpp"
#include "io_pool.hpp"
#include "monitor_thread.hpp"
#include "plan.hpp"
#include "resume_state.hpp"
#include "sequencer.hpp"
#include "source_driver.hpp"
#include "stage_host.hpp"
#include "stage_runtime.hpp"
#include "timed_jobs.hpp"
#include "trace.hpp"
#include "tsan.hpp"

namespace ferry::detail {

using clock = std::chrono::steady_clock;

class gateway;      // flow.hpp: an async node's way back into the graph
struct flow_parts;  // flow.hpp: the arena and the flow graph

struct tuner_state;  // tuning.hpp

/// Tracing (`trace_spans` > 0): the spans, and the names of their rows: the source, each stage,
/// and the consumer's waits last; and the same rows as NVTX ranges.
struct trace_rows {
    std::unique_ptr<span_log> spans;
    std::vector<std::string> names;
    /// The counter tracks: "in flight", then "queue <stage>" for each stage.
    std::vector<std::string> series;
    /// NVTX ranges (`pipeline_options::nvtx`): null when nothing would see them.
    std::unique_ptr<call_ranges> ranges;
    std::uint32_t wait_row = 0;  ///< the consumer's waits' row
};

class pipeline_runtime final : public runtime {
  public:
    pipeline_runtime(pipeline_spec spec, pipeline_options opts);
    ~pipeline_runtime() override;
    pipeline_runtime(const pipeline_runtime&) = delete;
    pipeline_runtime& operator=(const pipeline_runtime&) = delete;

    bool next(any_value& out) override;
    next_poll try_next(any_value& out) override;
    [[nodiscard]] bool tuning() const noexcept override { return tuner_ != nullptr; }
    void consumer_enters() noexcept override { con_.enter_next(tuner_ != nullptr); }
    void consumer_leaves() noexcept override { con_.leave_next(tuner_ != nullptr); }
    [[nodiscard]] bool orphaned() const noexcept override { return built_in_ != fork_generation(); }
    void abandon_epoch() noexcept override;
    void stop() noexcept override;
    [[nodiscard]] bool epoch_running() const noexcept override { return ctl_.running(); }
    [[nodiscard]] pipeline_stats stats() const override;
    [[nodiscard]] std::vector<failure> failures() const override {
        check_same_process(built_in_, "failures()");  // its recorder's lock may be held there
        return recorder_.failures();
    }
    void write_trace(std::ostream& os) const override;
    [[nodiscard]] pipeline_state state() const override;

  private:
    /// The stages' nodes reach the runtime through a stage_host (stage_host.hpp), which forwards
    /// to the few private members below it names.
    friend class stage_host;

    // flow.hpp
    /// Starts a call's `job` where the stage's calls run: on its I/O threads (`executor = io`),
    /// else as a task on the pipeline's arena. The one place a call is launched.
    template <class F>
    void launch(const stage_runtime& st, F&& job);
    /// Passes `m` on through `gw`, counted as emitted by `st` (after a flat_map's call, its
    /// renumbering node counts what it emits).
    void pass_on(const stage_runtime& st, msg m, gateway& gw, const shard_writer& w);

    // graph.cpp
    /// Construction: each stage's node, by its kind (the one place besides build_graph, plan.cpp
    /// and invoke.hpp that asks a stage's kind).
    void make_nodes();
    void build_graph();
    /// Starts (or restarts, after it parked) the graph's input node.
    void activate_source();

    /// The input node's body (source_driver::pull, source.cpp).
    bool source_pull(msg& out) {
        if (!src_.pull(out)) return false;
        if (plan_.memory_budget > 0 && tuner_ != nullptr) measure_source_output(*out);
        return true;
    }

    // stage.cpp
    /// Turns an element that will not be processed into a gap, so no later stage ever sees a
    /// value of the wrong type; its items are cancelled here, where they are dropped.
    void drop_unprocessed(msg m) noexcept {
        m->cancelled = true;  // not done: an unordered pipeline's state leaves it to do again
        recorder_.counts.cancelled.fetch_add(m->items, std::memory_order_relaxed);
        m->items = 0;
        m->value.reset();
        m->children.clear();
        m->kind = msg_kind::gap;
    }
    void fail_item(stage_runtime& st, msg m, const std::exception_ptr& cause);
    /// What a call on `m` came to, for every stage kind that calls (stage.cpp): an epoch being
    /// cancelled drops it (cancelled whatever the call returned: a call that gave up when asked
    /// is no failure); a failure (`err`) goes to `fail_item`; a filter's rejection (`!keep`) is a
    /// filtered gap; a value is counted out (after a flat_map, by its renumbering node). A
    /// success counts in the stage's failure budget. The result is in `m` already.
    void finish_call(stage_runtime& st, msg m, const shard_writer& w, const std::exception_ptr& err,
                     bool keep = true);
    /// True for an element whose work would be wasted: its epoch is being cancelled, or it comes
    /// after an item that failed the pipeline.
    [[nodiscard]] bool should_drop(msg m) const noexcept {
        return ctl_.should_drop(m->source_index);
    }
    /// A map / filter / flat_map stage's work on `m`, on whichever thread runs it: apply the
    /// function to a value (or drop it when the work would be wasted), then count `m` emitted
    /// (flat_map counts its children when it expands them).
    void run_stage(stage_runtime& st, msg m, const shard_writer& w) {
        if (m->kind == msg_kind::value) {
            if (should_drop(m)) {
                drop_unprocessed(m);
            } else {
                apply(st, m, w);
            }
        }
        if (!st.counted_after) w.add(&counter_shard::emitted);
    }
    void apply(stage_runtime& st, msg m, const shard_writer& w);
    /// The `item_info` of `m` for a stage that asks for it (the current epoch's).
    [[nodiscard]] item_info item_of(const box& m) const {
        item_info info;
        info.epoch = ctl_.epoch();
        info.position = m.source_index;
        info.index = plan_.source.index_of ? plan_.source.index_of(info.epoch, info.position)
                                           : info.position;
        info.seed = plan_.source.seed;
        return info;
    }
    /// Counts `m`'s items as filtered (by stage `w`): it then leaves the graph as a gap.
    void count_filtered(msg m, const shard_writer& w) noexcept {
        w.add(&counter_shard::filtered);
        recorder_.counts.filtered.fetch_add(m->items, std::memory_order_relaxed);
        m->items = 0;
    }
    /// The one record of a failure, in the current epoch (failure_recorder::record).
    void record_failure(const std::string& stage, std::uint64_t item, std::uint64_t items,
                        const std::exception_ptr& cause, const std::string& text, log_level level,
                        const std::string& line, const std::string& input = {}) {
        recorder_.record(stage, item, items, ctl_.epoch(), cause, text, level, line, input);
    }

    // tuning.cpp
    /// Construction: the tuner over the tuned stages, with the plan's budgets.
    void make_tuner();
    /// The monitor, every `autotune.interval` while an epoch runs: measure, decide, apply.
    void tune();
    /// The monitor's sample: whether the in-flight limit was reached (for the tuner's interval).
    void tune_sample(bool saturated) noexcept;
    /// The tuner's decisions so far (stats()).
    [[nodiscard]] std::vector<tuning_decision> tuning_decisions() const;
    /// The bytes the items in flight hold as the memory budget counts them (stats()).
    [[nodiscard]] std::uint64_t tuning_bytes_in_flight() const noexcept;
    /// The error a budget that cannot work ends the epoch with (the consumer throws it), or null.
    [[nodiscard]] std::exception_ptr tuner_error() const;
    /// The consumer takes `m`: its bytes for the memory budget (before its value moves out).
    void measure_output(box& m) noexcept;
    /// A call of `st` made `m`: its bytes per source item for the memory budget, where `st`
    /// is a map, filter or map_async stage whose outputs the builder can measure.
    void measure_stage_output(const stage_runtime& st, box& m) noexcept;
    /// The same for an item as the source made it (`source_spec::value_bytes`).
    void measure_source_output(box& m) noexcept;
    /// Raises `tuner_state::stage_item_bytes` to `bytes` over `items` source items.
    void note_stage_bytes(std::uint64_t bytes, std::uint64_t items) noexcept;
    /// The tuner moves the arena's working threads (arena_threads.hpp).
    void set_threads(int threads);
    /// fast_start's end, with a memory budget: the source stays held to what the first output
    /// needs until an output has carried a source item's bytes (measure_output sizes in_flight
    /// from the first, or finds the budget cannot be kept: the error the next next() throws).
    void first_output_in_flight();

    // consumer.cpp
    void deliver(msg m) { con_.out()->push(m); }
    /// The consumer's part of a message it took (control mutex held): an output into `out`
    /// (`value`), the epoch's end (`end`, or the epoch's error thrown), a stage's error thrown,
    /// a gap retired (`not_ready`: take the next message).
    next_poll take(msg m, any_value& out);
    /// A gap leaves the graph: its box goes back, its credits too.
    void retire_gap(msg m) {
        res_.left(*m);
        const auto credits = m->credits;
        pool_.release(m);
        return_credits(credits);
    }
    void return_credits(std::uint64_t n) {
        if (admission_.give_back(n)) activate_source();
    }
    /// After credits were returned or the limit raised: re-activates a parked source (once).
    void wake_source() {
        if (admission_.unpark()) activate_source();
    }
    /// The consumer took the epoch's first output: the source may fill `in_flight` now.
    void end_start();
    /// The consumer's boxes go back to the pool, then its credits to the source.
    void flush_consumer_credits() {
        if (const std::uint64_t credits = con_.flush(); credits != 0) return_credits(credits);
    }

    // runtime.cpp
    /// Opens the epoch (makes `run_` and hands each part its piece) and sets the graph going;
    /// false when a stop came while the source was being opened (nothing started).
    bool start_epoch();
    /// start_epoch's failure to open the source (the exception in flight): recorded, and the
    /// pipeline's fatal error from then on.
    [[noreturn]] void fail_to_open_epoch();
    /// The epoch ends: each part lets go of its piece, and `run_` is dropped.
    void finish_epoch();
    void abort_epoch_locked() noexcept;
    /// The first half of an abort: waits for the graph, clears every buffer and counts what was
    /// still in it as cancelled; the epoch stays open (a stopped epoch's `state()` still names
    /// its position). Under ctl_.mutex().
    void reclaim_epoch_locked() noexcept;
    void cancel_for_stop() noexcept;
    /// The epoch's items can only end cancelled (epoch_control::cancelling).
    [[nodiscard]] bool cancelling() const noexcept { return ctl_.cancelling(); }
    /// A stopped epoch whose calls have all ended: its items still in the graph (queued, never
    /// to run) are counted cancelled now rather than at destruction, so `pending` reaches 0.
    /// From the monitor; does nothing while a call runs or the consumer holds the control mutex.
    void settle_stopped_epoch() noexcept;
    /// At an epoch's end: the error to throw when more than `max_epoch_failure_rate` of its items
    /// failed, else null (failure_recorder::epoch_failure on this epoch's counts).
    [[nodiscard]] std::exception_ptr epoch_failure() const;

    // monitor.cpp
    /// The watchdog: expires the calls past their deadlines (every stage with a timeout).
    void expire_timeouts();
    /// One tick of the monitor thread: the watchdog, and while an epoch runs the stop's
    /// settling, a sample and the periodic report.
    void monitor_tick();
    /// How long the monitor sleeps after a tick.
    [[nodiscard]] std::chrono::microseconds monitor_period() const;
    void sample();
    [[nodiscard]] stage_stats row(const stage_runtime* st) const;
    /// Construction: where each stage's input comes from (`stage_runtime::feed`), and each
    /// route's branch tails (`route_sends::tails`).
    void link_feeds();
    /// Messages sent toward `st` so far (all epochs): what the stage or route that feeds it
    /// passed on to it. Less what arrived and what was lost, it is what waits in front of `st`.
    [[nodiscard]] std::int64_t sent_toward(const stage_runtime& st) const noexcept;
    /// What waits in front of `st` now (its I/O pool's and its gate's queues included).
    [[nodiscard]] std::int64_t queued_before(stage_runtime& st) const;

    /// The fork generation that built it: the only process where its threads run.
    const std::uint64_t built_in_ = fork_generation();
    pipeline_plan plan_;  ///< its stages moved to stages_
    pipeline_options opts_;

    tick_rate rate_;
    box_pool pool_;
    std::list<stage_runtime> stages_;  // stable addresses: nodes capture references
    trace_rows trace_;                 ///< tracing (`trace_spans` > 0)
    std::unique_ptr<sequencer> output_seq_;
    failure_recorder recorder_;  ///< the ledger, the failure log, the quarantine file
    admission admission_;

    // What the source, the consumer and the workers write per item sits on separate cache lines
    // (each group aligned to its own, and each piece of `run_`), so that no line moves between
    // cores on every item.
    source_driver src_;  ///< the source's pull, its boxes and counters (source.cpp)
    consumer_side con_;  ///< the hand-off, credits and boxes back (consumer.cpp)
    resume_state res_;   ///< resume_from, the frontier, a resumed epoch's start (resume.cpp)

    // Control: the epoch, its flags and the consumer's lock (epoch_control.hpp).
    epoch_control ctl_;
    /// The running epoch (epoch_run.hpp): made by start_epoch, dropped by finish_epoch; null
    /// between epochs. The consumer's, under ctl_.mutex(); each part holds its own piece.
    std::unique_ptr<epoch_run> run_;

    fullness_samples full_;          ///< was the in-flight limit reached? (sampled)
    clock::time_point next_report_;  ///< the monitor's next on_report (monitor thread only)

    /// The tuner (tuning.cpp), when the plan tunes: null otherwise.
    std::unique_ptr<tuner_state> tuner_;
    /// in_flight now: the plan's, or what the tuner's memory budget allows.
    std::atomic<std::size_t> in_flight_now_{0};
    /// The arena's threads that work now: the plan's, or what the tuner's CPU budget allows.
    std::atomic<int> threads_now_{0};

    timed_jobs timed_jobs_;  ///< calls of timed stages not returned (destruction waits)
    bool timed_ = false;  ///< some stage has deadlines: the monitor keeps watching between epochs

    /// Sampling, periodic reports, the watchdog, polling of futures: its ticks run monitor_tick.
    monitor_thread monitor_;

    std::unique_ptr<flow_parts> flow_;  ///< last, so that it is destroyed first
};

// stage_host's forwarders (stage_host.hpp): inline, so that a node's path costs what the
// runtime's own did.
inline bool stage_host::should_drop(msg m) const noexcept {
    return rt_->should_drop(m);
}
inline bool stage_host::cancelling() const noexcept {
    return rt_->ctl_.cancelling();
}
inline bool stage_host::aborting() const noexcept {
    return rt_->ctl_.aborting();
}
inline const std::atomic<bool>& stage_host::stopping_flag() const noexcept {
    return rt_->ctl_.stopping();
}
inline const std::atomic<bool>& stage_host::aborting_flag() const noexcept {
    return rt_->ctl_.aborting();
}
inline item_info stage_host::item_of(const box& m) const {
    return rt_->item_of(m);
}
inline int stage_host::threads_now() const noexcept {
    return rt_->threads_now_.load(std::memory_order_relaxed);
}
inline void stage_host::run_stage(stage_runtime& st, msg m, const shard_writer& w) {
    rt_->run_stage(st, m, w);
}
inline void stage_host::finish_call(stage_runtime& st, msg m, const shard_writer& w,
                                    const std::exception_ptr& err, bool keep) {
    rt_->finish_call(st, m, w, err, keep);
}
inline void stage_host::fail_item(stage_runtime& st, msg m, const std::exception_ptr& cause) {
    rt_->fail_item(st, m, cause);
}
inline void stage_host::drop_unprocessed(msg m) noexcept {
    rt_->drop_unprocessed(m);
}
inline void stage_host::count_filtered(msg m, const shard_writer& w) noexcept {
    rt_->count_filtered(m, w);
}
inline void stage_host::retire_gap(msg m) {
    rt_->retire_gap(m);
}
inline box* stage_host::acquire_box() {
    return rt_->pool_.acquire();
}
inline void stage_host::release_box(box* b) noexcept {
    rt_->pool_.release(b);
}
inline bool stage_host::tracks_positions() const noexcept {
    return rt_->res_.tracker() != nullptr;
}
inline std::size_t stage_host::skip(const resume_point& start) const noexcept {
    return rt_->res_.skip(start);
}
inline void stage_host::poll_later(monitor_thread::try_take_fn try_take,
                                   monitor_thread::done_fn done) {
    rt_->monitor_.poll_later(std::move(try_take), std::move(done));
}
inline timed_jobs& stage_host::timed_calls() noexcept {
    return rt_->timed_jobs_;
}

}  // namespace ferry::detail
