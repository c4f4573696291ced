// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner's policy (`pipeline_options::autotune`): given one interval's measurements, which
/// stage's concurrency (or the arena's working threads, or `in_flight`) to move, or which last
/// move to undo. Pure C++ (no TBB, no clock, no engine): the same measurements give the same
/// decisions, so that it is tested on recorded ones (tests/engine/tuner_policy.cpp) and driven
/// by a simulated pipeline whose best setting is known (tests/engine/tuner_simulator.cpp);
/// tuning.cpp measures and applies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ferry/stats.hpp"

namespace ferry::detail {

/// One stage whose calls the policy measures: a tuned one, which it moves within [lo, hi], or
/// an untuned one (`tuned` false, lo = hi = its concurrency), which it only reads, so that a
/// stage it cannot move still bounds what a move can gain.
struct tuned_stage_range {
    std::string name{};
    bool io = false;  ///< on its own I/O threads, or map_async (else the arena's)
    int lo = 1;
    int hi = 1;
    int start = 1;  ///< its concurrency when the pipeline starts
    bool tuned = true;
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
    double items = 0;            ///< source items delivered to the consumer in it
    double outputs = 0;          ///< outputs (batches) delivered in it (0: not known)
    double consumer_wait_s = 0;  ///< time the consumer waited for the pipeline in it
    double full = 0;             ///< share of it the in-flight limit was reached
    double cpu_s = 0;            ///< CPU time of the pipeline's threads in it
    std::vector<double> busy_s;  ///< per stage of the policy's: its calls' summed wall time
    double arena_busy_s = 0;     ///< the summed wall time of every call on the arena's threads
    double items_in_flight = 0;  ///< source items in flight (sampled mean)
    /// Bytes a source item holds: the most per source item among the outputs delivered in the
    /// interval (the `ferry::byte_size` of the outputs that carry a source item's accounting,
    /// and of those before them that carry none, over the source items they stand for); 0:
    /// none measured yet.
    double item_bytes = 0;
    double largest_output_bytes = 0;  ///< the largest output delivered so far
    std::size_t in_flight = 0;        ///< in_flight now (0: the policy's own)
    /// The interval from an epoch's start to its first output: the pipeline filled, so the
    /// last move is not judged by it (the move it leads to is judged by the next).
    bool first = false;
};

/// Decides, one interval at a time, at most one move per interval (of one knob, or of a few
/// together), so that the next interval's rate judges it. The rate is the interval's delivered
/// rate: the source items the consumer took in it over its length.
///
/// 1. The last raise is judged: a rate fall of more than `tolerance`, or the CPU over the
///    budget by more than `cpu_slack`, undoes it, and its knobs rest (are not raised) for a
///    cool-down that doubles with each undo (`hold`, up to `max_hold`); a raise that gained less
///    than half of `min_gain` is kept and its knobs rest the same way; one that paid halves
///    their next rest.
/// 2. `in_flight` follows the memory budget (tuner_memory.cpp).
/// 3. Over the CPU budget by more than `cpu_slack`: the lowering of one knob that keeps the most
///    rate with the CPU it predicts within the budget, at once; that knob rests.
/// 4. The consumer waited less than `consumer_waits` of the interval: it sets the pace, nothing
///    is raised; after `consumer_streak` such intervals with the pipeline full a tuned stage
///    under `idle` busy gives a slot back.
/// 5. Otherwise the raise the measurements say pays most: each knob busy at least `busy_enough`
///    (a stage's calls over its slots, or the arena's threads), alone or with the stages that
///    bound it next, is scaled to its next step, and every measured bound on the rate — each
///    stage's slots over its busy time, the arena's threads over its busy time, the consumer's
///    time over its time not waiting — predicts the gain (the least bound there over the least
///    now, so that a bound nobody measures leaves it at 1). It must be at least `min_gain`, with
///    the CPU predicted in proportion to the rate within the budget; a raise that would pass the
///    budget is held within it by another knob grown less or lowered (a lowering is a reversal:
///    it must promise twice `min_gain`).
class tuner_policy {
  public:
    static constexpr double busy_enough = 0.8;  ///< a stage this busy may be raised
    static constexpr double idle = 0.25;        ///< a stage this idle may give a slot away
    /// A raise needs this much more rate predicted; half of it measured, or the knob rests.
    static constexpr double min_gain = 0.03;
    /// A rate fall that undoes a raise: a tenth, or two outputs' worth of the interval where
    /// fewer than 20 outputs came (a rate counted in batches moves by a batch at random).
    static constexpr double tolerance = 0.1;
    static constexpr int hold = 4;             ///< intervals a knob rests after its first undo
    static constexpr int max_hold = 32;        ///< the longest rest (each undo doubles it)
    static constexpr double cpu_slack = 0.05;  ///< measured CPU over the budget by more: lower
    static constexpr int consumer_streak = 3;  ///< full intervals before backing off
    /// The consumer waited less than this share of an interval: loading keeps up with it.
    static constexpr double consumer_waits = 0.03;
    /// in_flight rises only to more than this much above where it is, and not within
    /// `memory_rest` intervals of a fall: bytes per item measured on other items move it.
    static constexpr double memory_margin = 0.25;
    static constexpr int memory_rest = 4;
    /// An interval ends after `autotune.interval`, once it holds this many outputs (a rate
    /// counted in a batch or two moves by half at random), or at `max_stretch` times its length.
    static constexpr double min_outputs = 4;
    static constexpr double max_stretch = 8;

