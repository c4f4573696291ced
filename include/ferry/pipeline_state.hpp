// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::pipeline_state`: where a pipeline's epoch stands, to save with a checkpoint and resume
/// from after a restart. Part of ferry::core (its text form, `merge` and `resumed_sampler` are
/// plain values that ferry::mpi uses too); the engine takes it and gives it back.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/export.hpp"
#include "ferry/sampling.hpp"

namespace ferry {

class pipeline_state;

/// One rank's share of the rest of a merged epoch (see `pipeline_state::merge`), as dataset
/// indices: what `ferry::from(dataset, sampling)` delivers when it resumes from a merged state,
/// for users who build their own source. The rest is every position of the saved world's epoch
/// that its ranks had not delivered, in the saved epoch's order; rank `rank` of `world_size`
/// takes the rest's positions `rank, rank + world_size, ...` and, with `remainder::pad`, starts
/// the rest over to even the counts. Memory: O(saved world size), whatever the dataset size and
/// the spread of the saved ranks' positions (and the positions a batch_by window had delivered past
/// them); `index` costs O(saved world size).
class FERRY_API resumed_sampler {
  public:
    /// Throws `ferry::invalid_argument` for a state that is not merged (nor taken while a merged
    /// epoch ran), one whose rank positions are not one per rank of its saved world, or a rank
    /// not below `world_size`.
    resumed_sampler(const pipeline_state& merged, std::size_t rank, std::size_t world_size);
    /// Items of this rank's share.
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    /// The dataset index at position `i` (< size()) of this rank's share.
    [[nodiscard]] std::uint64_t index(std::uint64_t i) const;
    /// The merged epoch.
    [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }

  private:
    std::uint64_t epoch_ = 0;
    sampling saved_{};                      ///< the saved world's sampling (any rank)
    std::uint64_t n_ = 0;                   ///< the dataset size
    std::vector<std::uint64_t> positions_;  ///< the saved ranks' positions, by rank
    /// The saved positions ascending (their rows: row i holds the globals i * w .. i * w + w - 1),
    /// and how many globals are not delivered in the rows from the first of them up to each.
    std::vector<std::uint64_t> rows_;
    std::vector<std::uint64_t> before_;
    std::uint64_t rest_ = 0;  ///< positions not delivered
    /// Globals a batch_by window delivered past their ranks' positions (`pipeline_state::window`),
    /// as places in the rest: the i-th, less i (ascending).
    std::vector<std::uint64_t> skipped_;
    void leave_out(const std::vector<std::uint64_t>& window, std::uint64_t per_rank);
    std::size_t rank_ = 0, world_size_ = 1;
    std::uint64_t size_ = 0;
};

/// Where a pipeline's epoch stands between two `next()` calls: small (O(1) for an ordered
/// pipeline, whatever the dataset; an unordered one adds the items done past its position,
/// O(in_flight)), copyable, and the same whatever the thread count or concurrency.
///
/// Take it with `pipeline::state()`, store `serialize()` with the model, read it back with
/// `pipeline_state::parse()` and build the same pipeline with `.build({.resume_from = state})`:
/// the outputs delivered before the save, followed by those after the resume, are exactly an
/// uninterrupted run's — the same items, order and batches, across flat_maps (a save between two
/// outputs of one item), filters, skips and later epochs. Items that were in flight when the state
/// was taken are simply done again. An unordered pipeline resumes with the same set of items,
/// each once.
/// \code
///   std::optional<ferry::pipeline_state> saved;
///   if (std::ifstream in{"loader.state"}) saved = ferry::pipeline_state::parse(read_all(in));
///   auto pipe = ferry::from(train, sampling).map(load, 8).batch(32)
///                   .build({.resume_from = saved});
///   for (auto& batch : pipe) {
///       train_step(batch);
///       if (++step % 1000 == 0) write_file("loader.state", pipe.state().serialize());
///   }
/// \endcode
class FERRY_API pipeline_state {
  public:
    /// The start of epoch 0: what a pipeline built without `resume_from` does first.
    pipeline_state() = default;
    /// A state at `position` of `epoch`; `children` as `children()` describes.
    pipeline_state(std::uint64_t epoch, std::uint64_t position,
                   std::vector<std::uint64_t> children = {});

