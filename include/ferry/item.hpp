// SPDX-License-Identifier: Apache-2.0
/// \file
/// Per-item context for stage calls: which item a call works on (`ferry::item_info`), and a
/// random engine that gives the same numbers for the same item whatever the concurrency
/// (`ferry::item_rng`).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>

#include "ferry/export.hpp"

namespace ferry {

/// Which item a stage call works on. A `map`, `filter` or `flat_map` callable that takes it as a
/// second parameter gets it with each call:
/// \code
///   .map([](const ferry::sources::labelled_file& f, const ferry::item_info& info) {
///       auto rng = ferry::item_rng(info);  // same numbers for the same (seed, epoch, index)
///       return augment(load(f.path), rng);
///   }, 8)
/// \endcode
/// An element after a `batch` is its first item's; a `flat_map` output is its input's.
struct item_info {
    std::uint64_t epoch = 0;     ///< the epoch (0, 1, ...)
    std::uint64_t index = 0;     ///< the item's index in the dataset: the sampler's with
                                 ///< `from(dataset, sampling)`, else `position`
    std::uint64_t position = 0;  ///< its position in this rank's epoch (source order, from 0)
    std::uint64_t seed = 0;      ///< `sampling::seed` (0 without sampling)
};

/// A small, fast random engine (xoshiro256**) that satisfies `std::uniform_random_bit_generator`,
/// for use with `<random>` distributions. Its numbers depend only on its seed.
class random_engine {
  public:
    using result_type = std::uint64_t;
    explicit random_engine(std::uint64_t seed) noexcept {
        for (auto& s : s_) s = split(seed);
    }
    static constexpr result_type min() noexcept { return 0; }
    static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }
    result_type operator()() noexcept {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

  private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept {
        return (x << k) | (x >> (64 - k));
    }
    /// splitmix64: spreads one seed over the state.
    static std::uint64_t split(std::uint64_t& x) noexcept {
        std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    std::uint64_t s_[4]{};
};

/// A random engine seeded from (seed, epoch, index) of `info`: the same numbers for the same
/// item of the same epoch, whatever the concurrency, thread count, world size or resume point;
/// other numbers in another epoch. (`<random>`'s distributions are the standard library's own:
/// the same binary gives the same values.)
[[nodiscard]] inline random_engine item_rng(const item_info& info) noexcept {
    std::uint64_t h = info.seed ^ 0x243f6a8885a308d3ULL;
    for (const std::uint64_t v : {info.epoch, info.index}) {
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
    }
    return random_engine(h);
}

namespace detail {

/// The item of the stage call running on this thread (null outside one, and in stages that do
/// not ask for it).
[[nodiscard]] FERRY_API const item_info* current_item() noexcept;

/// Set by the engine around the calls of a stage whose callable takes an `item_info`.
class FERRY_API item_scope {
  public:
    explicit item_scope(const item_info* info) noexcept;
    ~item_scope();
    item_scope(const item_scope&) = delete;
    item_scope& operator=(const item_scope&) = delete;

  private:
    const item_info* previous_;
};

}  // namespace detail
}  // namespace ferry
