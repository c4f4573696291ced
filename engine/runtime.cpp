// SPDX-License-Identifier: Apache-2.0
/// \file
/// The graph compiler and runtime: turns a pipeline_spec into a oneTBB flow graph and runs it.
///
/// Shape of the compiled graph:
///
///   input_node(source) -> stage nodes ... -> output node -> consumer
///
///  * map / filter / flat_map run in `function_node`s (concurrency n) on the pipeline's arena, or
///    in an `async_node` fed to the stage's own I/O threads (`executor = io`); map_async uses an
///    `async_node` whose calls complete through callbacks or the monitor's future poller.
///  * batch, the expansion after flat_map, unbatch and the output are serial renumbering nodes: a
///    `sequencer` restores source order (unless unordered), then they start a new sequence space.
///  * Every message is a pooled `box*`. Filtered and skipped items keep flowing as gaps so that
///    sequencers never wait for a number that will not come; every message the source emits
///    carries one credit, returned when the consumer takes it (or a gap is retired), so at most
///    `in_flight` source items are ever inside the graph. The source takes the credits itself
///    (`take_credit`): out of credits it parks (its input node stops) and whoever returns credits
///    re-activates it. (A `limiter_node` did this before; it cost a lock and a broadcast per item
///    and a task submitted from the consumer thread per credit batch.)
///  * Epochs re-open the source and re-activate the input node on the same graph. An abandoned
///    epoch is cancelled, waited for and reset (`graph::reset`), and the pool reclaims its boxes.

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "box.hpp"
#include "counters.hpp"
#include "ferry/detail/spec.hpp"
#include "ferry/error.hpp"
#include "handoff.hpp"
#include "sequencer.hpp"
#include "tsan.hpp"

namespace ferry::detail {
namespace {

namespace flow = tbb::flow;
using clock = std::chrono::steady_clock;

/// Boxes the source takes from the pool, and the consumer gives back, per pool lock.
constexpr std::size_t box_batch = 16;

const char* kind_name(stage_kind k) {
    switch (k) {
        case stage_kind::map:
            return "map";
        case stage_kind::filter:
            return "filter";
        case stage_kind::flat_map:
            return "flat_map";
        case stage_kind::batch:
            return "batch";
        case stage_kind::unbatch:
            return "unbatch";
        case stage_kind::map_async:
            return "map_async";
    }
    return "?";
}

/// Raises TBB's process-wide worker limit while pipelines need it: by default oneTBB keeps
/// hardware_concurrency - 1 workers, so an arena of N threads would get fewer than N workers on a
/// small machine. Holds one global_control at the largest value any live pipeline asked for
/// (a user's own, smaller global_control still wins: TBB applies the minimum).
class worker_budget {
  public:
    static worker_budget& instance() {
        static worker_budget b;
        return b;
    }
    void acquire(int threads) {
        std::lock_guard lock(mutex_);
        wanted_.insert(threads + 1);
        apply();
    }
    void release(int threads) noexcept {
        std::lock_guard lock(mutex_);
        wanted_.erase(wanted_.find(threads + 1));
        apply();
    }

  private:
    void apply() noexcept {
        const int want = wanted_.empty() ? 0 : *wanted_.rbegin();
        if (want == current_) return;
        try {
            std::unique_ptr<tbb::global_control> next;
            if (want > 0) {
                next = std::make_unique<tbb::global_control>(
                    tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(want));
            }
            control_ = std::move(next);
            current_ = want;
        } catch (...) {
            // Keeping the old limit only costs parallelism.
        }
    }
    std::mutex mutex_;
    std::multiset<int> wanted_;
    std::unique_ptr<tbb::global_control> control_;
    int current_ = 0;
};

/// Rate-limited failure logging: `burst` lines per stage per window, then a count, then one
/// summary line when the window rolls over (or the epoch ends).
class failure_log {
  public:
    failure_log(logger sink, int burst, std::chrono::milliseconds window)
        : sink_(std::move(sink)), burst_(std::max(0, burst)), window_(window) {
        if (!sink_) {
            sink_ = [](log_level level, std::string_view line) {
                const char* tag = level == log_level::error     ? "error"
                                  : level == log_level::warning ? "warning"
                                                                : "info";
                std::fprintf(stderr, "ferry %s: %.*s\n", tag, static_cast<int>(line.size()),
                             line.data());
            };
        }
    }

    void log(const std::string& stage, log_level level, const std::string& line) {
        std::string summary;
        bool print = false;
        {
            std::lock_guard lock(mutex_);
            auto& w = windows_[stage];
            const auto now = clock::now();
            if (now - w.start >= window_) {
                summary = summary_line(stage, w);
                w.start = now;
                w.printed = 0;
                w.suppressed = 0;
            }
            if (w.printed < burst_) {
                ++w.printed;
                print = true;
            } else {
                ++w.suppressed;
            }
        }
        emit(log_level::warning, summary);
        if (print) emit(level, line);
    }

    /// Prints the pending summaries (end of an epoch, destruction).
    void flush() {
        std::vector<std::string> lines;
        {
            std::lock_guard lock(mutex_);
            for (auto& [stage, w] : windows_) {
                lines.push_back(summary_line(stage, w));
                w.suppressed = 0;
            }
        }
        for (auto& l : lines) emit(log_level::warning, l);
    }

  private:
    struct window {
        clock::time_point start{};
        int printed = 0;
        std::uint64_t suppressed = 0;
    };
    std::string summary_line(const std::string& stage, const window& w) const {
        if (w.suppressed == 0) return {};
        return "stage '" + stage + "': " + std::to_string(w.suppressed) +
               " more failures not shown (see pipeline::failures())";
    }
    void emit(log_level level, const std::string& line) {
        if (line.empty()) return;
        try {
            sink_(level, line);
        } catch (...) {
            // A throwing logger must not take the pipeline down.
        }
    }

    logger sink_;
    int burst_;
    std::chrono::milliseconds window_;
    std::mutex mutex_;
    std::map<std::string, window> windows_;
};

/// A blocking-I/O thread pool of one stage: `n` threads, a queue bounded by the in-flight limit.
class io_pool {
  public:
    using job = std::function<void()>;
    /// `spans`: where a traced pipeline names these threads (`name #1`, `name #2`, ...).
    explicit io_pool(int n, span_log* spans = nullptr, const std::string& name = {}) {
        threads_.reserve(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) {
            threads_.emplace_back([this, spans, label = name + " #" + std::to_string(i + 1)] {
                if (spans != nullptr) spans->name_thread(label);
                run();
            });
        }
    }
    ~io_pool() {
        {
            std::lock_guard lock(mutex_);
            closing_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_) t.join();
    }
    void submit(job j) {
        {
            std::lock_guard lock(mutex_);
            jobs_.push_back(std::move(j));
            waiting_.store(jobs_.size(), std::memory_order_relaxed);
        }
        cv_.notify_one();
    }
    /// Calls submitted and not yet started (sampled for the stage's queue).
    [[nodiscard]] std::size_t waiting() const noexcept {
        return waiting_.load(std::memory_order_relaxed);
    }