    /// The epoch the pipeline is in (or starts next, when none is running).
    [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
    /// The first source position (this rank's item number within the epoch) not yet delivered in
    /// full: the resumed epoch opens the source here.
    [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
    /// Outputs of the item at `position()` already delivered, one count per flat_map or unbatch
    /// it went through (outermost first): the resumed epoch skips that many of the first stage's
    /// outputs, then that many of the next stage's outputs of the first one kept, and so on.
    /// Empty when no item is partly delivered.
    [[nodiscard]] const std::vector<std::uint64_t>& children() const noexcept { return children_; }
    /// The sampled source's identity (dataset size, seed, rank, world size, remainder, shuffle,
    /// and whether it is a dataset or a `ferry::mix`), when the pipeline starts at
    /// `ferry::from(dataset, sampling)` or a mix: a resume checks it against the new pipeline's.
    /// A text saved before ferry recorded the source reads back as `sampled_source::unrecorded`.
    [[nodiscard]] const std::optional<sampler_identity>& sampler() const noexcept {
        return sampler_;
    }
    /// An unordered pipeline's items past `position()` already done (delivered, filtered or
    /// failed), ascending: the resumed epoch skips them. Empty for an ordered pipeline.
    [[nodiscard]] const std::vector<std::uint64_t>& done() const noexcept { return done_; }
    /// Positions past `position()` already delivered in batches of a `batch_by` window that was
    /// partly delivered at the save (the window starts at `position()`), ascending: what lets
    /// `merge` leave them out of the rest of the epoch, so that a bucketed pipeline resumes on
    /// another world with each item once. In a merged state: the saved world's global positions
    /// (rank r's position p is r + p * world_size). Empty otherwise. At most a window's items.
    [[nodiscard]] const std::vector<std::uint64_t>& window() const noexcept { return window_; }
    /// Items of the epoch before `position()` that failed (skipped by an error policy): counted
    /// again by the resumed run's `max_epoch_failure_rate`.
    [[nodiscard]] std::uint64_t failed() const noexcept { return failed_; }
    /// The pipeline's stages as kinds and batch sizes (e.g. "map,filter,flat_map,batch:32"): a
    /// resume into a pipeline of another shape is refused.
    [[nodiscard]] const std::string& shape() const noexcept { return shape_; }

    /// A versioned single-line text, `ferry-state 1 ...`, that `parse` reads back; the same state
    /// gives the same text on every machine.
    [[nodiscard]] std::string serialize() const;
    /// Reads what `serialize` wrote. Throws `ferry::invalid_argument` saying what is wrong with a
    /// blob that is not one (empty, another format or version, a missing or malformed field) or
    /// whose parts disagree (a sampler's rank not below its world size, rank positions that are
    /// not one per rank of the saved world or lie past its epoch, done positions that are not
    /// ascending or lie before the position, a position or done position past the sampled epoch's
    /// items for this rank, a shape with a control character). Work and memory are linear in
    /// the text's length, and so is what a state read from it costs `merge` and
    /// `resumed_sampler`.
    [[nodiscard]] static pipeline_state parse(std::string_view text);

    /// Merges the states of every rank of one distributed run, taken at the same training step
    /// (any order), into one state that a run at any world size resumes from: built with
    /// `ferry::sampling{.rank = r, .world_size = w}` (w may differ from the saved run's) and
    /// `.resume_from = merged`, rank r of w delivers its even share of what the saved ranks
    /// had not delivered of the epoch, so that each item of the epoch is delivered exactly once
    /// over the old and the new run together (up to the padding rule: `remainder::pad` evens
    /// the new shares by repeating from the rest's start, `drop` cuts them). An item partly
    /// delivered (a save between two outputs of a flat_map) is delivered again whole. Later
    /// epochs are the new world's usual ones.
    ///
    /// Throws `ferry::invalid_argument` unless the states are of one sampled pipeline (same
    /// dataset size, seed, shuffle, remainder and stages), one per rank 0..w-1 of one world, at
    /// the same epoch, and none was itself resumed from a merged state mid-epoch.
    [[nodiscard]] static pipeline_state merge(const std::vector<pipeline_state>& states);
    /// For a merged state: the saved world's ranks' positions (index: rank); empty otherwise.
    [[nodiscard]] const std::vector<std::uint64_t>& rank_positions() const noexcept {
        return ranks_;
    }
    /// True for a state made by `merge` (any rank of any world may resume from it).
    [[nodiscard]] bool merged() const noexcept { return merged_; }

    /// Member-wise equality.
    friend bool operator==(const pipeline_state&, const pipeline_state&) = default;
    /// Writes `serialize()`.
    friend std::ostream& operator<<(std::ostream& os, const pipeline_state& s) {
        return os << s.serialize();
    }

    /// For a merged state, or one taken while a merged epoch runs on a new world: the saved
    /// world's sampler (any rank's identity, with rank 0).
    [[nodiscard]] const std::optional<sampler_identity>& saved_sampler() const noexcept {
        return merged_ ? sampler_ : merged_sampler_;
    }

    // Set by the engine (and by tests that need a particular state).
    void set_sampler(std::optional<sampler_identity> s) { sampler_ = s; }
    void set_failed(std::uint64_t n) noexcept { failed_ = n; }
    void set_shape(std::string s) { shape_ = std::move(s); }
    void set_done(std::vector<std::uint64_t> done) { done_ = std::move(done); }
    void set_window(std::vector<std::uint64_t> window) { window_ = std::move(window); }
    /// For a merged state, its `window()`; for one taken while a merged epoch runs, the merged
    /// state's (the rest of that epoch leaves them out); empty otherwise.
    [[nodiscard]] const std::vector<std::uint64_t>& saved_window() const noexcept {
        return merged_ ? window_ : merged_window_;
    }
    /// Marks a state taken while a merged epoch runs: the saved world's positions, sampler and
    /// window.
    void set_resumed_from(std::vector<std::uint64_t> ranks, sampler_identity saved,
                          std::vector<std::uint64_t> window = {}) {
        ranks_ = std::move(ranks);
        merged_sampler_ = saved;
        merged_window_ = std::move(window);
        merged_ = false;
    }

  private:
    std::uint64_t epoch_ = 0;
    std::uint64_t position_ = 0;
    std::vector<std::uint64_t> children_;
    std::vector<std::uint64_t> done_;
    std::vector<std::uint64_t> window_;
    std::optional<sampler_identity> sampler_;
    std::uint64_t failed_ = 0;
    std::string shape_;
    /// merge(): the saved ranks' positions, and whether this is the merged state itself (true)
    /// or a state taken while its epoch runs on a new world (false, with the new rank's
    /// position and sampler).
    std::vector<std::uint64_t> ranks_;
    bool merged_ = false;
    /// The saved world's sampler and window, for a state taken while a merged epoch runs.
    std::optional<sampler_identity> merged_sampler_;
    std::vector<std::uint64_t> merged_window_;
};

}  // namespace ferry
