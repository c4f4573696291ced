// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner's policy (`pipeline_options::autotune`): given one interval's measurements, which
/// tuned stage's concurrency (or the arena's working threads) to move, or which last move to
/// undo. Pure C++ (no TBB, no clock):
/// the same measurements give the same decisions, so that it is tested on recorded ones
/// (tests/engine/tuner_policy.cpp); tuning.cpp measures and applies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/stats.hpp"

namespace ferry::detail {

/// One tuned stage as the policy sees it.
struct tuned_stage_range {
    std::string name;
    bool io = false;  ///< on its own I/O threads (else the arena's)
    int lo = 1;
    int hi = 1;
    int start = 1;  ///< its concurrency when the pipeline starts
};

/// The budgets (`ferry::autotune`).
struct tuner_budget {
    double cpu_cores = 1;            ///< CPU the pipeline may use, in cores
    int threads = 1;                 ///< the arena's threads: the most `threads()` may be
    std::uint64_t memory_bytes = 0;  ///< bytes the items in flight may hold (0: no limit)
    std::size_t min_in_flight = 1;   ///< source items the pipeline's shape holds at once
    /// What holds them, for the error of a budget below them: e.g. "batch_by 'group' holds a
    /// window of 128 elements".
    std::string min_in_flight_by{};
    std::size_t max_in_flight = 1;  ///< where in_flight starts, and the most it may be
};

/// What the runtime measured over one interval.
struct tuner_sample {
    double at_s = 0;             ///< since the pipeline was built
    double interval_s = 0;       ///< its length
    double items = 0;            ///< source items the consumer took in it
    double outputs = 0;          ///< outputs (batches) it took in it (0: not known)
    double consumer_wait_s = 0;  ///< time the consumer waited for the pipeline in it
    double full = 0;             ///< share of it the in-flight limit was reached
    double cpu_s = 0;            ///< CPU time of the pipeline's threads in it
    std::vector<double> busy_s;  ///< per tuned stage: its calls' summed wall time in it
    double items_in_flight = 0;  ///< source items in flight (sampled mean)
    /// Bytes a source item holds: the most per source item among the outputs delivered in the
    /// interval (the `ferry::byte_size` of the outputs that carry a source item's accounting,
    /// and of those before them that carry none, over the source items they stand for); 0:
    /// none measured yet.
    double item_bytes = 0;
    double largest_output_bytes = 0;  ///< the largest output delivered so far
    std::size_t in_flight = 0;        ///< in_flight now (0: the policy's own)
};

/// Decides, one interval at a time. At most one move per interval, so that the next interval's
/// rate judges it: a raise after which the consumer's rate fell by more than `tolerance` is
/// undone, and the stage is not raised again for `hold` intervals.
class tuner_policy {
  public:
    static constexpr double busy_enough = 0.8;  ///< a stage this busy may be raised
    static constexpr double idle = 0.5;         ///< a stage this idle may give a slot away
    /// A rate fall that undoes a raise: a tenth, or two outputs' worth of the interval where
    /// fewer than 20 outputs came (a rate counted in batches moves by a batch at random).
    static constexpr double tolerance = 0.1;
    static constexpr int hold = 4;             ///< intervals a stage stays unraised after an undo
    static constexpr int consumer_streak = 3;  ///< full intervals before backing off
    /// The consumer waited less than this share of an interval: loading keeps up with it.
    static constexpr double consumer_waits = 0.05;
    /// in_flight rises only to more than this much above where it is, and not within
    /// `memory_rest` intervals of a fall: bytes per item measured on other items move it.
    static constexpr double memory_margin = 0.25;
    static constexpr int memory_rest = 4;

    tuner_policy(std::vector<tuned_stage_range> stages, tuner_budget budget);

    /// One interval: the decisions taken now (appended to `decisions()`), possibly none.
    std::vector<tuning_decision> step(const tuner_sample& s);

    /// Each tuned stage's concurrency now.
    [[nodiscard]] const std::vector<int>& limits() const noexcept { return limits_; }
    [[nodiscard]] const tuner_budget& budget() const noexcept { return budget_; }
    /// `in_flight` now (the memory budget moves it).
    [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_; }
    /// The arena's threads that work now (the CPU budget moves it; a compute stage uses at
    /// most this many).
    [[nodiscard]] int threads() const noexcept { return threads_; }
    /// Every decision so far, oldest first (the last `max_kept`), with the rate after each
    /// filled in one interval later.
    [[nodiscard]] const std::vector<tuning_decision>& decisions() const noexcept { return log_; }
    /// A memory budget the pipeline's shape cannot keep: the message, once.
    [[nodiscard]] const std::optional<std::string>& memory_error() const noexcept {
        return memory_error_;
    }

    static constexpr std::size_t max_kept = 256;

    /// The memory budget's rules (tuner_memory.cpp), shared with the epoch's first output
    /// (tuning.cpp): the in_flight that items of `item_bytes` allow (as many as the budget
    /// holds, within what the shape needs and the most), and the error when the least the shape
    /// holds — its minimum in flight of such items, or the largest output — is more than the
    /// budget.
    [[nodiscard]] static std::size_t in_flight_for(const tuner_budget& b, double item_bytes);
    [[nodiscard]] static std::optional<std::string> memory_check(const tuner_budget& b,
                                                                 double item_bytes,
                                                                 double largest_output_bytes);

  private:
    void add(tuning_decision d, bool judged);
    [[nodiscard]] double utilization(std::size_t i, const tuner_sample& s) const;
    bool keep_memory(const tuner_sample& s, double rate);
    /// Stage `i`'s concurrency, or the arena's threads for i == stages_.size().
    int& knob(std::size_t i) { return i < limits_.size() ? limits_[i] : threads_; }
    [[nodiscard]] const std::string& knob_name(std::size_t i) const;

    std::vector<tuned_stage_range> stages_;
    tuner_budget budget_;
    std::vector<int> limits_;
    std::vector<int> held_;  ///< intervals each knob (the stages, then threads) stays unraised
    std::size_t in_flight_;
    int memory_rest_ = 0;  ///< intervals in_flight stays from rising
    int threads_;
    std::vector<tuning_decision> log_;
    /// The last raise, judged by the next interval's rate: its knob and its place in log_.
    std::optional<std::size_t> pending_stage_;
    std::size_t pending_index_ = 0;
    int consumer_bound_ = 0;  ///< consumer-bound intervals in a row
    std::size_t added_ = 0;   ///< decisions this step
    std::optional<std::string> memory_error_;
};

}  // namespace ferry::detail
