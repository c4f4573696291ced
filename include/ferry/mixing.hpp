// SPDX-License-Identifier: Apache-2.0
/// \file
/// Which source each position of a weighted mix takes, and which of that source's items:
/// `ferry::mix_options`, `ferry::mix_source_options` and `ferry::mix_sampler`, the plain numbers
/// behind `ferry::mix` (ferry/mix.hpp), the same on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ferry/export.hpp"
#include "ferry/pipeline_state.hpp"
#include "ferry/sampling.hpp"

namespace ferry {

/// When an epoch of a mix ends.
enum class mix_stop : std::uint8_t {
    /// At the first position that draws a source with no item left (a `repeat` source always has
    /// one: it starts a new pass). The usual rule for a fixed recipe: proportions hold to the end.
    first_exhausted,
    /// When every source that does not `repeat` has given all its items: a source with none left
    /// leaves the draw, and the others share its weight in proportion to their own.
    all_exhausted,
    /// Never: every source repeats. The epoch is `mix_options::epoch_length` items long, or
    /// endless when that is 0.
    never,
};

/// How a mix draws: the seed of its draws, its stop rule, and this process's share of it.
struct mix_options {
    /// The draws' seed: the same on every rank.
    std::uint64_t seed = 0;
    /// When an epoch ends.
    mix_stop stop = mix_stop::first_exhausted;
    /// This process's rank, below `world_size`: every source is split over the ranks as
    /// `ferry::sampler` splits a dataset, and every rank draws the same sources in the same order
    /// from its own share, so every rank gets the same count.
    std::size_t rank = 0;
    /// How many ranks share the mix (at least 1).
    std::size_t world_size = 1;
    /// At most this many items per epoch on each rank (0: no limit). The epoch's length under
    /// `mix_stop::never`.
    std::uint64_t epoch_length = 0;
};

/// How one source of a mix is visited: its own order, its own passes.
struct mix_source_options {
    /// false: in index order. true: each pass in a permutation of its own, from (`seed`, the
    /// mix's epoch, the pass).
    bool shuffle = false;
    /// The source's shuffle seed.
    std::uint64_t seed = 0;
    /// Start a new pass (a new permutation when shuffled) when this rank's share is used up,
    /// instead of running out: a small source cycled under a large one.
    bool repeat = false;
    /// What becomes of the items that do not divide evenly over the ranks (as in `sampling`).
    ferry::remainder remainder = ferry::remainder::pad;
};

/// A weighted mix as plain numbers: at each position of an epoch, which source it takes and the
/// dataset index of that source's item. Everything is a pure function of (sources, options,
/// epoch, position): every rank and every run computes the same sequence, whatever the threads.
///
/// The draw at position `g` of epoch `e` is a uniform number from (`seed`, `e`, `g`) laid over
/// the weights of the sources still in the draw (a source's chance is its weight over theirs);
/// the `c`-th draw of source `k` takes item `c` of its sequence: this rank's share of the source
/// (`ferry::sampler` with the source's shuffle, seed and remainder and the mix's rank and world
/// size), pass after pass when it repeats. Its first pass in epoch `e` is the sampler's epoch `e`,
/// the order `ferry::from(dataset, sampling)` would give. Every rank draws the same sources, so
/// every rank's epoch has the same length.
///
/// A cursor costs O(sources) memory and a few tens of nanoseconds an item (plus the source's
/// index: ~100 ns shuffled); opening one at a position replays the draws before it without the
/// indices (about 20 ns each: 2 million in 40 ms).
/// \code
///   ferry::mix_sampler m({{.size = 1000, .weight = 0.7}, {.size = 50, .weight = 0.3,
///                          .options = {.shuffle = true, .repeat = true}}},
///                        {.seed = 42});
///   auto c = m.open(/*epoch=*/0);
///   while (auto pick = c.next()) load(pick->source, pick->index);
/// \endcode
class FERRY_API mix_sampler {
  public:
    /// One source: its size (whole dataset, all ranks), its weight and how it is visited.
    struct source {
        std::uint64_t size = 0;  ///< items in the dataset
        double weight = 1.0;     ///< relative: weights {7, 3} and {0.7, 0.3} mix alike
        mix_source_options options{};
    };

    /// One position's draw.
    struct pick {
        std::size_t source = 0;   ///< which source (its place in the list)
        std::uint64_t index = 0;  ///< the dataset index within that source
        std::uint64_t pass = 0;   ///< which pass over the source's share (0 without repeat)
    };

