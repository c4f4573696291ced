// SPDX-License-Identifier: Apache-2.0
/// \file
/// Rows of pixels mirrored left to right: the work of `horizontal_flip`, in SIMD where it pays.
/// Internal to ops/.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::ops {

/// Writes each of `height` rows of `width` pixels of `channels` bytes (1 to 4) from `src` to
/// `dst`, mirrored: pixel x of a row goes to pixel `width - 1 - x`. Rows are `src_stride` and
/// `dst_stride` bytes apart. `src` and `dst` must not overlap.
void mirror_rows(const std::uint8_t* src, std::size_t src_stride, std::uint8_t* dst,
                 std::size_t dst_stride, int width, int height, int channels);

/// The same in place: each row of `data` mirrored.
void mirror_rows_in_place(std::uint8_t* data, std::size_t stride, int width, int height,
                          int channels);

}  // namespace ferry::ops
