// SPDX-License-Identifier: Apache-2.0
/// \file
/// Internal image transforms shared by the decoders.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ferry/image.hpp"

namespace ferry::ops {

/// `width x height` pixels of `channels` bytes at `data`, rows `stride` bytes apart, in a buffer
/// that ends at `end`: a region of an image, or rows a decoder wrote, for the resizes to read
/// without copying them into an image first.
struct pixel_view {
    const std::uint8_t* data = nullptr;
    std::size_t stride = 0;
    int width = 0;
    int height = 0;
    int channels = 0;
    const std::uint8_t* end = nullptr;
};

/// The view of `box` inside `img` (the box must lie inside it).
[[nodiscard]] pixel_view region_of(const image& img, const crop_box& box);

/// `view` resized to `width x height` pixels of `format` (whose channel count is the view's)
/// with `interp`: what `resize` and `random_resized_crop` do, from pixels that are no image.
[[nodiscard]] image resample_view(const pixel_view& view, pixel_format format, int width,
                                  int height, interpolation interp);
/// The same, written to `out`: `height` packed rows of `width` pixels of `format`.
void resample_view_into(const pixel_view& view, pixel_format format, int width, int height,
                        interpolation interp, std::uint8_t* out);

/// Applies EXIF orientation `orientation` (2..8; 1 returns a copy) so the image reads upright.
image orient(const image& img, int orientation);

}  // namespace ferry::ops
