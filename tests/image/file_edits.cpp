// SPDX-License-Identifier: Apache-2.0
/// \file
/// Edits to encoded files for the image tests: EXIF blocks written and inserted (JPEG APP1, PNG
/// eXIf), the pixels each orientation means, headers that declare another size, and damaged
/// copies of a JPEG's entropy-coded data (see support.hpp).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <opencv2/core.hpp>
#include <random>
#include <stdexcept>

#include "byte_order.hpp"

#include "support.hpp"

namespace ops_test {

file_bytes exif_tiff(std::uint32_t value, const exif_layout& layout) {
    const bool big = layout.big_endian;
    const auto u16 = [big](std::uint32_t v) {
        return big ? file_bytes{static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)}
                   : file_bytes{static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8)};
    };
    const auto u32 = [&](std::uint32_t v) {
        file_bytes hi = u16(v >> 16);
        file_bytes lo = u16(v & 0xFFFFU);
        file_bytes out = big ? hi : lo;
        const file_bytes& second = big ? lo : hi;
        out.insert(out.end(), second.begin(), second.end());
        return out;
    };
    const auto cat = [](file_bytes a, const file_bytes& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    // An IFD entry: its value's bytes as stored (inline when at most 4, else after the IFD).
    struct entry {
        std::uint32_t tag;
        std::uint32_t type;
        std::uint32_t count;
        file_bytes value;
        bool sub_ifd = false;  // the value is the offset of the Exif sub-IFD
    };
    const file_bytes orientation = layout.type == 4 ? u32(value) : u16(value);
    std::vector<entry> ifd0;
    if (layout.camera) {
        const file_bytes make{'C', 'a', 'n', 'o', 'n', 0};
        const file_bytes model{'X', '1', '0', 0};
        const file_bytes dpi = cat(u32(72), u32(1));
        ifd0 = {{0x010F, 2, 6, make},
                {0x0110, 2, 4, model},
                {0x0112, static_cast<std::uint32_t>(layout.type), 1, orientation},
                {0x011A, 5, 1, dpi},
                {0x011B, 5, 1, dpi},
                {0x0128, 3, 1, u16(2)},
                {0x8769, 4, 1, {}, true}};
    } else {
        ifd0 = {{0x0112, static_cast<std::uint32_t>(layout.type), 1, orientation}};
    }
    // The header, IFD0, its out-of-line values, then (camera) the Exif sub-IFD with one entry.
    const std::size_t ifd_size = 2 + ifd0.size() * 12 + 4;
    file_bytes out = {static_cast<std::uint8_t>(big ? 'M' : 'I'),
                      static_cast<std::uint8_t>(big ? 'M' : 'I')};
    out = cat(out, u16(42));
    out = cat(out, u32(8));
    file_bytes values;
    std::size_t values_at = 8 + ifd_size;
    for (const entry& e : ifd0) {
        if (e.value.size() > 4) values_at += e.value.size();
    }
    out = cat(out, u16(static_cast<std::uint32_t>(ifd0.size())));
    for (const entry& e : ifd0) {
        out = cat(out, u16(e.tag));
        out = cat(out, u16(e.type));
        out = cat(out, u32(e.count));
        if (e.sub_ifd) {
            out = cat(out, u32(static_cast<std::uint32_t>(values_at)));
        } else if (e.value.size() > 4) {
            out = cat(out, u32(static_cast<std::uint32_t>(8 + ifd_size + values.size())));
            values = cat(values, e.value);
        } else {
            file_bytes inline_value = e.value;
            inline_value.resize(4, 0);  // left-justified
            out = cat(out, inline_value);
        }
    }
    out = cat(out, u32(0));  // no IFD1
    out = cat(out, values);
    if (layout.camera) {  // the Exif sub-IFD: ExifVersion "0230"
        out = cat(out, u16(1));
        out = cat(out, cat(cat(u16(0x9000), u16(7)), u32(4)));
        out = cat(out, file_bytes{'0', '2', '3', '0'});
        out = cat(out, u32(0));
    }
    return out;
}

file_bytes with_exif_app1(const file_bytes& jpeg, const file_bytes& tiff, bool after_app0) {
    std::size_t at = 2;  // after SOI
    if (after_app0) {
        if (jpeg.size() < 6 || jpeg[2] != 0xFF || jpeg[3] != 0xE0) {
            throw std::logic_error("with_exif_app1: the JPEG has no APP0 after SOI");
        }
        at += 2 + ((std::size_t{jpeg[4]} << 8) | jpeg[5]);
    }
    const char exif_id[6] = {'E', 'x', 'i', 'f', '\0', '\0'};
    const std::size_t len = 2 + sizeof exif_id + tiff.size();
    file_bytes out(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(at));
    out.push_back(0xFF);
    out.push_back(0xE1);
    out.push_back(static_cast<std::uint8_t>(len >> 8));
    out.push_back(static_cast<std::uint8_t>(len));
    out.insert(out.end(), exif_id, exif_id + sizeof exif_id);
    out.insert(out.end(), tiff.begin(), tiff.end());
    out.insert(out.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(at), jpeg.end());
    return out;
}

file_bytes with_exif_orientation(const file_bytes& jpeg, int orientation, bool big_endian) {
    return with_exif_app1(
        jpeg, exif_tiff(static_cast<std::uint32_t>(orientation), {.big_endian = big_endian}));
}

