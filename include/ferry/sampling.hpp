// SPDX-License-Identifier: Apache-2.0
/// \file
/// Which items an epoch visits, in which order, on which rank: `ferry::sampling` (the options)
/// and `ferry::sampler` (the same as plain numbers), an O(1)-memory shuffle that every machine
/// computes alike.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ferry/export.hpp"

namespace ferry {

/// What happens to the last `n % world_size` items of an epoch, so that every rank gets the same
/// count (collective training steps hang on a rank that has one batch fewer).
enum class remainder : std::uint8_t {
    /// Every rank gets `ceil(n / world_size)` items: the epoch is padded by repeating items from
    /// the start of its permutation, so a few items are seen twice.
    pad,
    /// Every rank gets `floor(n / world_size)` items: the tail of the epoch's permutation (fewer
    /// than `world_size` items, a different set each shuffled epoch) is left out.
    drop,
};

/// How a dataset of `n` items is visited each epoch: in order or shuffled, and which part is this
/// rank's. Pass it to `ferry::from(range, sampling)` or `ferry::sampler`.
/// \code
///   auto w = ferry::world::from_environment();
///   auto pipe = ferry::from(files, ferry::sampling{.shuffle = true, .seed = 42,
///                                                  .rank = w.rank, .world_size = w.size})
///                   .map(ferry::ops::read_file, {.concurrency = 4, .executor = ferry::io})
///                   .build();
/// \endcode
struct sampling {
    /// false: every epoch visits the items in index order. true: each epoch visits them in a
    /// permutation of its own that depends only on (`seed`, epoch).
    bool shuffle = false;
    /// The shuffle's seed: the same on every rank, so that the ranks agree on the permutation.
    std::uint64_t seed = 0;
    /// This process's rank, below `world_size`.
    std::size_t rank = 0;
    /// How many ranks share the dataset (at least 1).
    std::size_t world_size = 1;
    /// What becomes of the items that do not divide evenly over the ranks.
    ferry::remainder remainder = ferry::remainder::pad;
};

/// What a `sampler_identity` is of, and so what its `n` counts.
enum class sampled_source : std::uint8_t {
    /// `ferry::from(dataset, sampling)` or `ferry::sampler`: `n` is the dataset's size.
    dataset,
    /// `ferry::mix`: `n` is the mix's fingerprint (`mix_sampler::fingerprint()`), which tells
    /// mixes of other sources, sizes, weights or rules apart; it counts nothing.
    mix,
    /// Not recorded: the identity was read from a state saved before ferry recorded it
    /// (`pipeline_state::parse` of a text without `source:`).
    unrecorded,
};

/// Everything a sampler's order depends on besides the epoch: compare two to tell whether a saved
/// position still means the same items (same dataset size, seed, rank, world size and rules).
struct sampler_identity {
    std::uint64_t n = 0;         ///< dataset size (over a mix: its fingerprint, see `source`)
    std::uint64_t seed = 0;      ///< `sampling::seed` (kept as given, even without shuffle)
    std::size_t rank = 0;        ///< `sampling::rank`
    std::size_t world_size = 1;  ///< `sampling::world_size`
    ferry::remainder remainder = ferry::remainder::pad;  ///< `sampling::remainder`
    bool shuffle = false;                                ///< `sampling::shuffle`
    /// What was sampled: a dataset or a mix (what `n` means), so that a resume refused for
    /// another source says so in its terms. Saved in `pipeline_state`'s text.
    sampled_source source = sampled_source::dataset;

    /// Member-wise equality (`source` included: an `unrecorded` one equals only another).
    friend bool operator==(const sampler_identity&, const sampler_identity&) = default;
};

/// This rank's items of each epoch as plain dataset indices, for users who build their own
/// source. A pure function of (n, sampling, epoch, i): small, copyable, and the same on every
/// machine; nothing is materialised, so memory is O(1) whatever `n` (a billion items shuffle in a
/// few bytes; the first index is ready at once).
///
/// The order: epoch `e` lays the dataset out as a permutation `p` of [0, n) (the identity without
/// `shuffle`); `pad` extends it to `world_size * size()` positions by starting `p` over, `drop`
/// cuts it to that many. Rank `r` takes positions `r, r + world_size, r + 2 * world_size, ...`
/// (as PyTorch's DistributedSampler does), so the ranks' parts are disjoint and together cover
/// the epoch, and each has `size()` items.
/// \code
///   ferry::sampler s(files.size(), {.shuffle = true, .seed = 7, .rank = 1, .world_size = 4});
///   for (std::uint64_t i = 0; i < s.size(); ++i) load(files[s.index(epoch, i)]);
/// \endcode
///
/// The permutation is a keyed Feistel network over the next power of two above `n`, with cycle
/// walking back into [0, n); its key comes from (`seed`, epoch). It is a good shuffle for
/// training, not a cryptographic one.
class FERRY_API sampler {
  public:
    /// Throws `ferry::invalid_argument` when `world_size` is 0, `rank >= world_size`, or `n` is
    /// within `world_size` of 2^64.
    sampler(std::uint64_t n, const sampling& options);

    /// This rank's item count per epoch, the same on every rank: `ceil(n / world_size)` under
    /// `remainder::pad` (0 when `n` is 0), `floor(n / world_size)` under `remainder::drop`.
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

    /// The dataset index (below `n`) of this rank's `i`-th item of `epoch`. Throws
    /// `ferry::invalid_argument` when `i >= size()`. Shuffled, about 50 ns (perf/sampler: 8
    /// Feistel rounds, computed from scratch each call); in order, a few arithmetic operations.
    [[nodiscard]] std::uint64_t index(std::uint64_t epoch, std::uint64_t i) const;

    /// The dataset size this sampler was made for.
    [[nodiscard]] std::uint64_t dataset_size() const noexcept { return n_; }
    /// The options this sampler was made with.
    [[nodiscard]] const sampling& options() const noexcept { return options_; }
    /// What the order depends on besides the epoch (see `sampler_identity`).
    [[nodiscard]] sampler_identity identity() const noexcept {
        return {n_,
                options_.seed,
                options_.rank,
                options_.world_size,
                options_.remainder,
                options_.shuffle};
    }

  private:
    std::uint64_t n_;
    sampling options_;
    std::uint64_t size_;
};

}  // namespace ferry
