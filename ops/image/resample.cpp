// SPDX-License-Identifier: Apache-2.0
/// \file
/// `interpolation::antialias`: Pillow's bilinear resample, step for step (Pillow's
/// libImaging/Resample.c: precompute_coeffs, normalize_coeffs_8bpc, ImagingResampleInner), so
/// that the pixels are Pillow's. Two separable passes over 8-bit pixels with precomputed
/// fixed-point coefficients; on x86-64 the inner loops are SSE2 and give exactly the integers
/// of the scalar loops (the scalar loops do gray images, tails, and other CPUs).
#include "resample.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define FERRY_RESAMPLE_SSE2 1
#endif

namespace ferry::ops {
namespace {

/// Pillow's PRECISION_BITS: coefficients are fractions of 2^22, so that 255 x the sum of a
/// row's coefficients, plus the rounding term, stays below 2^31.
constexpr int precision_bits = 32 - 8 - 2;
constexpr std::int32_t half = 1 << (precision_bits - 1);

/// Pillow's clip8: the fixed-point sum back to a level, clamped to 0..255.
std::uint8_t clip8(std::int32_t sum) {
    return static_cast<std::uint8_t>(std::clamp(sum >> precision_bits, 0, 255));
}

/// The filter along one axis: output pixel `i` is the sum over `t < count[i]` of source pixel
/// `first[i] + t` times `k[i * taps + t]` (a fraction of 2^22). `taps` is even, the entries past
/// `count[i]` are zero, so that the SSE2 loops can take taps in pairs.
struct axis_filter {
    int taps = 0;
    std::vector<int> first;
    std::vector<int> count;
    std::vector<std::int32_t> k;
};

/// Pillow's precompute_coeffs with the bilinear (triangle) filter and normalize_coeffs_8bpc:
/// the support is 1 source pixel, times the downscale factor when shrinking, so every source
/// pixel under an output pixel counts; each output's weights are normalised to sum to 1 before
/// they are rounded to 22 bits. `in0`, `in1` are floats as in Pillow, where `in1 - in0` is a
/// float subtraction.
axis_filter precompute(int in_size, float in0, float in1, int out_size) {
    const double scale = static_cast<double>(in1 - in0) / out_size;
    const double filterscale = std::max(scale, 1.0);
    const double support = filterscale;  // the triangle's support (1) times the scale
    const int ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
    axis_filter f;
    f.taps = ksize + 1;  // even: see axis_filter
    f.first.resize(static_cast<std::size_t>(out_size));
    f.count.resize(static_cast<std::size_t>(out_size));
    f.k.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(f.taps), 0);
    std::vector<double> w(static_cast<std::size_t>(ksize));
    const double ss = 1.0 / filterscale;
    for (int xx = 0; xx < out_size; ++xx) {
        const double center = in0 + (xx + 0.5) * scale;
        // Pillow's rounding: a cast to int (toward zero), then the clamp.
        const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
        const int n = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
        double ww = 0.0;
        for (int x = 0; x < n; ++x) {
            const double d = std::abs((x + xmin - center + 0.5) * ss);
            const double v = d < 1.0 ? 1.0 - d : 0.0;
            w[static_cast<std::size_t>(x)] = v;
            ww += v;
        }
        std::int32_t* k = &f.k[static_cast<std::size_t>(xx) * static_cast<std::size_t>(f.taps)];
        for (int x = 0; x < n; ++x) {
            double v = w[static_cast<std::size_t>(x)];
            if (ww != 0.0) v /= ww;
            // The triangle is never negative, so Pillow's rounding is +0.5 and a cast.
            k[x] = static_cast<std::int32_t>(0.5 + v * (1 << precision_bits));
        }
        f.first[static_cast<std::size_t>(xx)] = xmin;
        f.count[static_cast<std::size_t>(xx)] = std::max(n, 0);
    }
    return f;
}

/// Rows of 8-bit pixels: `at(y)` is row y.
struct rows {
    const std::uint8_t* data;
    std::size_t stride;
    const std::uint8_t* at(int y) const { return data + static_cast<std::size_t>(y) * stride; }
};

struct out_rows {
    std::uint8_t* data;
    std::size_t stride;
    std::uint8_t* at(int y) const { return data + static_cast<std::size_t>(y) * stride; }
};

/// One row of the horizontal pass, any channel count: Pillow's ImagingResampleHorizontal_8bpc.
void horizontal_row_scalar(const std::uint8_t* in, std::uint8_t* out, int out_width, int channels,
                           const axis_filter& f, int from = 0) {
    for (int xx = from; xx < out_width; ++xx) {
        const std::int32_t* k =
            &f.k[static_cast<std::size_t>(xx) * static_cast<std::size_t>(f.taps)];
        const std::uint8_t* p =
            in + static_cast<std::size_t>(f.first[static_cast<std::size_t>(xx)]) *
                     static_cast<std::size_t>(channels);
        const int n = f.count[static_cast<std::size_t>(xx)];
        for (int c = 0; c < channels; ++c) {
            std::int32_t sum = half;
            for (int t = 0; t < n; ++t) sum += p[t * channels + c] * k[t];
            out[xx * channels + c] = clip8(sum);
        }
    }
}

/// One row of the vertical pass over `bytes` bytes, from byte `from`: Pillow's
/// ImagingResampleVertical_8bpc (each byte of the row is a sample, whatever the channel).
void vertical_row_scalar(const rows& in, std::uint8_t* out, std::size_t bytes,
                         const std::int32_t* k, int first, int n, std::size_t from = 0) {
    for (std::size_t i = from; i < bytes; ++i) {
        std::int32_t sum = half;
        for (int t = 0; t < n; ++t) sum += in.at(first + t)[i] * k[t];
        out[i] = clip8(sum);
    }
}

#ifdef FERRY_RESAMPLE_SSE2

// SSE2 has no 32-bit multiply, but _mm_madd_epi16 multiplies int16 pairs and adds each pair into
// an int32: two taps at once. A 22-bit coefficient does not fit in int16, so it is split,
// k = hi * 2^15 + lo with lo < 2^15 and hi <= 128, and the two partial sums are recombined
// exactly: (sum_hi << 15) + sum_lo is the scalar sum, and neither part can overflow, since each
// is at most 255 x the coefficients' total, 2^22. Same integers, so the same pixels.

/// The coefficients of taps t and t + 1 as int16 pairs for _mm_madd_epi16: {hi, lo}.
struct tap_pair {
    __m128i hi;
    __m128i lo;
};

tap_pair pair_of(std::int32_t k0, std::int32_t k1) {
    const auto pack = [](std::int32_t a, std::int32_t b) {
        return _mm_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(a) |
                                               (static_cast<std::uint32_t>(b) << 16)));
    };
    return {pack(k0 >> 15, k1 >> 15), pack(k0 & 0x7fff, k1 & 0x7fff)};
}

