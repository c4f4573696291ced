// SPDX-License-Identifier: Apache-2.0
/// \file
/// PNG through libpng's classic API: 1–16-bit, palette, gray, alpha, interlaced; conversions
/// done by libpng's row transforms (the EXIF orientation of an eXIf chunk is read in exif.cpp).
/// libpng reports errors by longjmp: the functions that call into it hold no C++ object with a
/// destructor, and every allocation is made outside them.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <vector>

#include "codecs.hpp"
#include "exif.hpp"

namespace ferry::ops::codec {
namespace {

struct reader {
    png_structp png = nullptr;
    png_infop info = nullptr;
    const unsigned char* data = nullptr;
    std::size_t size = 0;
    std::size_t pos = 0;
    char message[256] = {};

    explicit reader(byte_span bytes);
    ~reader() { png_destroy_read_struct(&png, &info, nullptr); }
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;
};

void on_error(png_structp png, png_const_charp msg) {
    auto* r = static_cast<reader*>(png_get_error_ptr(png));
    std::strncpy(r->message, msg, sizeof(r->message) - 1);
    png_longjmp(png, 1);
}

void on_warning(png_structp /*png*/, png_const_charp /*msg*/) {}  // e.g. bad ancillary CRCs

void on_read(png_structp png, png_bytep out, std::size_t n) {
    auto* r = static_cast<reader*>(png_get_io_ptr(png));
    if (n > r->size - r->pos) png_error(png, "truncated data: the file ends early");
    std::memcpy(out, r->data + r->pos, n);
    r->pos += n;
}

reader::reader(byte_span bytes)
    : data(reinterpret_cast<const unsigned char*>(bytes.data())), size(bytes.size()) {
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, this, on_error, on_warning);
    if (png != nullptr) info = png_create_info_struct(png);
    if (png == nullptr || info == nullptr) fail("png", "cannot create a decoder (out of memory)");
    png_set_read_fn(png, this, on_read);
    // Bound what a hostile file can make libpng allocate for one ancillary chunk.
    png_set_chunk_malloc_max(png, 16 * 1024 * 1024);
}

/// Reads up to the image data. False (with `r.message`) on error.
bool read_info(reader& r) {
    if (setjmp(png_jmpbuf(r.png))) return false;
    png_read_info(r.png, r.info);
    return true;
}

/// Sets up the row transforms that turn whatever the file holds into `want`, then reads the
/// geometry after them. False (with `r.message`) on error.
bool set_transforms(reader& r, pixel_format want, png_uint_32* rowbytes) {
    if (setjmp(png_jmpbuf(r.png))) return false;
    png_structp png = r.png;
    png_infop info = r.info;
    const int color = png_get_color_type(png, info);
    const int depth = png_get_bit_depth(png, info);
    const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;

    if (depth == 16) png_set_strip_16(png);  // what OpenCV and Pillow do: the high byte
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    const bool file_color = (color & PNG_COLOR_MASK_COLOR) != 0;
    bool alpha = (color & PNG_COLOR_MASK_ALPHA) != 0;
    if (has_trns && want == pixel_format::rgba) {
        png_set_tRNS_to_alpha(png);
        alpha = true;
    }
    if (want == pixel_format::gray) {
        if (alpha || has_trns) png_set_strip_alpha(png);
        // BT.601 weights, as OpenCV's PNG decoder and cvtColor use.
        if (file_color) png_set_rgb_to_gray_fixed(png, 1, 29900, 58700);
    } else {
        if (!file_color) png_set_gray_to_rgb(png);
        if (want == pixel_format::rgba) {
            if (!alpha) png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
        } else if (alpha || has_trns) {
            // png_set_palette_to_rgb also turns a palette's tRNS into alpha: strip it too.
            png_set_strip_alpha(png);
        }
        if (want == pixel_format::bgr) png_set_bgr(png);
    }
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    *rowbytes = static_cast<png_uint_32>(png_get_rowbytes(png, info));
    return true;
}

/// Decodes every row and, when `strict`, the chunks after the image data. False (with
/// `r.message`) on error.
bool read_rows(reader& r, png_bytepp rows, bool strict) {
    if (setjmp(png_jmpbuf(r.png))) return false;
    png_read_image(r.png, rows);
    if (strict) png_read_end(r.png, nullptr);
    return true;
}

}  // namespace