  private:
    void run() {
        for (;;) {
            job j;
            {
                std::unique_lock lock(mutex_);
                cv_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
                if (jobs_.empty()) return;
                j = std::move(jobs_.front());
                jobs_.pop_front();
                waiting_.store(jobs_.size(), std::memory_order_relaxed);
            }
            j();
        }
    }
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<job> jobs_;
    bool closing_ = false;
    std::atomic<std::size_t> waiting_{0};
    std::vector<std::thread> threads_;
};

/// The ferry::errc of a ferry::error; `stage_failed` for any other exception.
errc code_of(const std::exception_ptr& e) noexcept {
    try {
        std::rethrow_exception(e);
    } catch (const error& x) {
        return x.code();
    } catch (...) {
        return errc::stage_failed;
    }
}

std::string item_label(const box& b) {
    if (b.items > 1) {
        return std::to_string(b.items) + " items from item " + std::to_string(b.source_index);
    }
    return "item " + std::to_string(b.source_index);
}

using gateway_type = flow::async_node<msg, msg>::gateway_type;

/// priority_queue_node's order: it hands out the greatest element first, so "greater" here is
/// the lower sequence number.
struct later_seq {
    bool operator()(const msg& a, const msg& b) const noexcept { return a->seq > b->seq; }
};

/// Everything one stage needs at run time.
struct stage_runtime {
    stage_spec spec;
    std::string name;
    std::string kind;
    int concurrency = 1;
    bool io = false;
    bool ordered = true;  ///< its renumbering point restores source order
    stage_counters counters;
    std::unique_ptr<io_pool> pool;
    gateway_type* gateway = nullptr;

    // map_async: calls waiting for one of the `concurrency` slots.
    std::mutex async_mutex;
    std::deque<msg> async_waiting;
    int async_running = 0;

    // Renumbering state (touched only by the stage's serial node).
    std::unique_ptr<sequencer> seq;
    std::vector<msg> batch_items;
    std::vector<msg> outs;
    std::uint64_t next_out = 0;

    [[nodiscard]] bool renumbers() const noexcept {
        return spec.kind == stage_kind::batch || spec.kind == stage_kind::unbatch ||
               spec.kind == stage_kind::flat_map;
    }
};

class pipeline_runtime final : public runtime {
  public:
    pipeline_runtime(pipeline_spec spec, pipeline_options opts);
    ~pipeline_runtime() override;
    pipeline_runtime(const pipeline_runtime&) = delete;
    pipeline_runtime& operator=(const pipeline_runtime&) = delete;

    bool next(any_value& out) override;
    void abandon_epoch() noexcept override;
    void stop() noexcept override;
    [[nodiscard]] bool epoch_running() const noexcept override { return epoch_running_; }
    [[nodiscard]] pipeline_stats stats() const override;
    [[nodiscard]] std::vector<failure> failures() const override;
    void write_trace(std::ostream& os) const override;

    void fail_item(stage_runtime& st, msg m, const std::exception_ptr& cause);
    void async_finished(stage_runtime& st);
    void poll_later(std::function<bool(any_value&)> try_take,
                    std::function<void(any_value*, std::exception_ptr)> done);
    [[nodiscard]] bool aborting() const noexcept { return aborting_; }

  private:
    void build_graph();
    /// A body took `m` from TBB: see what its sender wrote (and what the consumer set up).
    void received(msg m) noexcept {
        tsan_acquire(this);
        tsan_acquire(m);
    }
    bool source_pull(msg& out);
    /// Takes one in-flight credit for the next message of the source, or parks the source.
    [[nodiscard]] bool take_credit() noexcept;
    /// True for an element whose work would be wasted: its epoch is being cancelled, or it comes
    /// after an item that failed the pipeline.
    [[nodiscard]] bool should_drop(msg m) const noexcept {
        return aborting_ || m->source_index > halt_after_.load(std::memory_order_relaxed);
    }
    /// Turns an element that will not be processed into a gap, so no later stage ever sees a
    /// value of the wrong type; its items stay unaccounted and end as cancelled.
    static void drop_unprocessed(msg m) noexcept {
        m->value.reset();
        m->children.clear();
        m->kind = msg_kind::gap;
    }
    void apply(stage_runtime& st, msg m, const shard_writer& w);
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
        if (st.spec.kind != stage_kind::flat_map) w.add(&counter_shard::emitted);
    }
    void renumber(stage_runtime& st, msg m, const shard_writer& w);
    void emit_batch(stage_runtime& st, const shard_writer& w);
    void expand(stage_runtime& st, msg m, const shard_writer& w);
    void retire_gap(msg m);
    void deliver(msg m);
    void return_credits(std::uint64_t n);
    /// The consumer took the epoch's first output: the source may fill `in_flight_` now.
    void end_start();
    /// After credits were returned or the limit raised: re-activates a parked source (once).
    void wake_source();
    void flush_consumer_credits();
    /// The consumer is done with `m`: its box goes back to the pool with the next credits.
    void consumer_release(msg m);
    void async_accept(stage_runtime& st, msg m, gateway_type& gw, const shard_writer& w);
    void async_start(stage_runtime& st, msg m, const shard_writer& w);
    void start_epoch();
    void finish_epoch();
    void abort_epoch_locked() noexcept;
    void cancel_for_stop() noexcept;
    void monitor_loop();
    void sample();
    [[nodiscard]] std::size_t min_in_flight() const;
    [[nodiscard]] std::size_t default_in_flight() const;
    [[nodiscard]] stage_stats row(const stage_runtime* st) const;

    pipeline_spec spec_;
    pipeline_options opts_;
    int threads_ = 1;
    std::size_t in_flight_ = 0;
    std::size_t first_output_items_ = 1;  ///< source items the first output needs (min_in_flight)
    std::uint64_t credit_batch_ = 1;

    tick_rate rate_;
    box_pool pool_;
    std::list<stage_runtime> stages_;  // stable addresses: nodes capture references
    stage_counters source_counters_;
    /// Tracing (`trace_spans` > 0): the spans, and the names of their rows: the source, each
    /// stage, and the consumer's waits last.
    std::unique_ptr<span_log> spans_;
    std::vector<std::string> span_names_;
    std::unique_ptr<sequencer> output_seq_;
    failure_log log_;

    // What the source, the consumer and the workers write per item sits on separate cache lines
    // (each group aligned to its own), so that no line moves between cores on every item.

    // Source state: the input node calls its body one at a time, the consumer opens epochs.
    alignas(64) std::mutex source_mutex_;
    source_cursor cursor_;
    bool source_open_ = false;
    std::uint64_t source_seq_ = 0;
    std::vector<box*> source_boxes_;  ///< free boxes taken from the pool in bulk
    std::atomic<bool> source_busy_{false};
    // Accounting, in source items; the source's counters are written only under source_mutex_.
    std::atomic<std::uint64_t> produced_{0};
    std::atomic<std::uint64_t> credits_issued_{0};  ///< in-flight credits taken

    // Written by the consumer (under control_mutex_) only.
    alignas(64) std::atomic<std::uint64_t> delivered_{0};
    std::atomic<std::uint64_t> outputs_{0};
    std::atomic<std::int64_t> consumer_wait_ns_{0};