/// (hi << 15) + lo + rounding, shifted down to levels (int32; the packs clamp to 0..255).
__m128i levels(__m128i hi, __m128i lo) {
    const __m128i sum =
        _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(hi, 15), lo), _mm_set1_epi32(half));
    return _mm_srai_epi32(sum, precision_bits);
}

std::uint32_t load4(const std::uint8_t* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

/// The horizontal pass of one row of 3- or 4-channel pixels: the channels of a pixel are the
/// lanes. A pixel is read as 4 bytes (for RGB, one past it), and taps come in pairs (the second
/// of an odd count has weight zero), so reads reach `(in_width + 1) * channels + 1` bytes past
/// `in`: the caller pads the last rows. Writes 4 bytes per pixel but the last.
void horizontal_row_sse2(const std::uint8_t* in, std::uint8_t* out, int out_width, int channels,
                         const axis_filter& f) {
    const __m128i zero = _mm_setzero_si128();
    const auto c = static_cast<std::size_t>(channels);
    for (int xx = 0; xx < out_width; ++xx) {
        const std::int32_t* k =
            &f.k[static_cast<std::size_t>(xx) * static_cast<std::size_t>(f.taps)];
        const std::uint8_t* p =
            in + static_cast<std::size_t>(f.first[static_cast<std::size_t>(xx)]) * c;
        const int n = f.count[static_cast<std::size_t>(xx)];
        __m128i hi = zero;
        __m128i lo = zero;
        for (int t = 0; t < n; t += 2, p += 2 * c) {
            const tap_pair kk = pair_of(k[t], k[t + 1]);
            const __m128i a = _mm_cvtsi32_si128(static_cast<int>(load4(p)));
            const __m128i b = _mm_cvtsi32_si128(static_cast<int>(load4(p + c)));
            // {a0, b0, a1, b1, a2, b2, a3, b3} as int16: channel by channel, the two taps.
            const __m128i ab = _mm_unpacklo_epi8(_mm_unpacklo_epi8(a, b), zero);
            hi = _mm_add_epi32(hi, _mm_madd_epi16(ab, kk.hi));
            lo = _mm_add_epi32(lo, _mm_madd_epi16(ab, kk.lo));
        }
        const __m128i v = levels(hi, lo);
        const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(v, v), zero);
        const auto px = static_cast<std::uint32_t>(_mm_cvtsi128_si32(bytes));
        std::uint8_t* o = out + static_cast<std::size_t>(xx) * c;
        if (xx + 1 < out_width) {
            std::memcpy(o, &px, 4);
        } else {
            std::memcpy(o, &px, c);
        }
    }
}