file_bytes with_png_exif(const file_bytes& png, const file_bytes& body, bool after_idat) {
    // After the signature and IHDR (8 + 25 bytes), or before the 12-byte IEND at the end.
    const std::size_t at = after_idat ? png.size() - 12 : 8 + 25;
    file_bytes chunk(8);
    put_be16(chunk, 0, static_cast<std::uint32_t>(body.size() >> 16));
    put_be16(chunk, 2, static_cast<std::uint32_t>(body.size() & 0xFFFFU));
    std::memcpy(chunk.data() + 4, "eXIf", 4);
    chunk.insert(chunk.end(), body.begin(), body.end());
    const std::uint32_t crc = crc32(chunk.data() + 4, chunk.size() - 4);
    for (int i = 0; i < 4; ++i) chunk.push_back(static_cast<std::uint8_t>(crc >> (24 - 8 * i)));
    file_bytes out(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(at));
    out.insert(out.end(), chunk.begin(), chunk.end());
    out.insert(out.end(), png.begin() + static_cast<std::ptrdiff_t>(at), png.end());
    return out;
}

cv::Mat oriented(const cv::Mat& stored, int orientation) {
    cv::Mat out;
    switch (orientation) {
        case 2:
            cv::flip(stored, out, 1);
            break;
        case 3:
            cv::rotate(stored, out, cv::ROTATE_180);
            break;
        case 4:
            cv::flip(stored, out, 0);
            break;
        case 5:
            cv::transpose(stored, out);
            break;
        case 6:
            cv::rotate(stored, out, cv::ROTATE_90_CLOCKWISE);
            break;
        case 7: {
            cv::Mat t;
            cv::transpose(stored, t);
            cv::rotate(t, out, cv::ROTATE_180);
            break;
        }
        case 8:
            cv::rotate(stored, out, cv::ROTATE_90_COUNTERCLOCKWISE);
            break;
        default:
            out = stored.clone();
    }
    return out;
}

std::size_t jpeg_header_length(const file_bytes& jpeg) {
    std::size_t i = 2;
    while (i + 4 <= jpeg.size() && jpeg[i] == 0xFF) {
        const std::size_t len = (std::size_t{jpeg[i + 2]} << 8) | jpeg[i + 3];
        if (jpeg[i + 1] == 0xDA) return i + 2 + len;
        i += 2 + len;
    }
    throw std::logic_error("jpeg_header_length: no SOS");
}

std::vector<std::pair<std::string, file_bytes>> damaged_jpegs(const file_bytes& good, int cuts,
                                                              int changes, std::uint32_t seed) {
    const std::size_t from = jpeg_header_length(good);
    const std::size_t to = good.size() - 2;  // the EOI marker
    std::vector<std::pair<std::string, file_bytes>> out;
    for (int i = 0; i <= cuts; ++i) {
        const std::size_t at =
            from + (to + 2 - from) * static_cast<std::size_t>(i) / static_cast<std::size_t>(cuts);
        out.emplace_back("cut at " + std::to_string(at),
                         file_bytes(good.begin(), good.begin() + static_cast<long>(at)));
    }
    std::mt19937 rng(seed);
    for (int i = 0; i < changes; ++i) {
        file_bytes f = good;
        const std::size_t at = from + rng() % (to - from);
        const int pick = i % 4;
        f[at] = pick == 0 ? 0xFF : pick == 1 ? 0x00 : static_cast<std::uint8_t>(rng());
        if (pick == 3 && at + 1 < to) {
            f[at] = 0xFF;
            f[at + 1] = static_cast<std::uint8_t>(0xD0 + rng() % 10);  // RSTn, SOI, EOI
        }
        out.emplace_back("byte " + std::to_string(at) + " changed", std::move(f));
    }
    return out;
}

file_bytes jpeg_declaring(file_bytes jpeg, int width, int height) {
    std::size_t i = 2;
    while (i + 9 < jpeg.size() && jpeg[i] == 0xFF) {
        const std::uint8_t marker = jpeg[i + 1];
        const std::size_t len = (std::size_t{jpeg[i + 2]} << 8) | jpeg[i + 3];
        if (marker >= 0xC0 && marker <= 0xC2) {
            put_be16(jpeg, i + 5, static_cast<std::uint32_t>(height));
            put_be16(jpeg, i + 7, static_cast<std::uint32_t>(width));
            return jpeg;
        }
        i += 2 + len;
    }
    throw std::logic_error("jpeg_declaring: no SOF marker");
}

file_bytes png_declaring(file_bytes png, std::uint32_t width, std::uint32_t height) {
    // Signature (8), then the IHDR chunk: length (4), "IHDR" (4), width, height, ..., CRC.
    for (int i = 0; i < 4; ++i) {
        png[16 + i] = static_cast<std::uint8_t>(width >> (24 - 8 * i));
        png[20 + i] = static_cast<std::uint8_t>(height >> (24 - 8 * i));
    }
    const std::uint32_t crc = crc32(png.data() + 12, 4 + 13);
    for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
    return png;
}

file_bytes webp_lossless_declaring(file_bytes webp, int width, int height) {
    // RIFF (12), "VP8L" + size (8), signature 0x2f, then 14 bits width-1, 14 bits height-1.
    if (std::memcmp(webp.data() + 12, "VP8L", 4) != 0 || webp[20] != 0x2F)
        throw std::logic_error("webp_lossless_declaring: not a simple lossless WebP");
    std::uint32_t bits = 0;
    for (int i = 0; i < 4; ++i) bits |= std::uint32_t{webp[21 + i]} << (8 * i);
    bits = (bits & 0xF0000000U) | static_cast<std::uint32_t>(width - 1) |
           (static_cast<std::uint32_t>(height - 1) << 14);
    put_le32(webp, 21, bits);
    return webp;
}

file_bytes bmp_declaring(file_bytes bmp, std::int32_t width, std::int32_t height) {
    put_le32(bmp, 18, static_cast<std::uint32_t>(width));
    put_le32(bmp, 22, static_cast<std::uint32_t>(height));
    return bmp;
}

}  // namespace ops_test
