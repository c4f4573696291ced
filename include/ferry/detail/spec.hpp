// SPDX-License-Identifier: Apache-2.0
/// \file
/// The type-erased description of a pipeline that the builder hands to the engine.
/// Users never touch this: it is the seam between typed headers and the compiled TBB engine.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ferry/completion.hpp"
#include "ferry/detail/any_value.hpp"
#include "ferry/error.hpp"
#include "ferry/export.hpp"
#include "ferry/options.hpp"
#include "ferry/sampling.hpp"
#include "ferry/state.hpp"
#include "ferry/stats.hpp"
#include "ferry/tensor.hpp"
#include "ferry/this_call.hpp"

namespace ferry::detail {

enum class stage_kind : std::uint8_t {
    map,
    filter,
    flat_map,
    batch,
    unbatch,
    map_async,
    batch_by,
    route
};

/// Pulls the next source element into `out`; false at the end of the epoch.
using source_cursor = std::function<bool(any_value& out)>;

struct source_spec {
    /// Opens a pass over the source for epoch `e` (0, 1, ...).
    std::function<source_cursor(std::uint64_t e)> open;
    /// Optional: writes a short description of the element just pulled into `value` (its path,
    /// URL, or the user's `describe` text) to `out`, for `failure::input`. Empty: the source's
    /// elements are not described, and the engine spends nothing per item on it.
    std::function<void(any_value& value, std::string& out)> describe;
    /// Optional (only with `describe`): true for a description whose item is to be left out; the
    /// engine counts it as filtered at the source.
    std::function<bool(const std::string& input)> excluded;
    /// Optional: the dataset index of the item at `position` of `epoch` (a sampled source's
    /// order), for `item_info::index`; empty: the index is the position.
    std::function<std::uint64_t(std::uint64_t epoch, std::uint64_t position)> index_of;
    /// `sampling::seed` for `item_info::seed` (0 without sampling).
    std::uint64_t seed = 0;
    /// Optional: opens epoch `e` at `position` directly (a sampled source: O(1)), for a resume.
    /// Empty: the engine opens the epoch and pulls and drops `position` elements.
    std::function<source_cursor(std::uint64_t e, std::uint64_t position)> open_at;
    /// Optional (a sampled source): opens the rest of a merged epoch for this rank, from the
    /// state's position (`pipeline_state::merge`, `resumed_sampler`).
    std::function<source_cursor(const pipeline_state& st)> open_resumed;
    /// A sampled source's identity, saved in `pipeline_state` and checked on resume.
    std::optional<sampler_identity> identity;
    /// `ferry::byte_size` of an element (set by `make_source` for its element type), which the
    /// memory budget measures as each item leaves the source; null: not measured there.
    std::size_t (*value_bytes)(any_value&) = nullptr;
};

/// Opens `s` at `position` of `epoch`: directly when it can seek (`open_at`), else by opening the
/// epoch and pulling and dropping what comes before the position (a generator must then make
/// the same items again). A resume and each part of a zip open their sources this way.
/// The pulling stops at a stop request (`this_call::stop_requested()`: `errc::cancelled`), and a
/// source whose epoch ends before the position is `ferry::invalid_argument`: the state is not
/// one of this source's, and resuming it would deliver an empty epoch in silence.
inline source_cursor open_source_at(const source_spec& s, std::uint64_t epoch,
                                    std::uint64_t position) {
    if (s.open_at) return s.open_at(epoch, position);
    source_cursor c = s.open(epoch);
    any_value skipped;
    for (std::uint64_t i = 0; i < position; ++i) {
        // One relaxed load or two per element, against a std::function call and a value made
        // and dropped: an endless generator resumed far in stops when asked.
        if (this_call::stop_requested()) {
            throw error(errc::cancelled,
                        "resume_from: stopped while pulling the source to the "
                        "saved position " +
                            std::to_string(position) + " (at " + std::to_string(i) + ")");
        }
        if (!c(skipped)) {
            throw invalid_argument("resume_from: the saved position " + std::to_string(position) +
                                   " is past the end of the source's epoch " +
                                   std::to_string(epoch) + ", which has " + std::to_string(i) +
                                   " items");
        }
        skipped.reset();
    }
    return c;
}

struct stage_spec {
    stage_kind kind = stage_kind::map;
    stage_options options{};
    std::size_t batch_size = 0;       // batch; batch_by: its buffer (window)
    bool drop_last = false;           // batch, batch_by
    double max_cost = 0;              // batch_by only
    std::vector<double> cost_bounds;  // batch_by only: its buckets' bounds, ascending
    /// batch_by: the cost of one element (any number; the engine checks it).
    std::function<double(any_value& value)> cost_fn;
    /// route: the branch an element takes (the engine checks it is one).
    std::function<std::int64_t(any_value& value)> select_fn;
    /// route: each branch's stages (map, filter and map_async only), in order.
    std::vector<std::vector<stage_spec>> branches;
    /// route: the branches' names in stage names (`<route>/<name> <stage>`); empty: their
    /// indices.
    std::vector<std::string> branch_names;