/// The vertical pass of one output row, 16 bytes at a time (any channel count: every byte is a
/// sample); a tail shorter than 16 is redone from `bytes - 16` (same values) or left to the
/// scalar loop. Taps come in pairs; an odd last tap is paired with itself at weight zero.
void vertical_row_sse2(const rows& in, std::uint8_t* out, std::size_t bytes, const std::int32_t* k,
                       int first, int n) {
    if (bytes < 16) {
        vertical_row_scalar(in, out, bytes, k, first, n);
        return;
    }
    const __m128i zero = _mm_setzero_si128();
    for (std::size_t i = 0; i < bytes; i += 16) {
        if (i + 16 > bytes) i = bytes - 16;
        __m128i hi[4] = {zero, zero, zero, zero};
        __m128i lo[4] = {zero, zero, zero, zero};
        for (int t = 0; t < n; t += 2) {
            const bool pair = t + 1 < n;
            const tap_pair kk = pair_of(k[t], pair ? k[t + 1] : 0);
            const __m128i a =
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.at(first + t) + i));
            const __m128i b =
                pair ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.at(first + t + 1) + i))
                     : a;
            const __m128i ab_lo = _mm_unpacklo_epi8(a, b);
            const __m128i ab_hi = _mm_unpackhi_epi8(a, b);
            const __m128i w[4] = {_mm_unpacklo_epi8(ab_lo, zero), _mm_unpackhi_epi8(ab_lo, zero),
                                  _mm_unpacklo_epi8(ab_hi, zero), _mm_unpackhi_epi8(ab_hi, zero)};
            for (int j = 0; j < 4; ++j) {
                hi[j] = _mm_add_epi32(hi[j], _mm_madd_epi16(w[j], kk.hi));
                lo[j] = _mm_add_epi32(lo[j], _mm_madd_epi16(w[j], kk.lo));
            }
        }
        const __m128i low8 = _mm_packs_epi32(levels(hi[0], lo[0]), levels(hi[1], lo[1]));
        const __m128i high8 = _mm_packs_epi32(levels(hi[2], lo[2]), levels(hi[3], lo[3]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(low8, high8));
    }
}

#endif

