// SPDX-License-Identifier: Apache-2.0
/// \file
/// Damaged copies of a good file for the corruption matrices (images, regions, video, audio):
/// cuts spread over the whole file and byte flips, from a seed, so that every matrix damages its
/// files the same reproducible way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace ferry_test {

/// One damaged copy: what was done, the bytes, and for a cut the length kept.
struct damaged_copy {
    std::string how;  ///< e.g. "cut at 1234 of 5000 bytes", "byte 17 flipped"
    std::vector<std::uint8_t> data;
    bool cut = false;  ///< true: a prefix of the good file (`data.size()` bytes)
};

/// How many copies of each kind `damaged_copies` makes.
struct damage_plan {
    int cuts = 10;   ///< prefixes, one in each tenth of the file (so the last is past 90%)
    int flips = 10;  ///< copies with one byte changed
    /// Of the flips, how many change a byte of the first `header_bytes` (headers are where a
    /// flip changes most); the rest change a byte anywhere.
    int header_flips = 5;
    std::size_t header_bytes = 200;
    std::uint32_t seed = 42;
};

/// Damaged copies of `good` (at least 2 bytes): `plan.cuts` prefixes of 1 .. size-1 bytes, the
/// k-th somewhere in the k-th tenth of the file, then `plan.flips` copies with one byte XORed
/// with a non-zero value. The same good file and plan give the same copies.
inline std::vector<damaged_copy> damaged_copies(std::span<const std::uint8_t> good,
                                                const damage_plan& plan = {}) {
    std::vector<damaged_copy> out;
    if (good.size() < 2) return out;
    std::mt19937 rng(plan.seed);
    const std::size_t size = good.size();
    for (int k = 0; k < plan.cuts; ++k) {
        // In [k/cuts, (k+1)/cuts) of the file, never empty and never whole.
        const std::size_t lo =
            (size - 1) * static_cast<std::size_t>(k) / static_cast<std::size_t>(plan.cuts);
        const std::size_t hi =
            (size - 1) * static_cast<std::size_t>(k + 1) / static_cast<std::size_t>(plan.cuts);
        const std::size_t n =
            std::max<std::size_t>(1, lo + rng() % std::max<std::size_t>(1, hi - lo));
        out.push_back(
            {"cut at " + std::to_string(n) + " of " + std::to_string(size) + " bytes",
             std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)),
             true});
    }
    for (int k = 0; k < plan.flips; ++k) {
        const std::size_t range = k < plan.header_flips ? std::min(size, plan.header_bytes) : size;
        const std::size_t at = rng() % range;
        std::vector<std::uint8_t> copy(good.begin(), good.end());
        copy[at] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        out.push_back({"byte " + std::to_string(at) + " flipped", std::move(copy), false});
    }
    return out;
}

/// `damaged_copies` of bytes held as `std::byte`.
inline std::vector<damaged_copy> damaged_copies(std::span<const std::byte> good,
                                                const damage_plan& plan = {}) {
    return damaged_copies(std::span<const std::uint8_t>(
                              reinterpret_cast<const std::uint8_t*>(good.data()), good.size()),
                          plan);
}

/// A damaged copy's bytes as `std::byte`s, to pass to the ops.
inline std::span<const std::byte> bytes_of(const damaged_copy& c) {
    return std::as_bytes(std::span<const std::uint8_t>(c.data));
}

}  // namespace ferry_test
