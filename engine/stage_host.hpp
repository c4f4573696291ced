// SPDX-License-Identifier: Apache-2.0
/// \file
/// stage_host: what a stage's node (renumber_node, route_node, the call nodes) reaches of the
/// runtime, and nothing more. No TBB's flow graph.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>

#include "box.hpp"
#include "counters.hpp"
#include "ferry/item.hpp"
#include "monitor_thread.hpp"

namespace ferry::detail {

class pipeline_runtime;  // runtime.hpp
class gateway;           // flow.hpp
class timed_jobs;        // timed_jobs.hpp
struct stage_runtime;    // stage_runtime.hpp

/// The runtime as a stage's node sees it: the epoch's flags, the one path a call's result takes
/// (`run_stage`, `finish_call`, `fail_item`), where messages go (`pass_on`, `launch`,
/// `retire_gap`), the box pool and what a resumed epoch skips. A copy is one pointer; every call
/// is inline (defined after `pipeline_runtime`, in runtime.hpp; `pass_on` and `launch` in
/// flow.hpp), so a node's path costs what it did as the runtime's own method.
class stage_host {
  public:
    explicit stage_host(pipeline_runtime& rt) noexcept : rt_(&rt) {}

    // The epoch's flags.
    /// True for an element whose work would be wasted: its epoch is being cancelled, or it comes
    /// after an item that failed the pipeline.
    [[nodiscard]] inline bool should_drop(msg m) const noexcept;
    /// The epoch's items can only end cancelled (epoch_control::cancelling).
    [[nodiscard]] inline bool cancelling() const noexcept;
    /// An abort has begun (epoch_control::aborting).
    [[nodiscard]] inline bool aborting() const noexcept;
    /// The flags a user call reads through this_call::stop_requested() (`call_scope`).
    [[nodiscard]] inline const std::atomic<bool>& stopping_flag() const noexcept;
    [[nodiscard]] inline const std::atomic<bool>& aborting_flag() const noexcept;
    /// The `item_info` of `m` for a stage that asks for it (the current epoch's).
    [[nodiscard]] inline item_info item_of(const box& m) const;
    /// The threads the pipeline works with now (a call's `call_share` divides them).
    [[nodiscard]] inline int threads_now() const noexcept;

    // What a call comes to.
    /// A map / filter / flat_map stage's work on `m` (pipeline_runtime::run_stage).
    inline void run_stage(stage_runtime& st, msg m, const shard_writer& w);
    /// What a call on `m` came to (pipeline_runtime::finish_call, stage.cpp).
    inline void finish_call(stage_runtime& st, msg m, const shard_writer& w,
                            const std::exception_ptr& err, bool keep = true);
    /// The one record of `m`'s failure at `st`: a gap, or an error that halts the source.
    inline void fail_item(stage_runtime& st, msg m, const std::exception_ptr& cause);
    /// Turns an element that will not be processed into a gap; its items are cancelled.
    inline void drop_unprocessed(msg m) noexcept;
    /// Counts `m`'s items as filtered (by stage `w`): it then leaves the graph as a gap.
    inline void count_filtered(msg m, const shard_writer& w) noexcept;

    // Where messages go.
    /// Passes `m` on through `gw`, counted as emitted by `st` (flow.hpp).
    inline void pass_on(const stage_runtime& st, msg m, gateway& gw, const shard_writer& w);
    /// Starts `job` where `st`'s calls run: its I/O threads, or the arena (flow.hpp).
    template <class F>
    void launch(const stage_runtime& st, F&& job);
    /// A gap leaves the graph: its box goes back, its credits too.
    inline void retire_gap(msg m);
    /// A box from the pool (an expansion's outputs, a branch's end).
    [[nodiscard]] inline box* acquire_box();
    inline void release_box(box* b) noexcept;

    // Resume.
    /// Unordered: the done-tracker lists positions (a batch lists its items').
    [[nodiscard]] inline bool tracks_positions() const noexcept;
    /// A resumed epoch's first item: how many of its outputs were delivered before the save.
    [[nodiscard]] inline std::size_t skip(const resume_point& start) const noexcept;

    // Calls that outlive their box.
    /// The monitor polls `try_take` until it yields, then calls `done` (map_async's futures).
    inline void poll_later(monitor_thread::try_take_fn try_take, monitor_thread::done_fn done);
    /// Calls of timed stages not yet returned (destruction waits for them).
    [[nodiscard]] inline timed_jobs& timed_calls() noexcept;

  private:
    pipeline_runtime* rt_;
};

}  // namespace ferry::detail
