// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::pixel_format`'s helpers (ferry/pixels.hpp), shared by images and video frames.

#include "ferry/pixels.hpp"

namespace ferry {

int channels_of(pixel_format f) noexcept {
    switch (f) {
        case pixel_format::rgb:
        case pixel_format::bgr:
            return 3;
        case pixel_format::gray:
            return 1;
        case pixel_format::rgba:
            return 4;
    }
    return 3;
}

const char* to_string(pixel_format f) noexcept {
    switch (f) {
        case pixel_format::rgb:
            return "rgb";
        case pixel_format::bgr:
            return "bgr";
        case pixel_format::gray:
            return "gray";
        case pixel_format::rgba:
            return "rgba";
    }
    return "?";
}

}  // namespace ferry
