// SPDX-License-Identifier: Apache-2.0
/// \file
/// EXIF orientation for JPEG (APP1) and PNG (eXIf): finding the EXIF block in each container and
/// reading tag 0x0112 from its TIFF structure. Every read is bounds-checked against the bytes
/// given; anything unreadable is orientation 1, never an error.
#include "exif.hpp"

#include <cstdint>
#include <cstring>

namespace ferry::ops::codec {
namespace {

std::uint16_t read16(const unsigned char* p, bool big_endian) {
    return big_endian ? static_cast<std::uint16_t>((p[0] << 8) | p[1])
                      : static_cast<std::uint16_t>((p[1] << 8) | p[0]);
}

std::uint32_t read32(const unsigned char* p, bool big_endian) {
    return big_endian ? (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                            (std::uint32_t{p[2]} << 8) | p[3]
                      : (std::uint32_t{p[3]} << 24) | (std::uint32_t{p[2]} << 16) |
                            (std::uint32_t{p[1]} << 8) | p[0];
}

constexpr unsigned char exif_id[6] = {'E', 'x', 'i', 'f', 0, 0};

}  // namespace

int tiff_orientation(byte_span data) noexcept {
    const unsigned char* tiff = as_uchar(data);
    const std::size_t size = data.size();
    if (size < 8) return 1;
    bool big;
    if (tiff[0] == 'I' && tiff[1] == 'I') {
        big = false;
    } else if (tiff[0] == 'M' && tiff[1] == 'M') {
        big = true;
    } else {
        return 1;
    }
    if (read16(tiff + 2, big) != 42) return 1;
    const std::uint32_t ifd = read32(tiff + 4, big);
    if (ifd < 8 || ifd > size - 2) return 1;
    const std::uint16_t entries = read16(tiff + ifd, big);
    for (std::uint32_t i = 0; i < entries; ++i) {
        // Each entry: tag (2), type (2), count (4), the value itself when it fits in 4 bytes
        // (left-justified), else an offset to it.
        const std::size_t at = std::size_t{ifd} + 2 + std::size_t{i} * 12;
        if (at + 12 > size) return 1;
        if (read16(tiff + at, big) != 0x0112) continue;
        int v = 0;
        switch (read16(tiff + at + 2, big)) {
            case 3:  // SHORT, what the EXIF specification says
                v = read16(tiff + at + 8, big);
                break;
            case 4: {  // LONG, which some writers use
                const std::uint32_t l = read32(tiff + at + 8, big);
                v = l <= 8 ? static_cast<int>(l) : 0;
                break;
            }
            default:
                return 1;
        }
        return (v >= 1 && v <= 8) ? v : 1;
    }
    return 1;
}

int jpeg_orientation(byte_span data) noexcept {
    const unsigned char* p = as_uchar(data);
    const std::size_t n = data.size();
    if (n < 4 || p[0] != 0xFF || p[1] != 0xD8) return 1;
    std::size_t pos = 2;
    while (pos + 4 <= n) {
        if (p[pos] != 0xFF) return 1;
        const unsigned char marker = p[pos + 1];
        if (marker == 0xFF) {  // fill byte
            ++pos;
            continue;
        }
        if (marker == 0xDA || marker == 0xD9) return 1;  // image data starts: no EXIF before it
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
            pos += 2;
            continue;
        }
        const std::size_t len = (std::size_t{p[pos + 2]} << 8) | p[pos + 3];
        if (len < 2 || pos + 2 + len > n) return 1;
        const unsigned char* body = p + pos + 4;
        const std::size_t body_len = len - 2;
        if (marker == 0xE1 && body_len >= 6 && std::memcmp(body, exif_id, 6) == 0) {
            return tiff_orientation(data.subspan(pos + 4 + 6, body_len - 6));
        }
        pos += 2 + len;
    }
    return 1;
}

int png_orientation(byte_span data) noexcept {
    const unsigned char* p = as_uchar(data);
    const std::size_t n = data.size();
    // The signature, then chunks: length (4, big-endian), type (4), data, CRC (4). The CRC is
    // not checked: libpng only warns about a bad one in an ancillary chunk, and so do we.
    for (std::size_t at = 8; at + 8 <= n;) {
        const std::size_t len = read32(p + at, true);
        const unsigned char* type = p + at + 4;
        if (std::memcmp(type, "IEND", 4) == 0) return 1;
        if (len > n - at - 8) return 1;  // the chunk runs past the end
        if (std::memcmp(type, "eXIf", 4) == 0) {
            byte_span body = data.subspan(at + 8, len);
            if (len >= 6 && std::memcmp(body.data(), exif_id, 6) == 0) body = body.subspan(6);
            return tiff_orientation(body);
        }
        at += len + 12;
    }
    return 1;
}

}  // namespace ferry::ops::codec