    // In-flight credits given back (consumer, or a worker retiring a gap), and whether the
    // source is parked waiting for them.
    alignas(64) std::atomic<std::uint64_t> credits_returned_{0};
    std::atomic<bool> source_parked_{false};
    /// The credits the source may hold now: `first_output_items_` until the consumer takes an
    /// epoch's first output (with `fast_start`), `in_flight_` after.
    std::atomic<std::size_t> credit_limit_{0};
    bool starting_ =
        false;  ///< consumer thread only: fast_start holds the source for the first output
    bool awaiting_first_ =
        false;  ///< consumer thread only: the epoch's first output is not taken yet
    /// Time from an epoch's start to the consumer taking its first output: the last epoch's, and
    /// the longest of any (written by the consumer, read by stats()).
    std::atomic<std::int64_t> first_output_ns_{0}, first_output_max_ns_{0};
    alignas(64) std::atomic<std::uint64_t> filtered_{0}, failed_{0}, cancelled_{0}, epochs_{0};

    mutable std::mutex failures_mutex_;
    std::vector<failure> failures_;

    // Consumer side: the hand-off from the output node (bounded by in_flight through the
    // credits, but for flat_map children), and what the consumer thread keeps to itself.
    std::unique_ptr<handoff> out_;
    alignas(64) std::uint64_t consumer_credits_ = 0;  // consumer thread only
    std::vector<box*> consumer_boxes_;  ///< consumer thread only: boxes to give back in bulk
    std::size_t burst_ = 1;             ///< results the consumer gathers before taking them
    int spin_limit_ = 64;               ///< yields before the consumer sleeps (adapts; see next())
    bool consumer_named_ = false;       ///< the consumer's thread is named in the trace

    // Control. The consumer locks control_mutex_ on every item; the flags below it are read by
    // the workers on every item.
    alignas(64) std::mutex control_mutex_;
    alignas(64) std::atomic<bool> stopping_{false};
    std::atomic<bool> aborting_{false};
    std::atomic<bool> halted_{false};  ///< a stage failed: the source stops producing
    std::atomic<std::uint64_t> halt_after_{std::numeric_limits<std::uint64_t>::max()};
    std::atomic<bool> epoch_running_{false};
    std::exception_ptr fatal_;  ///< sticky stage_error
    std::atomic<std::uint64_t> epoch_{0};
    std::atomic<clock::rep> epoch_start_{0};  ///< steady_clock ticks
    std::atomic<std::int64_t> elapsed_ns_{0};

    // Pipeline-level samples: was the in-flight limit reached?
    mutable std::mutex sample_mutex_;
    std::uint64_t samples_ = 0;
    std::uint64_t saturated_samples_ = 0;

    // Monitor: sampling, periodic reports, polling of futures.
    struct poll_entry {
        std::function<bool(any_value&)> try_take;
        std::function<void(any_value*, std::exception_ptr)> done;
    };
    std::mutex monitor_mutex_;
    std::condition_variable monitor_cv_;
    std::vector<poll_entry> polls_;
    bool monitor_closing_ = false;
    std::thread monitor_;

    // TBB objects last, so they are destroyed first.
    bool budget_held_ = false;
    std::unique_ptr<tbb::task_arena> arena_;
    std::unique_ptr<flow::graph> graph_;
    std::unique_ptr<flow::input_node<msg>> input_;
    std::vector<std::unique_ptr<flow::graph_node>> nodes_;
};

/// The sink handed to a map_async call: routes its one result back into the graph.
class sink_impl final : public async_sink, public std::enable_shared_from_this<sink_impl> {
  public:
    sink_impl(pipeline_runtime& rt, stage_runtime& st, msg m)
        : rt_(rt), st_(st), m_(m), start_(ticks()) {}

    void complete(any_value&& v) noexcept override {
        if (done_.exchange(true)) return;
        m_->value = std::move(v);
        finish(nullptr);
    }
    void fail(std::exception_ptr e) noexcept override {
        if (done_.exchange(true)) return;
        finish(std::move(e));
    }
    void poll(std::function<bool(any_value&)> try_take) noexcept override {
        try {
            rt_.poll_later(std::move(try_take),
                           [self = shared_from_this()](any_value* v, std::exception_ptr e) {
                               if (v != nullptr) {
                                   self->complete(std::move(*v));
                               } else {
                                   self->fail(std::move(e));
                               }
                           });
        } catch (...) {
            fail(std::current_exception());
        }
    }

  private:
    void finish(std::exception_ptr e) noexcept {
        // Any thread may complete a call (the user's, the monitor's poller): shared counters.
        const shard_writer w = st_.counters.shared();
        w.record_call(start_);
        w.active(-1);
        if (rt_.aborting()) {
            // The epoch is being cancelled: its accounting is settled by abort_epoch.
        } else if (e) {
            rt_.fail_item(st_, m_, e);
        } else {
            w.add(&counter_shard::out);
        }
        gateway_type& gw = *st_.gateway;
        w.add(&counter_shard::emitted);
        tsan_release(m_);
        gw.try_put(m_);
        rt_.async_finished(st_);
        gw.release_wait();
    }

