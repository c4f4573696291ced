// SPDX-License-Identifier: Apache-2.0
/// \file
/// Options for stages and pipelines: concurrency, error policies, executors, ordering, memory.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/export.hpp"
#include "ferry/retry.hpp"
#include "ferry/state.hpp"

namespace ferry {

struct pipeline_stats;

/// Where a stage's calls run.
enum class executor : std::uint8_t {
    compute,  ///< the pipeline's TBB arena (`pipeline_options::threads` workers)
    io,       ///< the stage's own blocking-I/O threads (`concurrency` of them), off the arena
};
/// Run on the pipeline's compute arena (the default).
inline constexpr executor compute = executor::compute;
/// Run on dedicated I/O threads: for calls that block (file, network, object-store reads), so
/// 16 reads in flight cost no compute worker.
inline constexpr executor io = executor::io;

/// `stage_options::concurrency = ferry::tuned`: the pipeline's tuner (`pipeline_options::
/// autotune`) chooses the stage's concurrency at run time, from 1 up to the arena's threads (a
/// compute stage) or 64 (an I/O stage); `ferry::tuned(lo, hi)` gives the range it may use.
/// Both are `int`s of a reserved range, so they go wherever a concurrency goes:
/// \code
///   .map(read, {.concurrency = ferry::tuned, .executor = ferry::io})
///   .map(decode, {.concurrency = ferry::tuned(1, 16)})
///   .map(resize, ferry::tuned(2, 8))
/// \endcode
/// For map, filter and flat_map stages without a `timeout`; `build()` refuses a range with lo
/// below 1 or above hi, and a tuned stage of another kind.
struct tuned_concurrency {
    /// Concurrency values from `min` to `min + 2^30 - 1` stand for tuned ranges.
    static constexpr int min = -2147483647 - 1;
    static constexpr int limit = 32767;  ///< lo and hi are stored clamped to 0..limit

    /// A range the tuner may use: from `lo` to `hi` calls at once.
    [[nodiscard]] constexpr int operator()(int lo, int hi) const noexcept { return encode(lo, hi); }
    /// The stage kind's default range.
    constexpr operator int() const noexcept {  // NOLINT(google-explicit-constructor)
        return encode(1, 0);
    }
    /// Whether `concurrency` stands for a tuned range.
    [[nodiscard]] static constexpr bool is_tuned(int concurrency) noexcept {
        return concurrency >= min && concurrency < min + (1 << 30);
    }
    /// A tuned range's lo and hi (hi 0: the kind's default).
    [[nodiscard]] static constexpr int lo_of(int concurrency) noexcept {
        return (concurrency - min) >> 15;
    }
    [[nodiscard]] static constexpr int hi_of(int concurrency) noexcept {
        return (concurrency - min) & limit;
    }

