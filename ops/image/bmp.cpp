// SPDX-License-Identifier: Apache-2.0
/// \file
/// BMP, parsed here (it is a header and rows): 1/4/8-bit palette, 16/24/32-bit, BI_RGB and
/// BI_BITFIELDS, bottom-up and top-down. RLE compression is refused as unsupported.
#include <bit>
#include <cstring>

#include "codecs.hpp"

namespace ferry::ops::codec {
namespace {

std::uint32_t u32(const unsigned char* p) {
    return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
           (std::uint32_t{p[3]} << 24);
}
std::uint16_t u16(const unsigned char* p) {
    return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

struct header {
    long long width = 0;
    long long height = 0;  // positive: rows stored bottom-up
    int bpp = 0;
    std::uint32_t compression = 0;
    std::uint32_t pixel_offset = 0;
    std::uint32_t masks[4] = {};  // r, g, b, a for 16/32-bit
    std::size_t palette_offset = 0;
    int palette_entry = 4;  // bytes per palette entry (3 for the old OS/2 header)
    std::uint32_t palette_size = 0;
};

constexpr std::uint32_t bi_rgb = 0;
constexpr std::uint32_t bi_bitfields = 3;
constexpr std::uint32_t bi_alphabitfields = 6;

header parse(byte_span data) {
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const std::size_t n = data.size();
    if (n < 26) fail("bmp", "truncated data: the header is incomplete");
    header h;
    h.pixel_offset = u32(p + 10);
    const std::uint32_t dib = u32(p + 14);
    if (dib == 12) {  // BITMAPCOREHEADER
        h.width = u16(p + 18);
        h.height = u16(p + 20);
        h.bpp = u16(p + 24);
        h.palette_entry = 3;
    } else if (dib >= 40) {
        if (n < 14 + std::size_t{40}) fail("bmp", "truncated data: the header is incomplete");
        h.width = static_cast<std::int32_t>(u32(p + 18));
        h.height = static_cast<std::int32_t>(u32(p + 22));
        h.bpp = u16(p + 28);
        h.compression = u32(p + 30);
        h.palette_size = u32(p + 46);
        if (h.compression == bi_bitfields || h.compression == bi_alphabitfields) {
            // Masks live inside a V2+ header, or just after a 40-byte one.
            const int count = h.compression == bi_alphabitfields || dib >= 56 ? 4 : 3;
            if (n < 14 + std::size_t{40} + 16) fail("bmp", "truncated data: masks missing");
            for (int i = 0; i < count; ++i) h.masks[i] = u32(p + 54 + 4 * i);
        }
    } else {
        fail("bmp", "unsupported header size " + std::to_string(dib));
    }
    h.palette_offset = 14 + std::size_t{dib};
    if (h.compression == bi_bitfields && dib == 40) h.palette_offset += 12;
    if (h.compression == bi_alphabitfields && dib == 40) h.palette_offset += 16;
    if (h.compression != bi_rgb && h.compression != bi_bitfields &&
        h.compression != bi_alphabitfields) {
        fail("bmp", "unsupported compression " + std::to_string(h.compression) +
                        (h.compression == 1 || h.compression == 2 ? " (RLE)" : ""));
    }
    if (h.bpp != 1 && h.bpp != 4 && h.bpp != 8 && h.bpp != 16 && h.bpp != 24 && h.bpp != 32) {
        fail("bmp", "unsupported bit depth " + std::to_string(h.bpp));
    }
    // A height of INT32_MIN has no positive counterpart in 32 bits (found by the fuzzer: the
    // probe reported a negative height).
    if (h.width <= 0 || h.height == 0 || h.height < -std::int64_t{INT32_MAX}) {
        fail("bmp", "bad size " + std::to_string(h.width) + "x" + std::to_string(h.height));
    }
    if (h.bpp == 16 && h.compression == bi_rgb) {
        h.masks[0] = 0x7C00;
        h.masks[1] = 0x03E0;
        h.masks[2] = 0x001F;
    }
    if (h.bpp == 32 && h.compression == bi_rgb) {
        h.masks[0] = 0x00FF0000;
        h.masks[1] = 0x0000FF00;
        h.masks[2] = 0x000000FF;  // the fourth byte is unused in BI_RGB
    }
    return h;
}

/// Scales the bits of `v` selected by `mask` to 0..255.
std::uint8_t extract(std::uint32_t v, std::uint32_t mask) {
    if (mask == 0) return 0;
    const int shift = std::countr_zero(mask);
    const int bits = std::popcount(mask);
    const std::uint32_t x = (v & mask) >> shift;
    const std::uint32_t max = bits >= 32 ? 0xFFFFFFFFU : ((1U << bits) - 1);
    return static_cast<std::uint8_t>((static_cast<std::uint64_t>(x) * 255 + max / 2) / max);
}

}  // namespace

image_info probe_bmp(byte_span data) {
    const header h = parse(data);
    image_info info;
    info.format = "bmp";
    info.width = static_cast<int>(h.width);
    info.height = static_cast<int>(h.height < 0 ? -h.height : h.height);
    info.channels = h.masks[3] != 0 ? 4 : 3;
    info.bit_depth = h.bpp <= 8 ? h.bpp : 8;  // palette images: the index's bits
    return info;
}

image decode_bmp(byte_span data, const request& req) {
    const header h = parse(data);
    const long long height = h.height < 0 ? -h.height : h.height;
    check_pixels("bmp", h.width, height, req.max_pixels);
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const std::size_t n = data.size();
    const std::size_t stride = ((static_cast<std::size_t>(h.width) * h.bpp + 31) / 32) * 4;
    std::size_t rows_bytes = 0;
    if (__builtin_mul_overflow(stride, static_cast<std::size_t>(height), &rows_bytes) ||
        h.pixel_offset > n || rows_bytes > n - h.pixel_offset) {
        fail("bmp", "truncated data: the pixel rows end early");
    }

    // Palette (for <= 8 bits), as RGB triples.
    unsigned char palette[256][3] = {};
    if (h.bpp <= 8) {
        std::uint32_t entries = h.palette_size == 0 ? (1U << h.bpp) : h.palette_size;
        if (entries > (1U << h.bpp)) entries = 1U << h.bpp;
        if (h.palette_offset + std::size_t{entries} * h.palette_entry > n) {
            fail("bmp", "truncated data: the palette ends early");
        }
        for (std::uint32_t i = 0; i < entries; ++i) {
            const unsigned char* e = p + h.palette_offset + std::size_t{i} * h.palette_entry;
            palette[i][0] = e[2];
            palette[i][1] = e[1];
            palette[i][2] = e[0];
        }
    }

    const bool alpha = req.format == pixel_format::rgba;
    const pixel_format direct = alpha ? pixel_format::rgba : pixel_format::rgb;
    const int w = static_cast<int>(h.width);
    const int ht = static_cast<int>(height);
    image out(w, ht, direct);
    const int oc = out.channels();
    for (int y = 0; y < ht; ++y) {
        const int src_row = h.height > 0 ? ht - 1 - y : y;
        const unsigned char* row = p + h.pixel_offset + static_cast<std::size_t>(src_row) * stride;
        std::uint8_t* dst = out.data().data() + static_cast<std::size_t>(y) * out.row_bytes();
        for (int x = 0; x < w; ++x, dst += oc) {
            std::uint8_t a = 255;
            if (h.bpp <= 8) {
                const int per_byte = 8 / h.bpp;
                const unsigned byte = row[x / per_byte];
                const int shift = 8 - h.bpp * (x % per_byte + 1);
                const unsigned idx = (byte >> shift) & ((1U << h.bpp) - 1);
                std::memcpy(dst, palette[idx], 3);
            } else if (h.bpp == 24) {
                const unsigned char* s = row + static_cast<std::size_t>(x) * 3;
                dst[0] = s[2];
                dst[1] = s[1];
                dst[2] = s[0];
            } else {
                const std::uint32_t v = h.bpp == 16 ? u16(row + static_cast<std::size_t>(x) * 2)
                                                    : u32(row + static_cast<std::size_t>(x) * 4);
                dst[0] = extract(v, h.masks[0]);
                dst[1] = extract(v, h.masks[1]);
                dst[2] = extract(v, h.masks[2]);
                if (h.masks[3] != 0) a = extract(v, h.masks[3]);
            }
            if (alpha) dst[3] = a;
        }
    }
    return direct == req.format ? std::move(out) : convert(std::move(out), req.format);
}

}  // namespace ferry::ops::codec
