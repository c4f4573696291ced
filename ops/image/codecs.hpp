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

/// The bytes as libjpeg, libpng and libwebp take them.
inline const unsigned char* as_uchar(byte_span data) {
    return reinterpret_cast<const unsigned char*>(data.data());
}

enum class format : std::uint8_t { jpeg, png, webp, bmp };

/// What a codec's decode is asked for, in the file's stored orientation.
struct request {
    pixel_format format = pixel_format::rgb;
    /// Decode at the smallest reduced scale whose result is at least this large (JPEG only;
    /// zero = full size).
    image_size at_least{};
    bool strict = true;
    /// JPEG only: the result may come this fraction under `at_least` (decode_options::scale_slack).
    double slack = 0;
    /// JPEG only: fast IDCT and plain upsampling (decode_options::fast).
    bool fast = false;
    /// JPEG only: a strict region decode reads the rest of the entropy data instead of scanning
    /// it for the EOI marker (decode_options::check_rest).
    bool check_rest = false;
    /// Refuse images with more pixels than this, before allocating them.
    std::uint64_t max_pixels = 0;
    /// When set, only this region (as `decode_options::crop`: full-size coordinates of the
    /// image as seen after EXIF orientation `orientation`); with `at_least`, the reduced scale
    /// is chosen for the region. Only `decode_jpeg` looks at it: it maps the box to the stored
    /// orientation with `stored_crop` and returns that region, still in the stored orientation.
    const crop_box* crop = nullptr;
    int orientation = 1;
    /// JPEG only, for an image that needs no orientation: the result resized to this size with
    /// `interp`, straight from the rows the decoder wrote (no image of the decoded region is
    /// made). Other decoders ignore it; `decode_image` resizes what they return.
    image_size resize_to{};
    interpolation interp = interpolation::bilinear;
    /// With `resize_to`: where `decode_jpeg` writes the resized pixels (`resize_to`'s size,
    /// rows packed) instead of an image of its own, returning an empty image. Where it cannot
    /// (no resize from its rows: an orientation to apply, CMYK, no resize needed) it returns the
    /// image as without it.
    std::uint8_t* into = nullptr;
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

/// Whether a JPEG's marker segments run up to the start of the image data (SOS) inside `data`
/// (false: the file ends inside its header).
bool jpeg_header_complete(byte_span data) noexcept;

/// Where a JPEG cut inside a marker segment after its first scan (a table between the scans of
/// a progressive file) still ends cleanly: the offset of that segment's marker; 0 when the
/// bytes end inside entropy-coded data, at a segment boundary, or the walk finds no markers.
std::size_t jpeg_complete_prefix(byte_span data) noexcept;

/// `box` (in the coordinates of the image as seen after EXIF `orientation`) in the coordinates
/// of the stored `width x height` image. Throws `ferry::invalid_argument` when the box is empty
/// or does not lie inside the image as seen.
crop_box stored_crop(const crop_box& box, int orientation, int width, int height);

/// Converts packed 3- or 4-channel RGB(A) pixels (`from`) to `to`, in place where the result
/// is no larger. `from` must be `rgb` or `rgba`.
image convert(image&& img, pixel_format to);

/// `cmyk` (4 channels: C, M, Y, K as libjpeg hands back CMYK and YCCK JPEGs, inverted the way
/// Adobe stores them) as `to`.
image cmyk_to(const image& cmyk, pixel_format to);

}  // namespace ferry::ops::codec
