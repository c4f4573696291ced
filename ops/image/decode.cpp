// SPDX-License-Identifier: Apache-2.0
/// \file
/// `decode_image` and `probe_image`: format sniffing, the pixel limit, EXIF orientation, the
/// reduced-scale decode and the final resize; and the `ferry::image` value type.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "codecs.hpp"
#include "exif.hpp"
#include "ferry/batch_slots.hpp"
#include "transform.hpp"

namespace ferry {

image::image(int width, int height, pixel_format format)
    : width_(width), height_(height), format_(format) {
    if (width <= 0 || height <= 0) {
        throw invalid_argument("image: size " + std::to_string(width) + "x" +
                               std::to_string(height) + " is not positive");
    }
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(row_bytes(), static_cast<std::size_t>(height), &bytes)) {
        throw invalid_argument("image: size " + std::to_string(width) + "x" +
                               std::to_string(height) + " overflows");
    }
    buf_ = detail::owned_buffer<>(bytes);
}

// Moves stay noexcept (std::vector<image> moves, rather than copies, when it grows).
static_assert(std::is_nothrow_move_constructible_v<image> &&
              std::is_nothrow_move_assignable_v<image>);

buffer image::release() noexcept {
    width_ = 0;
    height_ = 0;
    return buf_.release();
}

namespace ops {
namespace codec {

void check_pixels(const char* fmt, long long width, long long height, std::uint64_t max_pixels) {
    if (width <= 0 || height <= 0) {
        fail(fmt, "bad size " + std::to_string(width) + "x" + std::to_string(height));
    }
    const auto pixels = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height);
    if (max_pixels != 0 && pixels > max_pixels) {
        char text[200];
        if (max_pixels >= 1'000'000) {
            std::snprintf(text, sizeof text,
                          "the header declares %lldx%lld = %.1f megapixels, over the limit of "
                          "%.1f megapixels (decode_options::max_pixels)",
                          width, height, static_cast<double>(pixels) / 1e6,
                          static_cast<double>(max_pixels) / 1e6);
        } else {
            std::snprintf(text, sizeof text,
                          "the header declares %lldx%lld = %llu pixels, over the limit of %llu "
                          "pixels (decode_options::max_pixels)",
                          width, height, static_cast<unsigned long long>(pixels),
                          static_cast<unsigned long long>(max_pixels));
        }
        fail(fmt, text);
    }
}

image convert(image&& img, pixel_format to) {
    const pixel_format from = img.format();
    if (from == to) return std::move(img);
    image out(img.width(), img.height(), to);
    const std::uint8_t* s = img.data().data();
    std::uint8_t* d = out.data().data();
    const int sc = img.channels();
    const int dc = out.channels();
    const bool swap = (from == pixel_format::bgr) != (to == pixel_format::bgr);
    const std::size_t pixels =
        static_cast<std::size_t>(img.width()) * static_cast<std::size_t>(img.height());
    for (std::size_t i = 0; i < pixels; ++i, s += sc, d += dc) {
        if (from == pixel_format::gray) {
            d[0] = d[1] = d[2] = s[0];
            if (dc == 4) d[3] = 255;
            continue;
        }
        const int r = from == pixel_format::bgr ? s[2] : s[0];
        const int g = s[1];
        const int b = from == pixel_format::bgr ? s[0] : s[2];
        if (to == pixel_format::gray) {
            // cvtColor's fixed-point BT.601 weights (0.299, 0.587, 0.114).
            d[0] = static_cast<std::uint8_t>((r * 4899 + g * 9617 + b * 1868 + (1 << 13)) >> 14);
            continue;
        }
        d[0] = static_cast<std::uint8_t>(swap ? b : r);
        d[1] = static_cast<std::uint8_t>(g);
        d[2] = static_cast<std::uint8_t>(swap ? r : b);
        if (dc == 4) d[3] = sc == 4 ? s[3] : 255;
    }
    return out;
}

/// `cmyk` (4 channels, as libjpeg hands back CMYK and YCCK files) as `to`. Adobe's convention
/// (what Photoshop writes and libjpeg hands back): inverted CMYK. The same arithmetic as OpenCV,
/// so both decoders agree.
image cmyk_to(const image& cmyk, pixel_format to) {
    image rgb(cmyk.width(), cmyk.height(), pixel_format::rgb);
    const std::uint8_t* src = cmyk.data().data();
    std::uint8_t* dst = rgb.data().data();
    const std::size_t pixels =
        static_cast<std::size_t>(cmyk.width()) * static_cast<std::size_t>(cmyk.height());
    for (std::size_t i = 0; i < pixels; ++i, src += 4, dst += 3) {
        const int k = src[3];
        for (int c = 0; c < 3; ++c)
            dst[c] = static_cast<std::uint8_t>(k - (((255 - src[c]) * k) >> 8));
    }
    return to == pixel_format::rgb ? std::move(rgb) : convert(std::move(rgb), to);
}

crop_box stored_crop(const crop_box& box, int orientation, int width, int height) {
    const bool swap = orientation >= 5 && orientation <= 8;
    const int seen_w = swap ? height : width;
    const int seen_h = swap ? width : height;
    if (box.width <= 0 || box.height <= 0 || box.x < 0 || box.y < 0 || box.x > seen_w - box.width ||
        box.y > seen_h - box.height) {
        throw invalid_argument("decode_image: decode_options::crop = " + std::to_string(box.width) +
                               "x" + std::to_string(box.height) + " at (" + std::to_string(box.x) +
                               ", " + std::to_string(box.y) + ") is not inside the " +
                               std::to_string(seen_w) + "x" + std::to_string(seen_h) + " image");
    }
    // The inverse of `orient`: where the pixels of the box as seen lie in the stored image.
    const auto [x, y, w, h] = box;
    switch (orientation) {
        case 2:  // mirrored left-right
            return {width - x - w, y, w, h};
        case 3:  // rotated 180 degrees
            return {width - x - w, height - y - h, w, h};
        case 4:  // mirrored top-bottom
            return {x, height - y - h, w, h};
        case 5:  // transposed
            return {y, x, h, w};
        case 6:  // transposed, then mirrored left-right
            return {y, height - x - w, h, w};
        case 7:  // transposed, then rotated 180 degrees
            return {width - y - h, height - x - w, h, w};
        case 8:  // transposed, then mirrored top-bottom
            return {width - y - h, x, h, w};
        default:
            return box;
    }
}

}  // namespace codec