    /// map: puts the result of the call on `in` into `out`, which may be `in` itself (the
    /// engine's usual call: the result replaces the input). `last_attempt` false asks the call to
    /// leave `in` intact (copy or read it rather than move from it) so that a retry can use it
    /// again; a stage with a timeout may then run two attempts on the same `in` at once.
    std::function<void(any_value& in, any_value& out, bool last_attempt)> map_fn;
    /// map / flat_map: whether a call that is not the last attempt leaves its input untouched
    /// (the callable reads it through a reference, or gets a copy). Only then may a retry start
    /// while an attempt that timed out still runs on the same input.
    bool retry_reads_input = false;
    /// map / filter / flat_map: the callable takes the element's `item_info`; the engine sets
    /// `detail::current_item()` around its calls.
    bool wants_item = false;
    /// filter: true keeps the item.
    std::function<bool(any_value& value)> filter_fn;
    /// flat_map / unbatch: appends the outputs of one input.
    std::function<void(any_value& in, std::vector<any_value>& out, bool last_attempt)> expand_fn;
    /// batch, batch_by: packs `items` (in order) into one value.
    std::function<void(std::vector<any_value>& items, any_value& out)> pack_fn;
    /// map_async: starts one call; the result arrives through the sink.
    std::function<void(any_value&& in, std::shared_ptr<async_sink> sink)> start_fn;
    /// Any kind, optional: the memory this stage wants its input built in. The engine applies it
    /// around the calls of the map right before (as `default_tensor_allocator()` on the calling
    /// thread); `to_cuda()` asks for its pinned pool here.
    allocator input_allocator;
    /// The bytes one of this stage's outputs holds (`ferry::byte_size` of its element type), for
    /// the tuner's memory budget: with a budget, the outputs of a map, filter or map_async call
    /// are measured, so that an item counts at its largest form between stages, not only at the
    /// size it leaves the pipeline with. Set by the builder; none: not measured.
    std::size_t (*value_bytes)(any_value&) = nullptr;
    /// Any kind, optional: run by `builder::build()` on that pipeline's own copy of the stage,
    /// before the engine compiles it. Checks what only the running machine can tell (throws a
    /// `ferry::error`, and `build()` with it) and sets up per-pipeline state, e.g. `to_cuda()`
    /// makes its streams and pools here and installs the `map_fn` that uses them. The engine
    /// never calls it.
    std::function<void(stage_spec& self)> on_build;
};

struct pipeline_spec {
    source_spec source;
    std::vector<stage_spec> stages;
    /// The bytes an output holds (`ferry::byte_size` of the pipeline's element type), for the
    /// tuner's memory budget.
    std::size_t (*output_bytes)(any_value&) = nullptr;
};

/// What `runtime::try_next` found.
enum class next_poll {
    value,      ///< an output, in `out`
    end,        ///< the epoch's end (as `next` returning false)
    not_ready,  ///< nothing without waiting: call `next`
};

/// The compiled, running pipeline (engine side). `pipeline<T>` is a typed handle over it.
class FERRY_API runtime {
  public:
    virtual ~runtime() = default;
    /// Next output of the current epoch (starting one if none runs); false at its end.
    /// Throws `stage_error` if a stage failed under the `fail` policy (sticky).
    virtual bool next(any_value& out) = 0;
    /// `next` where it returns at once: an output or the epoch's end already there. `not_ready`
    /// where `next` would wait, start an epoch, stop, consult the tuner, or another thread holds
    /// the pipeline's control (never blocks on it). Throws as `next` does for what it takes.
    /// For a caller whose wait costs more than the call (the Python package's, which waits on
    /// a thread of its own to hear signals).
    virtual next_poll try_next(any_value& out) {
        (void)out;
        return next_poll::not_ready;
    }
    /// Whether the tuner runs (tuned stages, or an autotune budget).
    [[nodiscard]] virtual bool tuning() const noexcept { return false; }
    /// The CPU budget leaves out the consumer's own work: while tuning, the CPU time of the
    /// thread that calls `next` between two calls. A caller that calls `next` on a thread of its
    /// own for another thread (the Python package's waiter) calls these on that other thread
    /// around each of its takes, and its time between a `consumer_leaves` and the next
    /// `consumer_enters` counts as the consumer's instead.
    virtual void consumer_enters() noexcept {}
    virtual void consumer_leaves() noexcept {}
    /// True in a process forked after this pipeline was built: its threads stayed in the
    /// parent, so destroying it would wait for them for ever; its owner leaks it instead.
    /// `stop()` and `abandon_epoch()` do nothing on it, `next()` throws.
    [[nodiscard]] virtual bool orphaned() const noexcept { return false; }
    /// Ends the current epoch early (the consumer left the loop); the next `next()` starts a
    /// new epoch. Returns once no work of that epoch runs.
    virtual void abandon_epoch() noexcept = 0;
    /// Stops for good, from any thread; a `next()` in progress returns false promptly.
    virtual void stop() noexcept = 0;
    [[nodiscard]] virtual bool epoch_running() const noexcept = 0;
    [[nodiscard]] virtual pipeline_stats stats() const = 0;
    [[nodiscard]] virtual std::vector<failure> failures() const = 0;
    virtual void write_trace(std::ostream& os) const = 0;
    /// Where the epoch stands (see `pipeline_state`); throws `ferry::invalid_argument` for a
    /// pipeline that cannot say (unordered output).
    [[nodiscard]] virtual pipeline_state state() const = 0;
};

/// Compiles `spec` into a TBB flow graph; throws `ferry::invalid_argument` on bad options.
[[nodiscard]] FERRY_API std::unique_ptr<runtime> compile(pipeline_spec spec,
                                                         pipeline_options options);

}  // namespace ferry::detail
