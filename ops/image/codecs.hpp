// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image codecs behind `decode_image` and `probe_image`: one pair of functions per format,
/// and the helpers they share. Internal to ops/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ferry/error.hpp"
#include "ferry/image.hpp"

namespace ferry::ops::codec {

using byte_span = std::span<const std::byte>;

enum class format : std::uint8_t { jpeg, png, webp, bmp };

/// What a codec's decode is asked for, in the file's stored orientation.
struct request {
    pixel_format format = pixel_format::rgb;
    /// Decode at the smallest reduced scale whose result is at least this large (JPEG only;
    /// zero = full size).
    image_size at_least{};
    bool strict = true;
    /// Refuse images with more pixels than this, before allocating them.
    std::uint64_t max_pixels = 0;
};

/// Throws `decode_error("decode_image: <format>: <why>")`.
[[noreturn]] inline void fail(const char* fmt, const std::string& why) {
    throw decode_error(std::string("decode_image: ") + fmt + ": " + why);
}

/// Throws when a header declares a non-positive size or more than `max_pixels` pixels.
void check_pixels(const char* fmt, long long width, long long height, std::uint64_t max_pixels);

image_info probe_jpeg(byte_span data);
image decode_jpeg(byte_span data, const request& req);

image_info probe_png(byte_span data);
image decode_png(byte_span data, const request& req);

image_info probe_webp(byte_span data);
image decode_webp(byte_span data, const request& req);

image_info probe_bmp(byte_span data);
image decode_bmp(byte_span data, const request& req);

/// The EXIF orientation (1..8) in a JPEG's APP1 segment; 1 when absent or unreadable.
int jpeg_orientation(byte_span data) noexcept;

/// Converts packed 3- or 4-channel RGB(A) pixels (`from`) to `to`, in place where the result
/// is no larger. `from` must be `rgb` or `rgba`.
image convert(image&& img, pixel_format to);

}  // namespace ferry::ops::codec