    /// Throws `ferry::invalid_argument`, saying which source and why, for no sources, a weight
    /// that is negative, NaN or infinite, weights that are all 0, a rank not below `world_size`,
    /// or rules that never end an epoch (every source `repeat`s and no `epoch_length` under
    /// `first_exhausted` or `all_exhausted`; use `mix_stop::never`).
    mix_sampler(std::vector<source> sources, const mix_options& options);

    /// The rest of a merged epoch on another world: `merged` is `pipeline_state::merge` of the
    /// states every rank of a run over this mix took at one step (any world size), and
    /// `options` names this rank of the new world. In the merged epoch, each source's first
    /// pass is what the saved ranks had not taken of theirs (`ferry::resumed_sampler` over the
    /// counts their positions imply, split over the new world by the source's remainder rule),
    /// drawn anew from (seed, epoch) with keys of their own, under the same stop rule; a source
    /// that repeats goes on with its usual passes after it. Every rank of the new world draws
    /// the same sources, and an item a saved rank took does not come again in that epoch (up to
    /// the padding). Other epochs are the usual ones. Throws `ferry::invalid_argument` as the
    /// other constructor does, and for a state that is not merged.
    mix_sampler(std::vector<source> sources, const mix_options& options,
                const pipeline_state& merged);

    /// A fingerprint of the sources (sizes, weights, options) and the rules, for telling two
    /// mixes apart in a saved state (`sampler_identity::n` of a pipeline over a mix).
    [[nodiscard]] std::uint64_t fingerprint() const noexcept;

    /// A walk through one epoch's positions.
    class FERRY_API cursor {
      public:
        /// The draw at `position()`, and a step past it; nothing at the epoch's end.
        std::optional<pick> next();
        /// The position the next `next()` draws.
        [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
        /// How many of source `k`'s items this epoch has taken so far (all passes).
        [[nodiscard]] std::uint64_t taken(std::size_t k) const { return taken_.at(k); }

      private:
        friend class mix_sampler;
        cursor(const mix_sampler& owner, std::uint64_t epoch);
        /// The source of the position, counted and stepped past (what `next` does, without the
        /// item's index: a replay needs only the counts).
        std::optional<std::size_t> draw();
        /// Drops source `k` from the draw.
        void leave(std::size_t k);

        const mix_sampler* owner_;
        std::uint64_t epoch_;
        std::uint64_t key_;
        std::uint64_t position_ = 0;
        bool ended_ = false;
        std::size_t finite_ = 0;  ///< sources in the draw that do not repeat
        std::vector<std::uint64_t> taken_;
        std::vector<bool> in_draw_;
        std::vector<double> upto_;  ///< running sums of the weights in the draw
    };

    /// Epoch `epoch` from `position` on (the draws before it replayed). The cursor refers to
    /// this sampler: keep it alive. The replay ends at a stop request of the stage call it runs
    /// in (`errc::cancelled`); a position past the epoch's end is `ferry::invalid_argument`.
    [[nodiscard]] cursor open(std::uint64_t epoch, std::uint64_t position = 0) const;

    /// The sources as given.
    [[nodiscard]] const std::vector<source>& sources() const noexcept { return sources_; }
    /// The options as given.
    [[nodiscard]] const mix_options& options() const noexcept { return options_; }
    /// This rank's share of source `k` per pass (`ferry::sampler::size()`).
    [[nodiscard]] std::uint64_t share(std::size_t k) const { return shares_.at(k).size(); }

  private:
    /// Items of source `k`'s first pass in `epoch` (its share, or the rest of a merged epoch).
    [[nodiscard]] std::uint64_t first_size(std::size_t k, std::uint64_t epoch) const;
    /// The dataset index of item `c` of source `k` in `epoch` (all passes).
    [[nodiscard]] std::uint64_t index_of(std::size_t k, std::uint64_t epoch, std::uint64_t c) const;
    /// Whether `epoch` is the rest of a merged epoch.
    [[nodiscard]] bool resumed(std::uint64_t epoch) const noexcept {
        return !rest_.empty() && epoch == rest_epoch_;
    }

    std::vector<source> sources_;
    mix_options options_;
    std::vector<sampler> shares_;
    /// The rest of a merged epoch, per source (empty without one).
    std::vector<std::shared_ptr<const resumed_sampler>> rest_;
    std::uint64_t rest_epoch_ = 0;
};

}  // namespace ferry