  private:
    static constexpr int clamp(int v) noexcept { return v < 0 ? 0 : (v > limit ? limit : v); }
    static constexpr int encode(int lo, int hi) noexcept {
        return min + (clamp(lo) << 15 | clamp(hi));
    }
};
/// See `tuned_concurrency`.
inline constexpr tuned_concurrency tuned{};

/// The tuner's budgets (`pipeline_options::autotune`): at each epoch's first output, then every
/// `interval`, it measures each stage, the interval's delivered rate (source items the consumer
/// took over the interval's length) and the process's CPU time, and makes the move the
/// measurements say pays most (or undoes its last move when the rate fell or the CPU passed the
/// budget), within the budgets.
/// \code
///   .build({.autotune = ferry::autotune{.cpu_budget = 6, .interval = 500ms}})
/// \endcode
struct autotune {
    /// Cores the pipeline may use (at least 1; 0: the arena's threads), measured as the
    /// process's CPU time while tuning less the consumer's thread's between two `next()` calls
    /// (`pipeline_stats::consumer_cpu`: the training loop's own work). The arena gets this many
    /// threads (rounded down) unless `pipeline_options::threads` says fewer, and the tuner
    /// lowers a compute stage, or holds some of the arena's threads idle, when the process uses
    /// more.
    double cpu_budget = 0;
    /// Bytes the items in flight may hold (0: no limit): every source item admitted and not
    /// yet taken by the consumer counts at the most bytes a source item was measured to hold
    /// (`ferry::byte_size` of the outputs taken, of each source element, of each map, filter
    /// and map_async call's output and of each flat_map call's outputs together, over the items
    /// they stand for: its largest form between stages), and the tuner keeps `in_flight` at what
    /// the budget holds of them (`pipeline_stats::bytes_in_flight`).
    /// A budget below what the pipeline's shape holds (its batches or batch_by window of such
    /// items, or one output) ends the epoch at the first output with `ferry::invalid_argument`
    /// naming both. What it does not count: include/ferry/README.md, "Autotune".
    std::uint64_t memory_budget = 0;
    /// How often it measures and decides (at least 10 ms); an interval lasts until it holds 4
    /// outputs, up to 8 times this (a rate counted in a batch or two is off by half).
    std::chrono::milliseconds interval{500};
};

/// A stage's error policy: `ferry::fail`, `ferry::skip` or a `ferry::retry{...}`.
struct error_policy {
    error_action action = error_action::fail;
    int attempts = 1;
    std::chrono::milliseconds backoff{0};
    double multiplier = 1.0;
    retry_test when = nullptr;  ///< nullptr: every failure may be retried
    double jitter = 0.0;        ///< see `retry::jitter`