image_info probe_png(byte_span data) {
    // From the bytes, not libpng: png_read_info reads every chunk up to the image data, and a
    // probe should need no more than the header.
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const std::size_t n = data.size();
    auto be32 = [p](std::size_t at) {
        return (std::uint32_t{p[at]} << 24) | (std::uint32_t{p[at + 1]} << 16) |
               (std::uint32_t{p[at + 2]} << 8) | p[at + 3];
    };
    if (n < 8 + 8 + 13) fail("png", "truncated data: the file ends inside the header");
    if (std::memcmp(p + 12, "IHDR", 4) != 0 || be32(8) != 13) {
        fail("png", "bad header: the first chunk is not IHDR");
    }
    image_info info;
    info.format = "png";
    const std::uint32_t w = be32(16);
    const std::uint32_t h = be32(20);
    if (w == 0 || h == 0 || w > 0x7FFFFFFFU || h > 0x7FFFFFFFU) {
        fail("png", "bad header: size " + std::to_string(w) + "x" + std::to_string(h));
    }
    info.width = static_cast<int>(w);
    info.height = static_cast<int>(h);
    info.bit_depth = p[24];
    const int color = p[25];
    // Look for a tRNS chunk before the image data, as far as the bytes go.
    bool trns = false;
    for (std::size_t at = 8 + 25; at + 8 <= n;) {
        const std::uint32_t len = be32(at);
        if (std::memcmp(p + at + 4, "IDAT", 4) == 0 || std::memcmp(p + at + 4, "IEND", 4) == 0)
            break;
        if (std::memcmp(p + at + 4, "tRNS", 4) == 0) {
            trns = true;
            break;
        }
        if (len > n) break;
        at += std::size_t{len} + 12;
    }
    switch (color) {
        case PNG_COLOR_TYPE_GRAY:
            info.channels = trns ? 2 : 1;
            break;
        case PNG_COLOR_TYPE_GRAY_ALPHA:
            info.channels = 2;
            break;
        case PNG_COLOR_TYPE_PALETTE:
        case PNG_COLOR_TYPE_RGB:
            info.channels = trns ? 4 : 3;
            break;
        case PNG_COLOR_TYPE_RGB_ALPHA:
            info.channels = 4;
            break;
        default:
            fail("png", "bad header: colour type " + std::to_string(color));
    }
    info.orientation = png_orientation(data);
    return info;
}

image decode_png(byte_span data, const request& req) {
    reader r(data);
    if (!read_info(r)) fail("png", r.message);
    const int width = static_cast<int>(png_get_image_width(r.png, r.info));
    const int height = static_cast<int>(png_get_image_height(r.png, r.info));
    check_pixels("png", width, height, req.max_pixels);
    png_uint_32 rowbytes = 0;
    if (!set_transforms(r, req.format, &rowbytes)) fail("png", r.message);
    image out(width, height, req.format);
    if (rowbytes != out.row_bytes()) {
        fail("png", "unexpected row size " + std::to_string(rowbytes) + " (expected " +
                        std::to_string(out.row_bytes()) + ")");
    }
    std::vector<png_bytep> rows(static_cast<std::size_t>(height));
    for (int y = 0; y < height; ++y) {
        rows[static_cast<std::size_t>(y)] =
            out.data().data() + static_cast<std::size_t>(y) * out.row_bytes();
    }
    if (!read_rows(r, rows.data(), req.strict)) fail("png", r.message);
    return out;
}

}  // namespace ferry::ops::codec
