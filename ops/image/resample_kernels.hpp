// SPDX-License-Identifier: Apache-2.0
/// \file
/// What resample.cpp (the filter and Pillow's scalar loops) and resample_x86.cpp (the same loops
/// in SSE2, SSSE3 and AVX2) share: the fixed-point format, a filter along one axis, rows of
/// pixels, and the SIMD passes. Internal to ops/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
// SIMD loops for x86-64: SSE2 always, SSSE3 and AVX2 by function attribute where the CPU has
// them (the library is built for baseline x86-64).
#define FERRY_RESAMPLE_X86 1
#endif

namespace ferry::ops::resample_detail {

/// Pillow's PRECISION_BITS: coefficients are fractions of 2^22, so that 255 x the sum of a
/// row's coefficients, plus the rounding term, stays below 2^31.
inline constexpr int precision_bits = 32 - 8 - 2;
inline constexpr std::int32_t half = 1 << (precision_bits - 1);

/// The filter along one axis: output pixel `i` is the sum over `t < count[i]` of source pixel
/// `first[i] + t` times `k[i * taps + t]` (a fraction of 2^22). `taps` is even and above every
/// count (at most ksize), the entries past `count[i]` are zero: the SIMD loops take taps in
/// pairs and fours, the last of which may lie past the count.
struct axis_filter {
    int taps = 0;
    std::vector<int> first;
    std::vector<int> count;
    std::vector<std::int32_t> k;
};

/// Rows of 8-bit pixels: `at(y)` is row y.
struct rows {
    const std::uint8_t* data;
    std::size_t stride;
    const std::uint8_t* at(int y) const { return data + static_cast<std::size_t>(y) * stride; }
};

/// The pixels a resample reads: `width x height` pixels of `channels` bytes from `data`, rows
/// `stride` bytes apart, inside an image whose buffer ends at `end` (the SIMD loops read a little
/// past a row, and copy the rows where that would leave the buffer).
struct source {
    const std::uint8_t* data;
    std::size_t stride;
    int width;
    int height;
    int channels;
    const std::uint8_t* end;
    const std::uint8_t* row(int y) const { return data + static_cast<std::size_t>(y) * stride; }
};

struct out_rows {
    std::uint8_t* data;
    std::size_t stride;
    std::uint8_t* at(int y) const { return data + static_cast<std::size_t>(y) * stride; }
};

#ifdef FERRY_RESAMPLE_X86
/// The horizontal pass, rows `y0 .. y0 + count` of `src` to rows `0 .. count` of `out`,
/// in SIMD where it applies (3 or 4 channels, a CPU with SSSE3): false, and nothing done,
/// elsewhere.
bool horizontal_pass_x86(const source& src, int y0, int count, const out_rows& out, int out_width,
                         const axis_filter& f);
/// The vertical pass, `out`'s rows (`bytes` each) from the rows of `in`, whose row 0 is source
/// row `shift`, in SIMD where it applies (rows of 16 bytes or more): false, and nothing done,
/// elsewhere.
bool vertical_pass_x86(const rows& in, int shift, const out_rows& out, int out_height,
                       std::size_t bytes, const axis_filter& f);
#endif

}  // namespace ferry::ops::resample_detail
