// SPDX-License-Identifier: Apache-2.0
/// \file
/// `interpolation::antialias`: Pillow's bilinear resample (`Image.resize(size, BILINEAR, box)`)
/// on 8-bit images, with the same integer arithmetic, so the same pixels. Internal to ops/.
#pragma once

#include "ferry/image.hpp"

namespace ferry::ops {

/// The region of the source to resample, in source pixels; fractions allowed (Pillow's `box`,
/// which Pillow keeps as C floats: so does this).
struct resample_region {
    float x0 = 0;
    float y0 = 0;
    float x1 = 0;
    float y1 = 0;
};

/// Resamples `region` of `src` to `width x height` with Pillow's BILINEAR filter: a triangle
/// whose support grows with the downscale factor (so it antialiases), coefficients normalised
/// and rounded to 22-bit fixed point, a horizontal pass and then a vertical one, each only
/// where that axis changes. Every channel is filtered on its own (Pillow premultiplies RGBA by
/// alpha first; this does not). `region` must lie inside `src`, `width` and `height` be
/// positive.
[[nodiscard]] image resample_antialias(const image& src, const resample_region& region, int width,
                                       int height);

}  // namespace ferry::ops
