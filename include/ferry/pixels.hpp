// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::pixel_format` and `ferry::pixel_size`: the channel layout and the size of 8-bit
/// pixels, shared by images (`ferry::image`, where they are also named `image_size`) and video
/// frames (`ferry::video_clip`: `frame_format`, `frame_size`). Part of ferry::core, so that
/// `ferry::video` need not depend on `ferry::image` to share them.
#pragma once

#include <cstdint>

#include "ferry/export.hpp"

namespace ferry {

/// How the channels of an image or a video frame are laid out.
enum class pixel_format : std::uint8_t {
    rgb,   ///< 3 channels, red first (the default)
    bgr,   ///< 3 channels, blue first (OpenCV's order)
    gray,  ///< 1 channel (a video frame's luma)
    rgba,  ///< 4 channels; alpha kept (255 where the file has none). Images only: video decoding
           ///< refuses it (`ferry::invalid_argument`)
};

/// Channels of `f` (3, 3, 1, 4).
[[nodiscard]] FERRY_API int channels_of(pixel_format f) noexcept;
/// The name of `f`, e.g. `"rgb"`.
[[nodiscard]] FERRY_API const char* to_string(pixel_format f) noexcept;

/// A width and a height in pixels. As a resize target (`decode_image_options::resize`,
/// `video_decode_options::resize`), `{0, 0}` means "as stored".
struct pixel_size {
    int width = 0;
    int height = 0;
    friend bool operator==(const pixel_size&, const pixel_size&) = default;
};

}  // namespace ferry
