// SPDX-License-Identifier: Apache-2.0
/// \file
/// Byte-level writes for the image tests that assemble or edit encoded files by hand: big- and
/// little-endian integers at an offset, and PNG's CRC-32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../support/ops_support.hpp"

namespace ops_test {

inline void put_be16(file_bytes& out, std::size_t at, std::uint32_t v) {
    out[at] = static_cast<std::uint8_t>(v >> 8);
    out[at + 1] = static_cast<std::uint8_t>(v);
}

inline void put_le32(file_bytes& out, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

/// CRC-32 as PNG chunks carry it (ISO 3309, reflected).
inline std::uint32_t crc32(const std::uint8_t* p, std::size_t n) {
    std::uint32_t c = 0xFFFFFFFFU;
    for (std::size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320U & (0U - (c & 1U)));
    }
    return c ^ 0xFFFFFFFFU;
}

}  // namespace ops_test
