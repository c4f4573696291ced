// SPDX-License-Identifier: Apache-2.0
/// \file
/// The validated plan of a pipeline: stage names, concurrency, ordering and the in-flight limit,
/// with every option check. Pure C++ (no TBB), so that it can be tested on its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ferry/detail/spec.hpp"
#include "ferry/options.hpp"

namespace ferry::detail {

/// Sane bounds, beyond which `make_plan` refuses the options (`ferry::invalid_argument`) rather
/// than failing to create threads later (from a thread, where nothing can catch it).
inline constexpr int max_threads = 1024;      ///< `pipeline_options::threads`
inline constexpr int max_concurrency = 4096;  ///< `stage_options::concurrency`
inline constexpr std::size_t max_in_flight = std::size_t{1}
                                             << 24;  ///< `pipeline_options::in_flight`

/// One stage as the engine runs it: its spec and what the plan decided about it.
struct stage_plan {
    stage_spec spec;
    std::string name;     ///< the user's name, or "<kind>#<position>"
    std::string kind;     ///< "map", "filter", ...
    int concurrency = 1;  ///< calls at once (1 for batch and unbatch)
    bool io = false;      ///< runs on its own I/O threads (`executor = io`)
    bool ordered = true;  ///< its renumbering point restores source order
    /// A map's calls run with this as `default_tensor_allocator()`: the next stage's
    /// `input_allocator` (to_cuda's pinned pool), if any.
    allocator output_allocator;
    // What the kind means at run time, decided here once, so that the runtime asks these rather
    // than the kind (a new kind sets them in make_plan).
    bool applies = false;        ///< map, filter, flat_map: called through invoke() (invoke.hpp)
    bool counted_after = false;  ///< flat_map: the renumbering node after it counts its outputs
    bool own_slots = false;      ///< io or map_async: its calls hold no arena thread
    bool expands = false;  ///< flat_map, unbatch, batch_by: one element (a window) makes several
    /// With a timeout, a retry may run beside the expired call, on the same input: the callable
    /// leaves its input alone (`retry_reads_input`) and is no filter (whose kept input moves back
    /// into the box).
    bool retries_beside = false;
    /// batch, unbatch, flat_map and batch_by: a renumbering node starts a new sequence space
    /// after it (renumber.cpp).
    bool renumbers = false;
    /// map, filter, flat_map and map_async: one call per element, whose concurrency
    /// `ferry::tuned` may move; the tuner measures the untuned ones too (tuning.cpp).
    bool tunable = false;
    /// A map, filter or flat_map with a timeout: its calls run apart from their boxes
    /// (timed_stage.cpp), and a stopped epoch settles without waiting for them.
    bool timed = false;
    /// batch_by, the first stage to renumber, with the output in order: its batches list their
    /// items' positions, which are source positions there (resume_state::lists_window).
    bool lists_window = false;
    /// A branch stage: the index (in the plan's stages) of its route, and its branch there; -1
    /// for a stage on the main line. A route's branches follow it, branch by branch.
    int route = -1;
    std::size_t branch = 0;
    std::size_t branches = 0;  ///< a route: how many branches it has
    /// A route some of whose branches expand (flat_map, unbatch): it numbers each branch's
    /// elements apart and a serial join puts the branches' outputs back in its input order
    /// (rejoin.cpp); its branches' stages keep order.
    bool rejoins = false;
    /// `ferry::tuned`: the tuner moves its concurrency between `tuned_lo` and `tuned_hi`
    /// (`concurrency` is where it starts); its calls pass a gate of its own (tuned_stage.cpp).
    bool tuned = false;
    int tuned_lo = 0;
    int tuned_hi = 0;
};

/// The whole pipeline's plan.
struct pipeline_plan {
    source_spec source;
    std::vector<stage_plan> stages;
    int threads = 1;                     ///< the arena's threads
    std::size_t in_flight = 0;           ///< source items inside the graph at most
    std::size_t first_output_items = 1;  ///< source items the first output needs
    /// What holds those items: "batch 'b' fills batches of 8 elements", for the memory budget's
    /// error; empty when no batch-like stage needs more than one.
    std::string first_output_holds;
    std::uint64_t credit_batch = 1;  ///< credits the consumer returns at once
    std::size_t burst = 1;           ///< results the consumer gathers before taking them
    bool output_ordered = true;      ///< the output restores source order
    std::string shape;               ///< the stages as pipeline_state::shape() spells them
    /// Tuning (`pipeline_options::autotune`, or a tuned stage): the budgets, resolved.
    bool tuning = false;
    double cpu_budget = 0;            ///< cores
    std::uint64_t memory_budget = 0;  ///< bytes in flight, 0: none
    std::chrono::milliseconds tune_every{500};
    std::size_t (*output_bytes)(any_value&) = nullptr;  ///< see pipeline_spec
};

/// The name of a stage kind, as stats and messages print it.
[[nodiscard]] const char* kind_name(stage_kind k) noexcept;

/// Checks `spec` against `options` and decides what the options leave open (threads, in_flight).
/// Throws `ferry::invalid_argument` naming the stage and the option that cannot work.
[[nodiscard]] pipeline_plan make_plan(pipeline_spec spec, const pipeline_options& options);

}  // namespace ferry::detail
