// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::pipeline_state`: where a pipeline's epoch stands, to save with a checkpoint and resume
/// from after a restart.
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

/// Where an ordered pipeline's epoch stands between two `next()` calls: small (O(1), whatever the
/// dataset), copyable, and the same whatever the thread count or concurrency.
///
/// Take it with `pipeline::state()`, store `serialize()` with the model, read it back with
/// `pipeline_state::parse()` and build the same pipeline with `.build({.resume_from = state})`:
/// the outputs delivered before the save, followed by those after the resume, are exactly an
/// uninterrupted run's — the same items, order and batches, across flat_maps (a save between two
/// outputs of one item), filters, skips and later epochs. Items that were in flight when the state
/// was taken are simply done again.
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
    /// The sampled source's identity (dataset size, seed, rank, world size, remainder, shuffle),
    /// when the pipeline starts at `ferry::from(dataset, sampling)`: a resume checks it against
    /// the new pipeline's.
    [[nodiscard]] const std::optional<sampler_identity>& sampler() const noexcept {
        return sampler_;
    }
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
    /// blob that is not one (empty, another format or version, a missing or malformed field).
    [[nodiscard]] static pipeline_state parse(std::string_view text);

    /// Member-wise equality.
    friend bool operator==(const pipeline_state&, const pipeline_state&) = default;
    /// Writes `serialize()`.
    friend std::ostream& operator<<(std::ostream& os, const pipeline_state& s) {
        return os << s.serialize();
    }

    // Set by the engine (and by tests that need a particular state).
    void set_sampler(std::optional<sampler_identity> s) { sampler_ = s; }
    void set_failed(std::uint64_t n) noexcept { failed_ = n; }
    void set_shape(std::string s) { shape_ = std::move(s); }

  private:
    std::uint64_t epoch_ = 0;
    std::uint64_t position_ = 0;
    std::vector<std::uint64_t> children_;
    std::optional<sampler_identity> sampler_;
    std::uint64_t failed_ = 0;
    std::string shape_;
};

}  // namespace ferry
