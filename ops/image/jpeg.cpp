// SPDX-License-Identifier: Apache-2.0
/// \file
/// Walks over a JPEG's marker segments for the decoder (jpeg_decode.cpp): where a cut file's
/// header or last complete segment ends, for its messages and its lenient mode. (The EXIF
/// orientation is read in exif.cpp.)
#include "codecs.hpp"

namespace ferry::ops::codec {
namespace {}  // namespace

bool jpeg_header_complete(byte_span data) noexcept {
    const unsigned char* p = as_uchar(data);
    const std::size_t n = data.size();
    std::size_t pos = 2;
    while (pos + 4 <= n) {
        if (p[pos] != 0xFF) return true;  // not a marker: corrupt rather than cut
        const unsigned char marker = p[pos + 1];
        if (marker == 0xFF) {
            ++pos;
            continue;
        }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {
            pos += 2;
            continue;
        }
        const std::size_t len = (std::size_t{p[pos + 2]} << 8) | p[pos + 3];
        if (marker == 0xDA) return pos + 2 + len <= n;
        if (marker == 0xD9) return true;
        pos += 2 + len;
    }
    return false;
}

std::size_t jpeg_complete_prefix(byte_span data) noexcept {
    const unsigned char* p = as_uchar(data);
    const std::size_t n = data.size();
    if (n < 4 || p[0] != 0xFF || p[1] != 0xD8) return 0;
    bool scanned = false;  // a scan's entropy data has been passed
    std::size_t pos = 2;
    while (pos + 2 <= n) {
        if (p[pos] != 0xFF) return 0;  // not a marker: corrupt rather than cut
        const unsigned char marker = p[pos + 1];
        if (marker == 0xFF) {  // fill byte
            ++pos;
            continue;
        }
        if (marker == 0xD9) return 0;
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {
            pos += 2;
            continue;
        }
        if (pos + 4 > n) return scanned ? pos : 0;
        const std::size_t len = (std::size_t{p[pos + 2]} << 8) | p[pos + 3];
        if (pos + 2 + len > n) return scanned ? pos : 0;
        pos += 2 + len;
        if (marker != 0xDA) continue;
        // The scan's entropy data runs to the next marker: 0xFF not followed by a stuffed zero,
        // a restart marker or another 0xFF.
        for (;; ++pos) {
            if (pos + 1 >= n) return 0;  // the bytes end inside the entropy data
            if (p[pos] != 0xFF) continue;
            const unsigned char next = p[pos + 1];
            if (next != 0x00 && next != 0xFF && (next < 0xD0 || next > 0xD7)) break;
        }
        scanned = true;
    }
    return 0;
}

}  // namespace ferry::ops::codec