namespace {

using codec::format;

bool starts_with(std::span<const std::byte> data, const char* magic, std::size_t n,
                 std::size_t at = 0) {
    return data.size() >= at + n && std::memcmp(data.data() + at, magic, n) == 0;
}

format sniff(std::span<const std::byte> data) {
    if (data.empty()) throw decode_error("decode_image: empty input (0 bytes)");
    if (starts_with(data, "\xFF\xD8\xFF", 3)) return format::jpeg;
    if (starts_with(data, "\x89PNG\r\n\x1A\n", 8)) return format::png;
    if (starts_with(data, "RIFF", 4) && starts_with(data, "WEBP", 4, 8)) return format::webp;
    if (starts_with(data, "BM", 2)) return format::bmp;
    std::string head;
    for (std::size_t i = 0; i < data.size() && i < 8; ++i) {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%02x ", static_cast<unsigned>(data[i]));
        head += hex;
    }
    if (!head.empty()) head.pop_back();
    throw decode_error("decode_image: unsupported image format (first bytes: " + head +
                       "); JPEG, PNG, WebP and BMP are supported");
}

/// The EXIF orientation of a JPEG (APP1) or PNG (eXIf); 1 for the other formats.
int orientation_of(format f, std::span<const std::byte> data) noexcept {
    switch (f) {
        case format::jpeg:
            return codec::jpeg_orientation(data);
        case format::png:
            return codec::png_orientation(data);
        case format::webp:
        case format::bmp:
            break;
    }
    return 1;
}

bool set(image_size s) {
    return s.width > 0 && s.height > 0;
}

void check_size_option(image_size s, const char* name, std::uint64_t max_pixels) {
    if ((s.width != 0 || s.height != 0) && !set(s)) {
        throw invalid_argument(std::string("decode_image: decode_options::") + name + " = {" +
                               std::to_string(s.width) + ", " + std::to_string(s.height) +
                               "} must be positive (or {0, 0} for none)");
    }
    // The output is held to the limit the input is: a typo'd target would otherwise allocate
    // whatever it asks for (100000 x 100000 RGB is 30 GB).
    const auto pixels = static_cast<std::uint64_t>(std::max(s.width, 0)) *
                        static_cast<std::uint64_t>(std::max(s.height, 0));
    if (max_pixels != 0 && pixels > max_pixels) {
        throw invalid_argument(std::string("decode_image: decode_options::") + name + " = {" +
                               std::to_string(s.width) + ", " + std::to_string(s.height) + "} is " +
                               std::to_string(pixels) + " pixels, over max_pixels (" +
                               std::to_string(max_pixels) + ")");
    }
}

}  // namespace

image_info probe_image(std::span<const std::byte> data) {
    switch (sniff(data)) {
        case format::jpeg:
            return codec::probe_jpeg(data);
        case format::png:
            return codec::probe_png(data);
        case format::webp:
            return codec::probe_webp(data);
        case format::bmp:
            return codec::probe_bmp(data);
    }
    throw decode_error("decode_image: unsupported image format");
}