    constexpr error_policy() = default;
    constexpr error_policy(error_action a) : action(a) {}  // NOLINT(google-explicit-constructor)
    constexpr error_policy(retry r)                        // NOLINT(google-explicit-constructor)
        : action(r.then),
          attempts(r.attempts < 1 ? 1 : r.attempts),
          backoff(r.backoff),
          multiplier(r.multiplier),
          when(r.when),
          jitter(r.jitter < 0 ? 0 : (r.jitter > 1 ? 1 : r.jitter)) {}
};

/// Per-stage options. Declaration order is part of the API (designated initializers):
/// \code
///   .map(decode, {.concurrency = 8, .name = "decode", .on_error = ferry::skip})
/// \endcode
struct stage_options {
    /// How many calls of this stage may run at once; `ferry::tuned` or `ferry::tuned(lo, hi)`:
    /// chosen at run time by the pipeline's tuner.
    int concurrency = 1;
    /// Name shown in stats, errors and logs; defaults to `map#2`, `filter#3`, ...
    std::string name{};
    /// What to do when the callable throws.
    error_policy on_error{};
    /// With `skip` (or retry-then-skip): the number of failures the stage may skip, over the
    /// pipeline's lifetime (all epochs), before the next one fails the pipeline. 0 means no
    /// budget (skip forever).
    std::uint64_t max_failures = 0;
    /// false: this stage (and so everything after it) may emit in completion order.
    bool ordered = true;
    /// `ferry::compute` (default) or `ferry::io` for blocking calls.
    ferry::executor executor = ferry::executor::compute;
    /// With `skip` (or retry-then-skip): a budget as a rate. Once the stage has seen
    /// `failure_window` items, a failure that leaves more than this fraction of its last
    /// `failure_window` items failed fails the pipeline (a `stage_error` saying so). Judged
    /// only over a full window, so a few early failures do not end a run. 0 = no rate budget.
    /// \code
    ///   .map(fetch, {.concurrency = 16, .on_error = ferry::skip, .max_failure_rate = 0.2})
    /// \endcode
    double max_failure_rate = 0;
    /// The items `max_failure_rate` is judged over.
    std::size_t failure_window = 100;
    /// > 0: a call (one attempt) of this stage that runs longer fails its item with
    /// `ferry::timeout_error` (transient), and `on_error` decides: retry, skip or fail. The item
    /// moves on at once: ordered output never waits for a call that timed out. The call itself
    /// is told to give up (`ferry::this_call::stop_requested()` turns true; ferry's own blocking
    /// ops such as `read_url` and video demuxing end within ~100 ms) and its result, if it ever
    /// returns one, is dropped. A call that ignores the request keeps its thread until it
    /// returns, and destroying the pipeline waits for it. The stage's calls then run apart from
    /// their items, which costs a small allocation and a lock per call: set it on stages that
    /// can block (I/O, decoders of untrusted media), not on cheap ones. For `map`, `filter`,
    /// `flat_map` and `map_async` stages; 0 = no limit.
    /// \code
    ///   .map(fetch, {.concurrency = 16, .on_error = ferry::retry{.attempts = 3},
    ///                .executor = ferry::io, .timeout = std::chrono::seconds(5)})
    /// \endcode
    /// With retries, an attempt after a timed-out one runs while the timed-out one may still
    /// read the input: such attempts get a copy (or a const reference), never a moved input.
    std::chrono::milliseconds timeout{0};
};

/// Options of `batch(n, {...})`.
struct batch_options {
    /// Drop a last, partial batch at the end of each epoch (its items count as filtered).
    bool drop_last = false;
    /// Name shown in stats; defaults to `batch#3`.
    std::string name{};
};

/// How `builder::batch_by` groups elements by cost (tokens, pixels, seconds) instead of count.
/// \code
///   .batch_by([](const clip& c) { return c.seconds; },
///             {.max_cost = 600.0, .buckets = {2, 5, 10, 30}, .buffer = 2000})
/// \endcode
struct batch_by_options {
    /// A batch's summed cost stays at or below this (finite, above 0); an element that costs
    /// more on its own is a batch of its own (counted as `oversized batches` in the stage's
    /// counters).
    double max_cost = 0;
    /// Bucket bounds, ascending: an element of cost c joins bucket `i`, the number of bounds at
    /// or below c, and a batch holds elements of one bucket only (similar sizes, little
    /// padding). Empty: one bucket.
    std::vector<double> buckets{};
    /// Elements grouped together: the stage gathers this many (a window), groups them, and
    /// emits the window's batches. Batches never span two windows, so a state names a window
    /// by its first element's position and the batches of it delivered: O(1), exact resume.
    std::size_t buffer = 1000;
    /// At the epoch's end, leave out the batches that the cost rule did not close (the last
    /// window's partly filled buckets, whether or not the stream fills that window; their
    /// elements count as filtered). A full window then waits for the element after it, so the
    /// pipeline's `in_flight` must hold `buffer + 1` elements (`build()` says so otherwise).
    bool drop_last = false;
    /// What an element whose cost function throws or returns a negative, NaN or infinite cost
    /// becomes: `fail` (the default) ends the epoch, `skip` drops the element (counted as
    /// failed). Retries do not apply.
    error_policy on_error{};
    /// Name shown in stats; defaults to `batch_by#3`.
    std::string name{};
};

/// Options of `builder::route`.
struct route_options {
    /// Name shown in stats and failures; defaults to `route#3`. A branch's stages are named
    /// `<route>/<branch> <stage>` (e.g. `route#3/1 map#5`) unless they have names of their own.
    std::string name{};
    /// What an element becomes when the selector throws or returns a branch that does not
    /// exist: `fail` (the default) ends the epoch, `skip` drops it (counted as failed). Retries
    /// do not apply.
    error_policy on_error{};
    /// Keep input order across the branches (the default): an element that a fast branch
    /// finishes waits for the earlier ones in a slow branch. false: the output is in
    /// completion order (a pipeline then resumes as an unordered one does).
    bool ordered = true;
};

/// Severity of a log line.
enum class log_level : std::uint8_t { info, warning, error };

/// Where ferry writes log lines (failed items, summaries). Must be callable from any thread.
using logger = std::function<void(log_level, std::string_view)>;

/// Options of `build()`. Declaration order is part of the API.
struct pipeline_options {
    /// Compute threads of this pipeline's own TBB arena (at most 1024). 0, the default: half of
    /// `std::thread::hardware_concurrency()` (at least 1), leaving room for the training loop that
    /// shares the machine; with `autotune.cpu_budget` set, its whole cores instead. That count is
    /// the machine's, not a CPU affinity mask's or a container's quota: set `threads` there.
    /// `stats().threads` says how many work (the tuner may hold some idle).
    int threads = 0;
    /// Source items admitted and not yet taken by the consumer, at most. 0 = derived from the
    /// stages' concurrencies and batch sizes. A consumer that stops reading stalls the graph
    /// at this many items instead of growing it.
    std::size_t in_flight = 0;
    /// false: the whole pipeline emits in completion order (faster when stage times vary).
    bool ordered = true;
    /// Where failures and summaries are logged; empty = stderr. Rate-limited per stage.
    ferry::logger logger{};
    /// Lines a stage may log per `log_window` before it only counts (then prints one summary).
    int log_burst = 5;
    std::chrono::milliseconds log_window{10000};
    /// Called every `report_every` with the current stats, from a ferry thread. Empty = never.
    std::function<void(const pipeline_stats&)> on_report{};
    std::chrono::milliseconds report_every{10000};
    /// true: until the consumer takes an epoch's first output, the source admits only the items
    /// that output needs (one batch's worth: the product of the batch sizes), so that every
    /// thread works on the first batch and nothing competes with its last steps for a core; then
    /// the pipeline fills to `in_flight`. Costs one item's trip through the pipeline per epoch.
    /// false: fill to `in_flight` from the start.
    bool fast_start = true;
    /// > 0: record every stage call (its stage, thread, start and end) and each wait of the
    /// consumer, and the monitor's samples of the queues, up to this many records (32 bytes
    /// each; later ones are counted as dropped), for `pipeline::write_trace`. 0: off, nothing
    /// recorded. Costs a lock per call.
    std::size_t trace_spans = 0;
    /// An epoch in which more than this fraction of the source items failed (skipped by their
    /// stages' error policies) does not end normally: the iterator throws `ferry::error`
    /// (`errc::stage_failed`) saying how many failed and where, and the pipeline stays failed.
    /// A dead server must not look like a short, successful epoch. 1 = off.
    double max_epoch_failure_rate = 0.5;
    /// Non-empty: every failure is appended to this file as one JSON line (its input, stage,
    /// code, message, epoch and item; see <ferry/quarantine.hpp>), written with one `write` per
    /// line as it is recorded, so the lines so far survive a crash later in the run. `build()`
    /// opens it (creates it with mode 0600: its lines name inputs and why they failed; an existing
    /// file keeps its mode) and throws `ferry::io_error` when it cannot; a later write failure is
    /// logged once. Load it back with `ferry::load_quarantine` to leave those inputs out next time:
    /// \code
    ///   auto pipe = ferry::from(files).exclude(ferry::load_quarantine("bad.jsonl"))
    ///                   .map(load, {.on_error = ferry::skip})
    ///                   .build({.quarantine = "bad.jsonl"});
    /// \endcode
    std::filesystem::path quarantine{};
    /// A state saved by `pipeline::state()` (read back with `pipeline_state::parse`): the first
    /// epoch continues from there, exactly where the saved run stood (see `pipeline_state`).
    /// `build()` throws `ferry::invalid_argument` when it does not fit this pipeline (another
    /// dataset size, seed, rank or world size, another shape of stages), and for an unordered
    /// pipeline with a flat_map or unbatch.
    std::optional<pipeline_state> resume_from{};
    /// NVTX ranges, for Nsight Systems: when ferry was built with the CUDA Toolkit, each call of
    /// the source, a map, filter or flat_map (each attempt) is a range in the `ferry` domain on
    /// the thread that runs it, named by the stage, with the item's position in its epoch as a
    /// 64-bit payload, and the consumer's waits are ranges named "waiting for the pipeline".
    /// Without an NVTX tool attached a range costs a call through a null pointer; without CUDA
    /// there are none. false: none.
    bool nvtx = true;
    /// Tune the stages whose concurrency is `ferry::tuned` at run time, within these budgets
    /// (see `ferry::autotune`). Unset with a tuned stage: tuned with the defaults.
    std::optional<ferry::autotune> autotune{};
};

}  // namespace ferry