/// The horizontal pass: source rows `y0 .. y0 + count` to rows `0 .. count` of `out`.
void horizontal_pass(const image& src, int y0, int count, const out_rows& out, int out_width,
                     const axis_filter& f) {
    const int channels = src.channels();
    const rows in{src.data().data(), src.row_bytes()};
#ifdef FERRY_RESAMPLE_SSE2
    if (channels == 3 || channels == 4) {
        // How far past a row's start horizontal_row_sse2 reads; the last rows, where that would
        // leave the image's buffer, are read from a padded copy.
        const std::size_t reach =
            (static_cast<std::size_t>(src.width()) + 1) * static_cast<std::size_t>(channels) + 1;
        std::vector<std::uint8_t> padded;
        for (int y = 0; y < count; ++y) {
            const std::uint8_t* row = in.at(y0 + y);
            if (static_cast<std::size_t>(src.height() - y0 - y) * in.stride < reach) {
                padded.assign(reach, 0);
                std::memcpy(padded.data(), row, src.row_bytes());
                row = padded.data();
            }
            horizontal_row_sse2(row, out.at(y), out_width, channels, f);
        }
        return;
    }
#endif
    for (int y = 0; y < count; ++y) {
        horizontal_row_scalar(in.at(y0 + y), out.at(y), out_width, channels, f);
    }
}

/// The vertical pass: `out`'s rows (`bytes` each) from the rows of `in`, whose row 0 is source
/// row `shift`.
void vertical_pass(const rows& in, int shift, const out_rows& out, int out_height,
                   std::size_t bytes, const axis_filter& f) {
    for (int yy = 0; yy < out_height; ++yy) {
        const std::int32_t* k =
            &f.k[static_cast<std::size_t>(yy) * static_cast<std::size_t>(f.taps)];
        const int first = f.first[static_cast<std::size_t>(yy)] - shift;
        const int n = f.count[static_cast<std::size_t>(yy)];
#ifdef FERRY_RESAMPLE_SSE2
        vertical_row_sse2(in, out.at(yy), bytes, k, first, n);
#else
        vertical_row_scalar(in, out.at(yy), bytes, k, first, n);
#endif
    }
}

/// Whether an axis is an identity: a whole-pixel offset and as many pixels out as in (Pillow
/// runs such a pass too, and it copies: weights 1 and 0).
bool identity(float from, float to, int out_size) {
    return from == std::floor(from) && to - from == static_cast<float>(out_size);
}

}  // namespace

image resample_antialias(const image& src, const resample_region& region, int width, int height) {
    const int channels = src.channels();
    const std::size_t out_bytes =
        static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
    image out(width, height, src.format());
    const out_rows dst{out.data().data(), out.row_bytes()};
    const bool need_horizontal = !identity(region.x0, region.x1, width);
    const bool need_vertical = !identity(region.y0, region.y1, height);
    const auto x0 = static_cast<std::size_t>(region.x0) * static_cast<std::size_t>(channels);
    const auto y0 = static_cast<int>(region.y0);
    if (!need_horizontal && !need_vertical) {
        for (int y = 0; y < height; ++y)
            std::memcpy(dst.at(y), src.row(y0 + y).data() + x0, out_bytes);
        return out;
    }
    if (!need_vertical) {
        horizontal_pass(src, y0, height, dst, width,
                        precompute(src.width(), region.x0, region.x1, width));
        return out;
    }
    const axis_filter fy = precompute(src.height(), region.y0, region.y1, height);
    if (!need_horizontal) {
        vertical_pass({src.data().data() + x0, src.row_bytes()}, 0, dst, height, out_bytes, fy);
        return out;
    }
    // Horizontally, only the source rows the vertical pass reads.
    const int first = fy.first.front();
    const int last = fy.first.back() + fy.count.back();
    const auto tmp = std::make_unique_for_overwrite<std::uint8_t[]>(
        out_bytes * static_cast<std::size_t>(std::max(last - first, 0)));
    horizontal_pass(src, first, last - first, {tmp.get(), out_bytes}, width,
                    precompute(src.width(), region.x0, region.x1, width));
    vertical_pass({tmp.get(), out_bytes}, first, dst, height, out_bytes, fy);
    return out;
}

}  // namespace ferry::ops