namespace {

/// decode_image; with `into` (and `options.resize`), a JPEG resized from the decoder's rows is
/// written there instead and the image returned is empty.
image decode(std::span<const std::byte> data, const decode_options& options, std::uint8_t* into) {
    check_size_option(options.resize, "resize", options.max_pixels);
    check_size_option(options.reduce_to, "reduce_to", options.max_pixels);
    if (!(options.scale_slack >= 0 && options.scale_slack <= 0.5)) {
        throw invalid_argument("decode_image: scale_slack " + std::to_string(options.scale_slack) +
                               " is outside [0, 0.5]");
    }
    const format f = sniff(data);
    const int orientation = options.apply_orientation ? orientation_of(f, data) : 1;

    codec::request req;
    req.format = options.format;
    req.strict = options.strict;
    req.slack = options.scale_slack;
    req.fast = options.fast;
    req.check_rest = options.check_rest;
    req.max_pixels = options.max_pixels;
    const image_size target = set(options.resize) ? options.resize : options.reduce_to;
    if (set(target)) {
        // The target is meant for the image as seen; orientations 5..8 swap the axes.
        req.at_least = orientation >= 5 ? image_size{target.height, target.width} : target;
    }

    if (options.crop) {
        req.crop = &*options.crop;
        req.orientation = orientation;
    }
    if (set(options.resize) && orientation == 1) {
        req.resize_to = options.resize;  // the JPEG decoder resizes from its own rows
        req.interp = options.interp;
        req.into = into;
    }

    image img;
    switch (f) {
        case format::jpeg:
            img = codec::decode_jpeg(data, req);  // with a crop: only the region
            if (img.empty()) return img;          // written to `into`
            break;
        case format::png:
            img = codec::decode_png(data, req);
            break;
        case format::webp:
            img = codec::decode_webp(data, req);
            break;
        case format::bmp:
            img = codec::decode_bmp(data, req);
            break;
    }
    if (options.crop && f != format::jpeg) {
        // Decoded whole, at full scale (only JPEG has a reduced scale): the box as stored, then
        // oriented below like the whole image.
        img = crop(img, codec::stored_crop(*options.crop, orientation, img.width(), img.height()));
    }
    if (orientation != 1) img = orient(img, orientation);
    if (set(options.resize) && img.size() != options.resize) {
        img = resize(img, options.resize.width, options.resize.height, options.interp);
    }
    return img;
}

/// decode_random_resized_crop's box and its decode options.
decode_options random_resized_crop_decode(std::span<const std::byte> data, int width, int height,
                                          std::mt19937_64& rng,
                                          const decode_random_resized_crop_options& options,
                                          const char* op) {
    const image_size seen = probe_image(data).oriented_size();
    // The same draw as random_resized_crop on the decoded image, then the same checks.
    const crop_box box = random_resized_crop_box(
        seen, rng, {.scale = options.scale, .ratio = options.ratio, .interp = options.interp});
    if (width <= 0 || height <= 0) {
        throw invalid_argument(std::string(op) + ": target " + std::to_string(width) + "x" +
                               std::to_string(height) + " is not positive");
    }
    // resize: the smallest DCT scale at which the box still has width x height pixels, then
    // the resize (from the decoder's rows, for a JPEG).
    return {.format = options.format,
            .resize = {width, height},
            .interp = options.interp,
            .max_pixels = options.max_pixels,
            .strict = options.strict,
            .crop = box,
            .scale_slack = options.scale_slack,
            .fast = options.fast,
            .check_rest = options.check_rest};
}

}  // namespace

namespace detail {

image decode_image_fn::operator()(std::span<const std::byte> data,
                                  const decode_options& options) const {
    return decode(data, options, nullptr);
}

}  // namespace detail

image decode_random_resized_crop(std::span<const std::byte> data, int width, int height,
                                 std::mt19937_64& rng,
                                 const decode_random_resized_crop_options& options) {
    image img = decode(
        data,
        random_resized_crop_decode(data, width, height, rng, options, "decode_random_resized_crop"),
        nullptr);
    if (options.flip) img = horizontal_flip(std::move(img));
    return img;
}

image_slot decode_random_resized_crop_into(std::span<const std::byte> data, image_slot slot,
                                           std::mt19937_64& rng,
                                           const decode_random_resized_crop_options& options) {
    if (slot.empty()) {
        throw invalid_argument(
            "decode_random_resized_crop_into: an empty slot (claim it from a "
            "ferry::batch_slots)");
    }
    if (slot.format() != options.format) {
        throw invalid_argument(std::string("decode_random_resized_crop_into: the slot holds ") +
                               to_string(slot.format()) + " pixels, the options ask for " +
                               to_string(options.format));
    }
    const auto out = slot.pixels();
    const image img = decode(data,
                             random_resized_crop_decode(data, slot.width(), slot.height(), rng,
                                                        options, "decode_random_resized_crop_into"),
                             out.data());
    // Where the decoder could not resize into the slot (not a JPEG, an EXIF orientation): a copy.
    if (!img.empty()) std::memcpy(out.data(), img.data().data(), out.size());
    if (options.flip) return horizontal_flip(std::move(slot));
    return slot;
}

}  // namespace ops
}  // namespace ferry
