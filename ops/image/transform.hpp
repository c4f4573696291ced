// SPDX-License-Identifier: Apache-2.0
/// \file
/// Internal image transforms shared by the decoders.
#pragma once

#include "ferry/image.hpp"

namespace ferry::ops {

/// Applies EXIF orientation `orientation` (2..8; 1 returns a copy) so the image reads upright.
image orient(const image& img, int orientation);

}  // namespace ferry::ops
