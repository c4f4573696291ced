// SPDX-License-Identifier: Apache-2.0
/// \file
/// The bilinear resize of 3-channel pixels in AVX2 (bilinear_x86.cpp): what `resample_view`
/// runs for `interpolation::bilinear` where it applies, OpenCV's INTER_LINEAR elsewhere.
/// Internal to ops/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transform.hpp"

namespace ferry::ops::bilinear_detail {

/// `src` (3 channels) resized to `width x height` into `out`, rows `out_stride` bytes apart,
/// with OpenCV's INTER_LINEAR geometry (pixel centres at +0.5, edge pixels repeated) and
/// weights of 1/2^14 horizontally and 1/2^15 vertically: within one level of cv::resize's
/// INTER_LINEAR. False, with nothing written, where it does not apply: a CPU without AVX2, a
/// channel count other than 3, an exact halving (cv::resize is faster there), or a horizontal
/// reduction so strong (about 3x or more) that four neighbouring output values no longer come
/// from 16 bytes of a row.
bool resize_rgb(const pixel_view& src, std::uint8_t* out, std::size_t out_stride, int width,
                int height);

}  // namespace ferry::ops::bilinear_detail
