// SPDX-License-Identifier: Apache-2.0
/// \file
/// `interpolation::antialias`: Pillow's bilinear resample (`Image.resize(size, BILINEAR)`) on
/// 8-bit images, with the same integer arithmetic, so the same pixels. Internal to ops/.
#pragma once

#include "ferry/image.hpp"
#include "transform.hpp"

namespace ferry::ops {

/// `box` of `src` resized to `width x height` with Pillow's BILINEAR filter: the pixels of
/// Pillow's `src.crop(box).resize((width, height), BILINEAR)`, which is torchvision's
/// `resized_crop` on PIL images. The filter is a triangle whose support grows with the downscale
/// factor (so it antialiases), its coefficients normalised and rounded to 22-bit fixed point;
/// a horizontal pass, then a vertical one, each only where that axis changes size. Every
/// channel is filtered on its own (Pillow premultiplies RGBA by alpha first; this does not).
/// `box` must lie inside `src`, `width` and `height` be positive.
[[nodiscard]] image resample_antialias(const image& src, const crop_box& box, int width,
                                       int height);

/// The same from pixels that are no image: `view` (see transform.hpp) to `width x height` of
/// `format` (whose channel count is the view's).
[[nodiscard]] image resample_antialias(const pixel_view& view, pixel_format format, int width,
                                       int height);

}  // namespace ferry::ops
