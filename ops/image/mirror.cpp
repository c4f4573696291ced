// SPDX-License-Identifier: Apache-2.0
/// \file
/// Mirrored rows (mirror.hpp). OpenCV's cv::flip moves a 3-byte pixel at a time (~40 µs for a
/// 224x224 RGB image on the development VM); here a 16-byte shuffle reverses four RGB pixels,
/// or four RGBA pixels, or sixteen gray ones at once.
#include "mirror.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "x86_cpu.hpp"
#define FERRY_MIRROR_X86 1
#endif

namespace ferry::ops {
namespace {

#ifdef FERRY_MIRROR_X86
using x86::has_ssse3;
#endif

/// Pixels [from, to) of the mirrored row, one at a time.
void mirror_pixels(const std::uint8_t* src, std::uint8_t* dst, int width, int channels, int from,
                   int to) {
    const auto c = static_cast<std::size_t>(channels);
    for (int x = from; x < to; ++x) {
        std::memcpy(dst + static_cast<std::size_t>(x) * c,
                    src + static_cast<std::size_t>(width - 1 - x) * c, c);
    }
}

#ifdef FERRY_MIRROR_X86
/// An RGB row: output pixels 4k .. 4k + 3 are source pixels w - 4k - 4 .. w - 4k - 1 reversed.
/// Each block loads and stores 16 bytes for its 12; the 4 extra bytes read lie inside the row
/// (the block to the right of it), and the 4 extra written are the next output pixels, which the
/// next block (or the scalar tail) writes afterwards. So the first block, whose load would leave
/// the row, and the last ones, whose store would, are done one pixel at a time.
__attribute__((target("ssse3"))) void mirror_rgb_row(const std::uint8_t* src, std::uint8_t* dst,
                                                     int width) {
    const __m128i reverse4 = _mm_setr_epi8(9, 10, 11, 6, 7, 8, 3, 4, 5, 0, 1, 2, 12, 13, 14, 15);
    const int head = std::min(width, 4);
    mirror_pixels(src, dst, width, 3, 0, head);
    int k = 1;
    // Output bytes 12k .. 12k + 16 must lie in the row; source pixel w - 4k - 4 must exist.
    for (; 4 * k + 4 <= width && 12 * k + 16 <= 3 * width; ++k) {
        const auto* in = src + static_cast<std::size_t>(width - 4 * k - 4) * 3;
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + static_cast<std::size_t>(12 * k)),
                         _mm_shuffle_epi8(v, reverse4));
    }
    mirror_pixels(src, dst, width, 3, std::max(head, 4 * k), width);
}

/// A gray row: output pixels 16k .. 16k + 15 are source pixels w - 16k - 16 .. w - 16k - 1
/// reversed.
__attribute__((target("ssse3"))) void mirror_gray_row(const std::uint8_t* src, std::uint8_t* dst,
                                                      int width) {
    const __m128i reverse16 = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    int x = 0;
    for (; x + 16 <= width; x += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + width - x - 16));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + x), _mm_shuffle_epi8(v, reverse16));
    }
    mirror_pixels(src, dst, width, 1, x, width);
}
#endif

/// An RGBA row, four pixels a block (SSE2, which every x86-64 has).
void mirror_rgba_row(const std::uint8_t* src, std::uint8_t* dst, int width) {
    int x = 0;
#ifdef FERRY_MIRROR_X86
    for (; x + 4 <= width; x += 4) {
        const __m128i v = _mm_loadu_si128(
            reinterpret_cast<const __m128i*>(src + static_cast<std::size_t>(width - x - 4) * 4));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + static_cast<std::size_t>(x) * 4),
                         _mm_shuffle_epi32(v, _MM_SHUFFLE(0, 1, 2, 3)));
    }
#endif
    mirror_pixels(src, dst, width, 4, x, width);
}

void mirror_row(const std::uint8_t* src, std::uint8_t* dst, int width, int channels) {
#ifdef FERRY_MIRROR_X86
    if (channels == 3 && has_ssse3()) return mirror_rgb_row(src, dst, width);
    if (channels == 1 && has_ssse3()) return mirror_gray_row(src, dst, width);
#endif
    if (channels == 4) return mirror_rgba_row(src, dst, width);
    mirror_pixels(src, dst, width, channels, 0, width);
}

}  // namespace

void mirror_rows(const std::uint8_t* src, std::size_t src_stride, std::uint8_t* dst,
                 std::size_t dst_stride, int width, int height, int channels) {
    for (int y = 0; y < height; ++y) {
        mirror_row(src + static_cast<std::size_t>(y) * src_stride,
                   dst + static_cast<std::size_t>(y) * dst_stride, width, channels);
    }
}

void mirror_rows_in_place(std::uint8_t* data, std::size_t stride, int width, int height,
                          int channels) {
    const std::size_t row_bytes =
        static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
    std::vector<std::uint8_t> row(row_bytes);
    for (int y = 0; y < height; ++y) {
        std::uint8_t* r = data + static_cast<std::size_t>(y) * stride;
        std::memcpy(row.data(), r, row_bytes);
        mirror_row(row.data(), r, width, channels);
    }
}

}  // namespace ferry::ops
