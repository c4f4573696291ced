// SPDX-License-Identifier: Apache-2.0
/// \file
/// epoch_run: one epoch's state, made when the epoch starts and dropped when it ends (like
/// Taskflow's `Topology`, one run's state apart from the graph), so that nothing of an epoch
/// outlives it and no field is reset by hand. Each piece belongs to one part, the only class
/// that reads or writes its fields (its friend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "box.hpp"
#include "ferry/detail/spec.hpp"

namespace ferry::detail {

class source_driver;
class resume_state;
class consumer_side;

/// The source's epoch (source_driver, under its lock): the cursor, where it stands, and an
/// unordered resume's positions to skip. On a cache line of its own: the source writes it for
/// every item.
class alignas(64) source_epoch {
  public:
    /// An epoch opened at `position` (0, or a resumed epoch's), skipping the positions `skip`
    /// lists (sorted; an unordered resume's items done past it).
    source_epoch(source_cursor cursor, std::uint64_t position, std::vector<std::uint64_t> skip)
        : cursor_(std::move(cursor)), pos_(position), skip_(std::move(skip)) {}

  private:
    friend class source_driver;
    source_cursor cursor_;
    std::uint64_t seq_ = 0;  ///< messages of this epoch so far
    std::uint64_t pos_ = 0;  ///< the position of the next item in the epoch
    std::vector<std::uint64_t> skip_;
    std::size_t skip_next_ = 0;  ///< the next of `skip_` to skip
};

/// Where the consumer stands in the epoch, and a resumed epoch's start (resume_state, under the
/// epoch_control mutex; the expansions read `at_`/`active_` through resume_state::skip).
class alignas(64) resumed_epoch {
  public:
    resumed_epoch() = default;
    /// An epoch resumed at `at` (the state's position and output counts).
    explicit resumed_epoch(resume_point at) : frontier_(at), at_(at), active_(at.depth > 0) {}

  private:
    friend class resume_state;
    /// The consumer's frontier: where the epoch resumes after the output it took last.
    resume_point frontier_;
    resume_point at_;  ///< the resumed epoch's start
    bool active_ = false;
    /// Of the resumed epoch, before its resume position: items (produced) and failed ones, for
    /// its failure budget and the next state().
    std::uint64_t carried_produced_ = 0;
    std::uint64_t carried_failed_ = 0;
    /// While the rest of a merged epoch runs: the saved world's positions and sampler.
    std::vector<std::uint64_t> from_ranks_;
    sampler_identity from_sampler_;
    std::vector<std::uint64_t> from_window_;  ///< and the merged state's window
    std::uint64_t window_at_ = 0;             ///< batch_by: the window's first position
    std::vector<std::uint64_t> window_;       ///< its delivered positions, in delivery order
};

/// The consumer's epoch (consumer_side, under the epoch_control mutex).
class alignas(64) consumer_epoch {
  private:
    friend class consumer_side;
    bool awaiting_first_ = true;  ///< the epoch's first output is not taken yet
};

/// One epoch. pipeline_runtime::start_epoch makes it, hands each part its piece, and
/// finish_epoch drops it after every part has let go of its piece.
struct epoch_run {
    epoch_run(source_epoch s, resumed_epoch r, std::uint64_t produced, std::uint64_t failed)
        : source(std::move(s)),
          resumed(std::move(r)),
          produced_base(produced),
          failed_base(failed) {}

    source_epoch source;
    resumed_epoch resumed;
    consumer_epoch consumer;
    /// The ledger's produced and failed counts when the epoch started (its failure rate).
    const std::uint64_t produced_base;
    const std::uint64_t failed_base;
};

}  // namespace ferry::detail