    tuner_policy(std::vector<tuned_stage_range> stages, tuner_budget budget);

    /// One interval: the decisions taken now (appended to `decisions()`), possibly none.
    std::vector<tuning_decision> step(const tuner_sample& s);
    /// Whether an interval that has lasted `elapsed_s` and delivered `outputs` ends now, for an
    /// `autotune.interval` of `interval_s` (see `min_outputs`).
    [[nodiscard]] static bool interval_done(double elapsed_s, double interval_s,
                                            double outputs) noexcept {
        return elapsed_s >= interval_s &&
               (outputs >= min_outputs || elapsed_s >= max_stretch * interval_s);
    }

    /// Each stage's concurrency now (the policy's stages, untuned ones at their own).
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
    /// A setting of every knob: the stages' concurrencies, then the arena's threads.
    struct setting {
        std::vector<int> k;
        int threads = 1;
    };
    /// The least measured bound on the rate at `x`, as a multiple of the rate now: each stage's
    /// slots over its busy time, the arena's threads over its busy time, the consumer's time
    /// over its time not waiting. `by`: which binds (a knob's index, or npos: the consumer).
    [[nodiscard]] double bound(const tuner_sample& s, const setting& x, std::size_t* by) const;
    /// How much faster the measured bounds allow the pipeline to go at `to` than now (1: no
    /// faster): bound(to) over bound(now), so that a bound nobody measures (the source, a
    /// stage the policy does not see, in_flight) leaves it at 1.
    [[nodiscard]] double gain(const tuner_sample& s, const setting& to) const;
    [[nodiscard]] setting now() const { return {limits_, threads_}; }

    void add(tuning_decision d, bool judged);
    [[nodiscard]] double utilization(std::size_t i, const tuner_sample& s) const;
    bool keep_memory(const tuner_sample& s, double rate);
    bool judge(const tuner_sample& s, double rate, double cpu);
    bool keep_cpu(const tuner_sample& s, double rate, double cpu);
    bool back_off(const tuner_sample& s, double rate);
    void raise(const tuner_sample& s, double rate, double cpu);
    /// Stage `i`'s concurrency, or the arena's threads for i == stages_.size().
    int& knob(std::size_t i) { return i < limits_.size() ? limits_[i] : threads_; }
    [[nodiscard]] const std::string& knob_name(std::size_t i) const;
    /// Moves knob `i` to `to`, logged with `why`; a raise is judged by the next interval.
    void move(std::size_t i, int to, std::string why, double rate, bool judged);
    /// Knob `i` rests for its cool-down, which doubles for the next time.
    void rest(std::size_t i);

    std::vector<tuned_stage_range> stages_;
    tuner_budget budget_;
    std::vector<int> limits_;
    std::vector<int> held_;       ///< intervals each knob (the stages, then threads) rests
    std::vector<int> hold_next_;  ///< each knob's next cool-down
    std::size_t in_flight_;
    int memory_rest_ = 0;  ///< intervals in_flight stays from rising
    int threads_;
    std::vector<tuning_decision> log_;
    /// The last raise, judged by the next interval's rate: each knob it moved and the place of
    /// its decision in log_.
    struct raised {
        std::size_t knob;
        std::size_t index;
    };
    std::vector<raised> pending_;
    double now_ = 0;          ///< the sample's time
    int consumer_bound_ = 0;  ///< consumer-bound intervals in a row
    std::size_t added_ = 0;   ///< decisions this step
    std::optional<std::string> memory_error_;
};

}  // namespace ferry::detail