    pipeline_runtime& rt_;
    stage_runtime& st_;
    msg m_;
    std::uint64_t start_;
    std::atomic<bool> done_{false};
};

pipeline_runtime::pipeline_runtime(pipeline_spec spec, pipeline_options opts)
    : spec_(std::move(spec)),
      opts_(std::move(opts)),
      log_(opts_.logger, opts_.log_burst, opts_.log_window) {
    if (!spec_.source.open) throw invalid_argument("pipeline has no source");
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (opts_.threads < 0) {
        throw invalid_argument("threads must be 0 (default) or positive, got " +
                               std::to_string(opts_.threads));
    }
    threads_ = opts_.threads > 0 ? opts_.threads : std::max(1, hw / 2);

    int index = 1;
    bool ordered = opts_.ordered;
    for (auto& s : spec_.stages) {
        auto& st = stages_.emplace_back();
        st.spec = std::move(s);
        st.kind = kind_name(st.spec.kind);
        st.name = st.spec.options.name.empty() ? st.kind + "#" + std::to_string(index)
                                               : st.spec.options.name;
        st.concurrency = st.spec.options.concurrency;
        if (st.spec.kind == stage_kind::batch || st.spec.kind == stage_kind::unbatch) {
            st.concurrency = 1;
        }
        if (st.concurrency < 1) {
            throw invalid_argument("stage '" + st.name + "': concurrency must be at least 1, got " +
                                   std::to_string(st.concurrency));
        }
        const bool wants_io = st.spec.options.executor == executor::io;
        st.io =
            wants_io && (st.spec.kind == stage_kind::map || st.spec.kind == stage_kind::filter ||
                         st.spec.kind == stage_kind::flat_map);
        if (wants_io && !st.io) {
            throw invalid_argument("stage '" + st.name +
                                   "': executor io applies to map, filter and flat_map stages");
        }
        if (st.spec.kind == stage_kind::map_async && st.spec.options.on_error.attempts > 1) {
            throw invalid_argument("stage '" + st.name +
                                   "': retry does not apply to map_async (its input is handed "
                                   "over); retry inside the asynchronous call instead");
        }
        if (st.spec.options.on_error.attempts < 1) {
            throw invalid_argument("stage '" + st.name + "': retry attempts must be at least 1");
        }
        if (!st.spec.options.ordered) ordered = false;
        st.ordered = ordered;
        if (st.renumbers()) st.seq = std::make_unique<sequencer>(ordered);
        ++index;
    }
    spec_.stages.clear();  // the stage_runtimes own the callables now
    output_seq_ = std::make_unique<sequencer>(ordered);

    const std::size_t need = min_in_flight();
    first_output_items_ = need;
    if (opts_.in_flight == 0) {
        in_flight_ = std::max(default_in_flight(), need);
    } else {
        in_flight_ = opts_.in_flight;
        if (in_flight_ < need) {
            throw invalid_argument("in_flight = " + std::to_string(in_flight_) +
                                   " is too small: the batch stages need at least " +
                                   std::to_string(need) + " source items in flight");
        }
    }
    // Returning credits is an atomic add, and wakes a worker when the source is parked for lack
    // of them; doing it per quarter of the limit rather than per item keeps both rare.
    credit_batch_ = std::max<std::uint64_t>(1, in_flight_ / 4);
    burst_ = std::clamp<std::size_t>(in_flight_ / 4, 1, 16);
    // Every message in the hand-off but flat_map children carries a credit: the ring rarely
    // overflows.
    out_ = std::make_unique<handoff>(in_flight_ + 2);
    source_boxes_.reserve(box_batch);
    consumer_boxes_.reserve(2 * credit_batch_ + box_batch);

    // An arena has at least two slots (oneTBB gives an arena of one thread two), and a thread
    // that enters it with execute() takes one too: a shard for each, so that every arena thread
    // owns one.
    const int slots = std::max(threads_, 2) + 1;
    source_counters_.resize(slots);
    for (auto& st : stages_) st.counters.resize(slots);
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
    worker_budget::instance().acquire(threads_);
    budget_held_ = true;
    try {
        for (auto& st : stages_) {
            if (st.io) {
                st.pool = std::make_unique<io_pool>(st.concurrency, spans_.get(), "io " + st.name);
            }
        }
        arena_ = std::make_unique<tbb::task_arena>(threads_, 0);
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
        worker_budget::instance().release(threads_);
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
    {
        std::lock_guard lock(monitor_mutex_);
        monitor_closing_ = true;
    }
    monitor_cv_.notify_all();
    if (monitor_.joinable()) monitor_.join();
    log_.flush();
    nodes_.clear();
    input_.reset();
    graph_.reset();
    arena_.reset();
    for (auto& st : stages_) st.pool.reset();
    if (budget_held_) worker_budget::instance().release(threads_);
}

std::size_t pipeline_runtime::min_in_flight() const {
    // A batch of n holds n elements before it emits; each element stands for `scale` source items
    // (the product of the batch sizes before it, undone by unbatch).
    std::size_t need = 1;
    std::size_t scale = 1;
    std::vector<std::size_t> scales;
    for (const auto& st : stages_) {
        if (st.spec.kind == stage_kind::batch) {
            need = std::max(need, st.spec.batch_size * scale);
            scales.push_back(scale);
            scale *= st.spec.batch_size;
        } else if (st.spec.kind == stage_kind::unbatch && !scales.empty()) {
            scale = scales.back();
            scales.pop_back();
        }
    }
    return need;
}

std::size_t pipeline_runtime::default_in_flight() const {
    std::size_t sum = 0;
    for (const auto& st : stages_) sum += static_cast<std::size_t>(st.concurrency);
    // Enough to keep every slot busy while the consumer works through a burst, and two batches.
    return std::max<std::size_t>(
        {64, 4 * sum + 4 * static_cast<std::size_t>(threads_), 2 * min_in_flight()});
}

void pipeline_runtime::build_graph() {
    graph_ = std::make_unique<flow::graph>();
    flow::graph& g = *graph_;
    input_ =
        std::make_unique<flow::input_node<msg>>(g, tsan_body([this](tbb::flow_control& fc) -> msg {
                                                    tsan_acquire(this);
                                                    msg m = nullptr;
                                                    if (!source_pull(m)) fc.stop();
                                                    tsan_release(m);
                                                    return m;
                                                }));
    flow::sender<msg>* tail = input_.get();
    // Whether messages reach the next node (nearly) in sequence order: the source and the
    // renumbering nodes emit in order, a stage of concurrency n reorders by less than n; I/O and
    // async stages can finish far out of order (a preempted I/O thread, a slow request).
    bool in_order = true;

    auto add_renumbering = [&](stage_runtime& st) {
        using node_t = flow::multifunction_node<msg, std::tuple<msg>>;
        auto node = std::make_unique<node_t>(
            g, flow::serial, tsan_body([this, &st](msg m, node_t::output_ports_type& ports) {
                received(m);
                tsan_acquire(&st);
                const shard_writer w = st.counters.owned();
                if (st.spec.kind != stage_kind::flat_map) w.add(&counter_shard::arrived);
                renumber(st, m, w);
                std::vector<msg> outs;
                outs.swap(st.outs);
                tsan_release(&st);
                for (msg o : outs) {
                    w.add(&counter_shard::emitted);
                    tsan_release(o);
                    std::get<0>(ports).try_put(o);
                }
                outs.clear();
                tsan_acquire(&st);
                if (st.outs.capacity() < outs.capacity()) st.outs.swap(outs);
                tsan_release(&st);
            }));
        flow::make_edge(*tail, *node);
        tail = &flow::output_port<0>(*node);
        nodes_.push_back(std::move(node));
        in_order = true;
    };

    for (auto& st : stages_) {
        switch (st.spec.kind) {
            case stage_kind::map:
            case stage_kind::filter:
            case stage_kind::flat_map: {
                if (st.io) {
                    using node_t = flow::async_node<msg, msg>;
                    auto node = std::make_unique<node_t>(
                        g, flow::unlimited, tsan_body([this, &st](msg m, gateway_type& gw) {
                            received(m);
                            const shard_writer w = st.counters.owned();
                            w.add(&counter_shard::arrived);
                            if (m->kind != msg_kind::value) {
                                if (st.spec.kind != stage_kind::flat_map) {
                                    w.add(&counter_shard::emitted);
                                }
                                tsan_release(m);
                                gw.try_put(m);
                                return;
                            }
                            gw.reserve_wait();
                            st.pool->submit([this, &st, m, &gw] {
                                // An I/O thread, outside the arena: shared counters.
                                run_stage(st, m, st.counters.shared());
                                tsan_release(m);
                                gw.try_put(m);
                                gw.release_wait();
                            });
                        }));
                    flow::make_edge(*tail, *node);
                    tail = &flow::output_port<0>(*node);
                    nodes_.push_back(std::move(node));
                    in_order = false;
                } else {
                    // Input that arrives out of order (after I/O or async stages) waits in a
                    // priority queue, lowest sequence number first, instead of the
                    // function_node's FIFO: an item that a preempted I/O thread delivered late
                    // is taken next, not after everything read meanwhile (with 64 items read
                    // ahead, a late item 2 held up the first batch by ~30 ms on 2 cores).
                    auto body = tsan_body([this, &st](msg m) {
                        received(m);
                        const shard_writer w = st.counters.owned();
                        w.add(&counter_shard::arrived);
                        run_stage(st, m, w);
                        tsan_release(m);
                        return m;
                    });
                    const auto concurrency = static_cast<std::size_t>(st.concurrency);
                    if (in_order) {
                        // FIFO is sequence order here; the predecessor may not hold a message
                        // back (a multifunction_node port drops what is rejected): queueing.
                        auto node =
                            std::make_unique<flow::function_node<msg, msg>>(g, concurrency, body);
                        flow::make_edge(*tail, *node);
                        tail = node.get();
                        nodes_.push_back(std::move(node));
                    } else {
                        // The queue holds what the rejecting node cannot take yet; the node
                        // pulls the lowest sequence number whenever a slot frees up.
                        auto queue = std::make_unique<flow::priority_queue_node<msg, later_seq>>(g);
                        auto node =
                            std::make_unique<flow::function_node<msg, msg, flow::rejecting>>(
                                g, concurrency, body);
                        flow::make_edge(*tail, *queue);
                        flow::make_edge(*queue, *node);
                        tail = node.get();
                        nodes_.push_back(std::move(queue));
                        nodes_.push_back(std::move(node));
                    }
                }
                if (st.spec.kind == stage_kind::flat_map) add_renumbering(st);
                break;
            }
            case stage_kind::map_async: {
                using node_t = flow::async_node<msg, msg>;
                auto node = std::make_unique<node_t>(
                    g, flow::unlimited, tsan_body([this, &st](msg m, gateway_type& gw) {
                        received(m);
                        async_accept(st, m, gw, st.counters.owned());
                    }));
                st.gateway = &node->gateway();
                flow::make_edge(*tail, *node);
                tail = &flow::output_port<0>(*node);
                nodes_.push_back(std::move(node));
                in_order = false;
                break;
            }
            case stage_kind::batch:
            case stage_kind::unbatch:
                add_renumbering(st);
                break;
        }
    }

    using out_t = flow::function_node<msg, flow::continue_msg>;
    auto out = std::make_unique<out_t>(g, flow::serial, tsan_body([this](msg m) {
                                           received(m);
                                           tsan_acquire(output_seq_.get());
                                           tsan_acquire(out_.get());  // producer's own state
                                           output_seq_->push(m, [this](msg x) {
                                               if (x->kind == msg_kind::gap) {
                                                   retire_gap(x);
                                               } else {
                                                   deliver(x);
                                               }
                                           });
                                           tsan_release(output_seq_.get());
                                           tsan_release(out_.get());
                                           return flow::continue_msg();
                                       }));
    flow::make_edge(*tail, *out);
    nodes_.push_back(std::move(out));
}

bool pipeline_runtime::take_credit() noexcept {
    const auto issued = credits_issued_.load(std::memory_order_relaxed);  // written only here
    if (issued - credits_returned_.load(std::memory_order_relaxed) <
        credit_limit_.load(std::memory_order_relaxed)) {
        return true;
    }
    // Out of credits: park (the input node stops), then look again, so that credits returned
    // (or a limit raised) meanwhile are not missed. A returner that sees the flag takes it and
    // re-activates the input node; if one took it here, this call stops and the returner's
    // activation goes on.
    source_parked_.store(true, std::memory_order_seq_cst);
    if (issued - credits_returned_.load(std::memory_order_seq_cst) >=
        credit_limit_.load(std::memory_order_seq_cst)) {
        return false;
    }
    return source_parked_.exchange(false);
}

bool pipeline_runtime::source_pull(msg& out) {
    std::lock_guard lock(source_mutex_);
    if (!source_open_ || halted_ || aborting_ || stopping_) return false;
    if (!take_credit()) return false;
    if (source_boxes_.empty()) pool_.acquire_bulk(source_boxes_, box_batch);
    box* b = source_boxes_.back();
    source_boxes_.pop_back();
    b->credits = 1;
    b->seq = source_seq_;
    b->source_index = source_seq_;
    // Relaxed: only the monitor reads it, for a sampled fraction.
    source_busy_.store(true, std::memory_order_relaxed);
    const shard_writer w = source_counters_.owned();  // the input node's body, in the arena
    const auto t0 = ticks();
    bool got = false;
    try {
        got = cursor_(b->value);
        w.record_call(t0);
    } catch (...) {
        w.record_call(t0);
        source_busy_.store(false, std::memory_order_relaxed);
        const std::string cause = describe(std::current_exception());
        b->kind = msg_kind::error;
        b->error = std::make_exception_ptr(stage_error(
            "source", source_seq_, 1, cause,
            "stage 'source' failed on item " + std::to_string(source_seq_) + ": " + cause));
        {
            std::lock_guard flock(failures_mutex_);
            failures_.push_back(
                {"source", source_seq_, 1, epoch_, cause, code_of(std::current_exception())});
        }
        log_.log("source", log_level::error,
                 "stage 'source' failed on item " + std::to_string(source_seq_) + ": " + cause);
        w.add(&counter_shard::failed);
        source_open_ = false;
        ++source_seq_;
        bump_owned(credits_issued_, 1);
        w.add(&counter_shard::emitted);
        out = b;
        return true;
    }
    source_busy_.store(false, std::memory_order_relaxed);
    if (got) {
        b->kind = msg_kind::value;
        b->items = 1;
        ++source_seq_;
        bump_owned(produced_, 1);
        w.add(&counter_shard::out);
    } else {
        b->kind = msg_kind::end;  // seq = number of messages before it
        source_open_ = false;
    }
    bump_owned(credits_issued_, 1);
    w.add(&counter_shard::emitted);
    out = b;
    return true;
}

/// Whether the policy's test calls a failure worth another attempt.
bool worth_retrying(const error_policy& policy, const std::exception_ptr& err) noexcept {
    if (policy.when == nullptr) return true;
    try {
        std::rethrow_exception(err);
    } catch (const std::exception& e) {
        try {
            return policy.when(e);
        } catch (...) {
            return false;  // a test that throws retries nothing
        }
    } catch (...) {
        return true;  // not a std::exception: nothing to test
    }
}

void pipeline_runtime::apply(stage_runtime& st, msg m, const shard_writer& w) {
    w.add(&counter_shard::in);
    w.active(1);
    const error_policy& policy = st.spec.options.on_error;
    std::exception_ptr err;
    bool keep = true;
    auto backoff = std::chrono::duration<double, std::milli>(policy.backoff);
    for (int attempt = 1;; ++attempt) {
        const bool last = attempt >= policy.attempts;
        const auto t0 = ticks();
        try {
            switch (st.spec.kind) {
                case stage_kind::map:
                    st.spec.map_fn(m->value, last);
                    break;
                case stage_kind::filter:
                    keep = st.spec.filter_fn(m->value);
                    break;
                case stage_kind::flat_map:
                    m->children.clear();
                    st.spec.expand_fn(m->value, m->children, last);
                    break;
                default:
                    break;
            }
            w.record_call(t0);
            err = nullptr;
            break;
        } catch (...) {
            w.record_call(t0);
            err = std::current_exception();
        }
        // A consumed input (moved into the call) cannot be retried, nor a failure that would
        // only come again.
        if (last || !m->value.has_value() || aborting_ || stopping_ ||
            !worth_retrying(policy, err)) {
            break;
        }
        w.add(&counter_shard::retries);
        std::this_thread::sleep_for(backoff);
        backoff *= policy.multiplier;
    }
    w.active(-1);
    if (err) {
        fail_item(st, m, err);
        return;
    }
    if (!keep) {
        w.add(&counter_shard::filtered);
        filtered_.fetch_add(m->items, std::memory_order_relaxed);
        m->items = 0;
        m->value.reset();
        m->kind = msg_kind::gap;
        return;
    }
    if (st.spec.kind != stage_kind::flat_map) w.add(&counter_shard::out);
}

void pipeline_runtime::fail_item(stage_runtime& st, msg m, const std::exception_ptr& cause) {
    auto& c = st.counters;
    c.shared().add(&counter_shard::failed);  // rare, and called from any thread
    const auto& options = st.spec.options;
    const std::string text = describe(cause);
    bool fail = options.on_error.action == error_action::fail;
    std::string reason = text;
    if (!fail && options.max_failures > 0) {
        const auto n = c.skipped.fetch_add(1, std::memory_order_relaxed) + 1;
        if (n > options.max_failures) {
            fail = true;
            reason = "failure budget of " + std::to_string(options.max_failures) +
                     " exhausted; last error: " + text;
        }
    } else if (!fail) {
        c.skipped.fetch_add(1, std::memory_order_relaxed);
    }
    {
        std::lock_guard lock(failures_mutex_);
        failures_.push_back({st.name, m->source_index, std::max<std::uint64_t>(1, m->items), epoch_,
                             text, code_of(cause)});
    }
    const std::string what = "stage '" + st.name + "' " + (fail ? "failed on " : "skipped ") +
                             item_label(*m) + ": " + reason;
    log_.log(st.name, fail ? log_level::error : log_level::warning, what);
    failed_.fetch_add(m->items, std::memory_order_relaxed);
    m->value.reset();
    m->children.clear();
    if (!fail) {
        m->items = 0;
        m->kind = msg_kind::gap;
        return;
    }
    try {
        std::rethrow_exception(cause);
    } catch (...) {
        m->error = std::make_exception_ptr(stage_error(
            st.name, m->source_index, std::max<std::uint64_t>(1, m->items), text, what));
    }
    m->items = 0;
    m->kind = msg_kind::error;
    halted_ = true;  // the epoch is over: stop reading the source
    // Items after the failing one are dropped unprocessed; the ones before still finish.
    auto idx = halt_after_.load();
    while (m->source_index < idx && !halt_after_.compare_exchange_weak(idx, m->source_index)) {
    }
}

void pipeline_runtime::renumber(stage_runtime& st, msg m, const shard_writer& w) {
    st.seq->push(m, [this, &st, &w](msg x) {
        switch (x->kind) {
            case msg_kind::gap:
                retire_gap(x);
                break;
            case msg_kind::error:
                x->seq = st.next_out++;
                st.outs.push_back(x);
                break;
            case msg_kind::end:
                if (!st.batch_items.empty()) {
                    if (st.spec.drop_last) {
                        for (msg b : st.batch_items) {
                            w.add(&counter_shard::filtered);
                            filtered_.fetch_add(b->items, std::memory_order_relaxed);
                            b->items = 0;
                            retire_gap(b);
                        }
                        st.batch_items.clear();
                    } else {
                        emit_batch(st, w);
                    }
                }
                x->seq = st.next_out;
                st.next_out = 0;
                st.outs.push_back(x);
                break;
            case msg_kind::value:
                if (st.spec.kind == stage_kind::batch) {
                    w.add(&counter_shard::in);
                    st.batch_items.push_back(x);
                    if (st.batch_items.size() == st.spec.batch_size) emit_batch(st, w);
                } else {
                    expand(st, x, w);
                }
                break;
        }
    });
}

void pipeline_runtime::emit_batch(stage_runtime& st, const shard_writer& w) {
    const auto t0 = ticks();
    w.active(1);
    msg first = st.batch_items.front();
    std::vector<any_value> values;
    values.reserve(st.batch_items.size());
    std::uint64_t items = 0;
    std::uint64_t credits = 0;
    for (msg b : st.batch_items) {
        values.push_back(std::move(b->value));
        items += b->items;
        credits += b->credits;
        if (b != first) pool_.release(b);
    }
    st.batch_items.clear();
    first->items = items;
    first->credits = credits;
    try {
        st.spec.pack_fn(values, first->value);
        w.add(&counter_shard::out);
    } catch (...) {
        fail_item(st, first, std::current_exception());
    }
    w.record_call(t0);
    w.active(-1);
    if (first->kind == msg_kind::gap) {
        retire_gap(first);
        return;
    }
    first->seq = st.next_out++;
    st.outs.push_back(first);
}

void pipeline_runtime::expand(stage_runtime& st, msg x, const shard_writer& w) {
    if (st.spec.kind == stage_kind::unbatch) {
        w.add(&counter_shard::in);
        const auto t0 = ticks();
        try {
            x->children.clear();
            st.spec.expand_fn(x->value, x->children, true);
        } catch (...) {
            fail_item(st, x, std::current_exception());
        }
        w.record_call(t0);
        if (x->kind == msg_kind::gap) {
            retire_gap(x);
            return;
        }
        if (x->kind == msg_kind::error) {
            x->seq = st.next_out++;
            st.outs.push_back(x);
            return;
        }
    }
    auto& children = x->children;
    if (children.empty()) {
        w.add(&counter_shard::filtered);
        filtered_.fetch_add(x->items, std::memory_order_relaxed);
        x->items = 0;
        retire_gap(x);
        return;
    }
    const std::size_t k = children.size();
    for (std::size_t i = 0; i + 1 < k; ++i) {
        box* b = pool_.acquire();
        b->value = std::move(children[i]);
        b->kind = msg_kind::value;
        b->seq = st.next_out++;
        b->source_index = x->source_index;
        st.outs.push_back(b);
    }
    // The last output carries the input's accounting and credits.
    x->value = std::move(children[k - 1]);
    children.clear();
    x->seq = st.next_out++;
    st.outs.push_back(x);
    w.add(&counter_shard::out, k);
}

void pipeline_runtime::retire_gap(msg m) {
    const auto credits = m->credits;
    pool_.release(m);
    return_credits(credits);
}

void pipeline_runtime::return_credits(std::uint64_t n) {
    if (n == 0) return;
    // seq_cst, against take_credit's park-then-check: one of the two sees the other.
    credits_returned_.fetch_add(n, std::memory_order_seq_cst);
    wake_source();
}

void pipeline_runtime::wake_source() {
    if (source_parked_.load(std::memory_order_seq_cst) && source_parked_.exchange(false)) {
        input_->activate();
    }
}

void pipeline_runtime::end_start() {
    starting_ = false;
    // seq_cst, against take_credit's park-then-check, as return_credits.
    credit_limit_.store(in_flight_, std::memory_order_seq_cst);
    flush_consumer_credits();
    wake_source();  // also when the first output carried no credits
}

void pipeline_runtime::deliver(msg m) {
    out_->push(m);
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

void pipeline_runtime::async_accept(stage_runtime& st, msg m, gateway_type& gw,
                                    const shard_writer& w) {
    w.add(&counter_shard::arrived);
    if (m->kind == msg_kind::value && should_drop(m)) drop_unprocessed(m);
    if (m->kind != msg_kind::value) {
        w.add(&counter_shard::emitted);
        tsan_release(m);
        gw.try_put(m);
        return;
    }
    gw.reserve_wait();  // released when the call's result has been passed on
    {
        std::lock_guard lock(st.async_mutex);
        if (st.async_running >= st.concurrency) {
            tsan_release(m);
            st.async_waiting.push_back(m);
            return;
        }
        ++st.async_running;
    }
    tsan_release(m);  // what this thread read of m happens before a later reclaim
    async_start(st, m, w);
}

void pipeline_runtime::async_start(stage_runtime& st, msg m, const shard_writer& w) {
    w.add(&counter_shard::in);
    w.active(1);
    auto sink = std::make_shared<sink_impl>(*this, st, m);
    if (aborting_) {
        sink->fail(nullptr);  // settles the slot; abort_epoch does the accounting
        return;
    }
    try {
        st.spec.start_fn(std::move(m->value), sink);
    } catch (...) {
        sink->fail(std::current_exception());
    }
}

void pipeline_runtime::async_finished(stage_runtime& st) {
    // Start the next waiting call in this slot. Calls that complete synchronously would recurse
    // here once per waiting item; past a small depth, hand the start to the arena instead.
    thread_local int depth = 0;
    msg next = nullptr;
    {
        std::lock_guard lock(st.async_mutex);
        if (st.async_waiting.empty()) {
            --st.async_running;
            return;
        }
        next = st.async_waiting.front();
        st.async_waiting.pop_front();
    }
    if (depth >= 8) {
        arena_->enqueue(
            tsan_body([this, &st, next] { async_start(st, next, st.counters.owned()); }));
        return;
    }
    ++depth;
    async_start(st, next, st.counters.shared());  // a completion, on any thread
    --depth;
}

void pipeline_runtime::poll_later(std::function<bool(any_value&)> try_take,
                                  std::function<void(any_value*, std::exception_ptr)> done) {
    {
        std::lock_guard lock(monitor_mutex_);
        polls_.push_back({std::move(try_take), std::move(done)});
    }
    monitor_cv_.notify_one();
}

void pipeline_runtime::start_epoch() {
    source_cursor cursor;
    try {
        cursor = spec_.source.open(epoch_);
    } catch (...) {
        const std::string cause = describe(std::current_exception());
        {
            std::lock_guard lock(failures_mutex_);
            failures_.push_back({"source", 0, 1, epoch_, cause, code_of(std::current_exception())});
        }
        fatal_ = std::make_exception_ptr(stage_error(
            "source", 0, 1, cause,
            "stage 'source' failed to open epoch " + std::to_string(epoch_.load()) + ": " + cause));
        std::rethrow_exception(fatal_);
    }
    {
        std::lock_guard lock(source_mutex_);
        cursor_ = std::move(cursor);
        source_seq_ = 0;
        source_open_ = true;
    }
    // fast_start: admit only what the first output needs until the consumer has taken it, so
    // that every thread works on it and nothing else competes with its last steps (the batch's
    // last items, collate, waking the consumer) for a core.
    starting_ = opts_.fast_start && first_output_items_ < in_flight_;
    awaiting_first_ = true;
    credit_limit_.store(starting_ ? first_output_items_ : in_flight_, std::memory_order_seq_cst);
    epochs_.fetch_add(1, std::memory_order_relaxed);
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
    {
        std::lock_guard lock(source_mutex_);
        cursor_ = nullptr;
    }
    ++epoch_;
    log_.flush();
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
            if (out_->available() < burst_) {
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
                for (int spin = 0; spin < spin_limit_ && out_->available() < burst_ && !stopping_;
                     ++spin) {
                    std::this_thread::yield();
                }
            }
            while (!stopping_ && !out_->refill()) {
                flush_consumer_credits();  // the graph may be waiting for them
                out_->wait([this] { return stopping_.load(); });
            }
            const auto waited = clock::now() - wait_start;
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
                // Only this thread writes these (under control_mutex_): no locked instruction.
                bump_owned(delivered_, m->items);
                bump_owned(outputs_, 1);
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
                } else if (consumer_credits_ >= credit_batch_) {
                    flush_consumer_credits();
                }
                return true;
            case msg_kind::end:
                consumer_credits_ += m->credits;
                consumer_release(m);
                flush_consumer_credits();
                finish_epoch();
                return false;
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

void pipeline_runtime::cancel_for_stop() noexcept {
    // Return to the caller at once: cancel what has not started and let the calls in progress
    // finish in the background; the destructor waits for them and settles the accounting.
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
    aborting_ = true;
    graph_->cancel();
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
        credits_returned_.store(credits_issued_.load());
        source_parked_ = false;
    }
    pool_.reclaim_all();
    const auto accounted =
        delivered_.load() + filtered_.load() + failed_.load() + cancelled_.load();
    const auto produced = produced_.load();
    if (produced > accounted) cancelled_.fetch_add(produced - accounted);
    halted_ = false;
    halt_after_ = std::numeric_limits<std::uint64_t>::max();
    aborting_ = false;
    finish_epoch();
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

void pipeline_runtime::monitor_loop() {
    auto next_report = clock::now() + opts_.report_every;
    std::unique_lock lock(monitor_mutex_);
    while (!monitor_closing_) {
        if (!polls_.empty()) {
            std::vector<poll_entry> batch;
            batch.swap(polls_);
            lock.unlock();
            std::vector<poll_entry> waiting;
            for (auto& p : batch) {
                any_value v;
                try {
                    if (p.try_take(v)) {
                        p.done(&v, nullptr);
                    } else {
                        waiting.push_back(std::move(p));
                    }
                } catch (...) {
                    p.done(nullptr, std::current_exception());
                }
            }
            lock.lock();
            for (auto& p : waiting) polls_.push_back(std::move(p));
        }
        if (epoch_running_) {
            lock.unlock();
            sample();
            const auto now = clock::now();
            if (opts_.on_report && now >= next_report) {
                next_report = now + opts_.report_every;
                try {
                    opts_.on_report(stats());
                } catch (...) {
                    log_.log("report", log_level::warning, "on_report callback threw; ignored");
                }
            }
            lock.lock();
        }
        // Sampling wakes this thread, which on a machine with few cores preempts a worker: every
        // 1 ms for an epoch's first 50 ms (short epochs still get samples), then every 10 ms.
        const clock::duration running_for(clock::now().time_since_epoch().count() -
                                          epoch_start_.load());
        const auto sample_every = running_for < std::chrono::milliseconds(50)
                                      ? std::chrono::microseconds(1000)
                                      : std::chrono::microseconds(10000);
        const auto wait = !polls_.empty()  ? std::chrono::microseconds(100)
                          : epoch_running_ ? sample_every
                                           : std::chrono::microseconds(50000);
        monitor_cv_.wait_for(lock, wait);
    }
}

void pipeline_runtime::sample() {
    // Two counters read one after the other: a sampled estimate, clamped at zero.
    const auto returned = credits_returned_.load(std::memory_order_acquire);
    const auto issued = credits_issued_.load(std::memory_order_acquire);
    const bool saturated = issued >= returned && issued - returned >= in_flight_;
    {
        std::lock_guard lock(sample_mutex_);
        ++samples_;
        if (saturated) ++saturated_samples_;
    }
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
    {
        // The source has no upstream: it is busy, or held back by the in-flight limit.
        const bool busy = source_busy_;
        std::lock_guard lock(source_counters_.sample_mutex);
        ++source_counters_.samples;
        if (busy) source_counters_.utilization_sum += 1.0;
        if (!busy && saturated) ++source_counters_.backpressured_samples;
    }
    auto upstream = static_cast<std::int64_t>(source_counters_.sum(&counter_shard::emitted));
    bool queued_upstream = false;
    for (auto& st : stages_) {
        const auto arrived = static_cast<std::int64_t>(st.counters.sum(&counter_shard::arrived));
        const auto active = st.counters.sum(&counter_shard::active);
        // An I/O stage's calls wait in its pool's queue after they have "arrived".
        std::int64_t queued = upstream - arrived;
        if (st.pool) queued += static_cast<std::int64_t>(st.pool->waiting());
        record(st.counters, st.concurrency, queued, static_cast<int>(active), queued_upstream);
        queued_upstream = queued_upstream || queued > 0;
        upstream = static_cast<std::int64_t>(st.counters.sum(&counter_shard::emitted));
    }
}

stage_stats pipeline_runtime::row(const stage_runtime* st) const {
    const stage_counters& c = st != nullptr ? st->counters : source_counters_;
    stage_stats r;
    if (st != nullptr) {
        r.name = st->name;
        r.kind = st->kind;
        r.concurrency = st->concurrency;
        r.io = st->io;
    } else {
        r.name = "source";
        r.kind = "source";
    }
    r.items_in = st != nullptr ? c.sum(&counter_shard::in) : c.sum(&counter_shard::out);
    r.items_out = c.sum(&counter_shard::out);
    r.failed = c.sum(&counter_shard::failed);
    r.filtered = c.sum(&counter_shard::filtered);
    r.retries = c.sum(&counter_shard::retries);
    const auto hist = c.latency();
    const auto calls = latency_histogram::total(hist);
    const double ns_per_tick = rate_.ns_per_tick();
    auto ns = [&](double t) {
        return std::chrono::nanoseconds(static_cast<std::int64_t>(t * ns_per_tick));
    };
    const auto busy = static_cast<double>(c.sum(&counter_shard::busy_ticks));
    r.busy = ns(busy);
    r.task_mean = ns(calls > 0 ? busy / static_cast<double>(calls) : 0.0);
    r.task_p50 = ns(static_cast<double>(latency_histogram::quantile(hist, 0.50)));
    r.task_p99 = ns(static_cast<double>(latency_histogram::quantile(hist, 0.99)));
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
    pipeline_stats s;
    s.stages.push_back(row(nullptr));
    for (const auto& st : stages_) s.stages.push_back(row(&st));
    s.produced = produced_.load();
    s.delivered = delivered_.load();
    s.filtered = filtered_.load();
    s.failed = failed_.load();
    s.cancelled = cancelled_.load();
    if (aborting_ && epoch_running_) {
        // Stopped, and the calls still in progress not yet waited for: everything not yet
        // accounted for is cancelled (the destructor settles the same number).
        const auto accounted = s.delivered + s.filtered + s.failed + s.cancelled;
        if (s.produced > accounted) s.cancelled += s.produced - accounted;
    }
    s.outputs = outputs_.load();
    s.epochs = epochs_.load();
    s.threads = threads_;
    s.in_flight = in_flight_;
    auto elapsed = elapsed_ns_.load();
    if (epoch_running_) elapsed += clock::now().time_since_epoch().count() - epoch_start_;
    s.elapsed = std::chrono::nanoseconds(elapsed);
    s.consumer_wait = std::chrono::nanoseconds(consumer_wait_ns_.load());
    s.first_output = std::chrono::nanoseconds(first_output_ns_.load(std::memory_order_relaxed));
    s.first_output_max =
        std::chrono::nanoseconds(first_output_max_ns_.load(std::memory_order_relaxed));
    {
        std::lock_guard lock(sample_mutex_);
        s.full = samples_ > 0
                     ? static_cast<double>(saturated_samples_) / static_cast<double>(samples_)
                     : 0;
    }
    return s;
}

/// `s` as a JSON string literal.
std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
            out += esc;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

void pipeline_runtime::write_trace(std::ostream& os) const {
    if (spans_ == nullptr) {
        throw invalid_argument(
            "write_trace: this pipeline records no spans (build it with trace_spans > 0)");
    }
    std::vector<span_log::span> spans;
    std::map<std::uint32_t, std::string> names;
    std::uint64_t dropped = 0;
    spans_->snapshot(spans, names, dropped);
    std::uint64_t origin = std::numeric_limits<std::uint64_t>::max();
    for (const auto& sp : spans) origin = std::min(origin, sp.t0);
    const double us_per_tick = rate_.ns_per_tick() / 1000.0;
    std::set<std::uint32_t> threads;
    os << "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"dropped_spans\": " << dropped
       << "},\n\"traceEvents\": [\n";
    os << "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": "
          "\"ferry pipeline\"}}";
    char buf[160];
    for (const auto& sp : spans) {
        threads.insert(sp.thread);
        const double ts = static_cast<double>(sp.t0 - origin) * us_per_tick;
        const double dur = static_cast<double>(sp.t1 > sp.t0 ? sp.t1 - sp.t0 : 0) * us_per_tick;
        std::snprintf(buf, sizeof buf,
                      ", \"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f}",
                      sp.thread, ts, dur);
        os << ",\n{\"name\": " << json_string(span_names_.at(sp.stage)) << buf;
    }
    for (const std::uint32_t t : threads) {
        const auto it = names.find(t);
        const std::string name =
            it != names.end() ? it->second : "worker (thread " + std::to_string(t) + ")";
        os << ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": " << t
           << ", \"name\": \"thread_name\", \"args\": {\"name\": " << json_string(name) << "}}";
    }
    os << "\n]}\n";
}

std::vector<failure> pipeline_runtime::failures() const {
    std::lock_guard lock(failures_mutex_);
    return failures_;
}

}  // namespace

std::unique_ptr<runtime> compile(pipeline_spec spec, pipeline_options options) {
    return std::make_unique<pipeline_runtime>(std::move(spec), std::move(options));
}

}  // namespace ferry::detail
