// SPDX-License-Identifier: Apache-2.0
/// \file
/// `interpolation::antialias`: Pillow's bilinear resample, step for step (Pillow's
/// libImaging/Resample.c: precompute_coeffs, normalize_coeffs_8bpc, ImagingResampleInner), so
/// that the pixels are Pillow's. Two separable passes over 8-bit pixels with precomputed
/// fixed-point coefficients. On x86-64 the vertical pass is SSE2 and the horizontal pass of
/// 3- and 4-channel images SSSE3 (where the CPU has it), with exactly the integers of the scalar
/// loops, which do the rest (gray images, short rows, other CPUs).
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
#if defined(__GNUC__)
#include <immintrin.h>
// SSSE3 and AVX2 by function attribute, chosen at run time: the library is built for baseline
// x86-64.
#define FERRY_RESAMPLE_SSSE3 1
#endif
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
/// `first[i] + t` times `k[i * taps + t]` (a fraction of 2^22). `taps` is even and above every
/// count (at most ksize), the entries past `count[i]` are zero: the SIMD loops take taps in
/// pairs and fours, the last of which may lie past the count.
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
    f.taps = ksize + 1;  // see axis_filter
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
                           const axis_filter& f) {
    for (int xx = 0; xx < out_width; ++xx) {
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

/// One row of the vertical pass over `bytes` bytes: Pillow's
/// ImagingResampleVertical_8bpc (each byte of the row is a sample, whatever the channel).
void vertical_row_scalar(const rows& in, std::uint8_t* out, std::size_t bytes,
                         const std::int32_t* k, int first, int n) {
    for (std::size_t i = 0; i < bytes; ++i) {
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

/// An axis_filter's coefficients as the SIMD loops read them, the tap_pairs of each output
/// pixel, those of pixels 2m and 2m + 1 interleaved so that one 256-bit load takes both:
/// for pixel pair m and tap pair j, {hi of 2m, hi of 2m + 1, lo of 2m, lo of 2m + 1}.
struct pair_table {
    struct lane {
        __m128i v;
    };
    std::size_t pairs;
    std::vector<lane> k;
    explicit pair_table(const axis_filter& f)
        : pairs(static_cast<std::size_t>(f.taps) / 2),
          k((f.first.size() + 1) / 2 * 2 * pairs * 2, lane{_mm_setzero_si128()}) {
        const std::size_t taps = static_cast<std::size_t>(f.taps);
        for (std::size_t i = 0; i < f.first.size(); ++i) {
            lane* to = at(i);
            for (std::size_t j = 0; j < pairs; ++j) {
                const tap_pair kk = pair_of(f.k[i * taps + 2 * j], f.k[i * taps + 2 * j + 1]);
                to[4 * j].v = kk.hi;
                to[4 * j + 2].v = kk.lo;
            }
        }
    }
    /// Pixel i's hi of tap pair j at [4 j], its lo at [4 j + 2].
    lane* at(std::size_t i) { return &k[(i / 2 * pairs) * 4 + i % 2]; }
    const lane* at(std::size_t i) const { return &k[(i / 2 * pairs) * 4 + i % 2]; }
};

#ifdef FERRY_RESAMPLE_SSSE3

/// Stores the 3 or 4 levels of `bytes`' low lanes as output pixel `xx` of `out`: 4 bytes but for
/// the row's last pixel (for RGB the fourth byte is the next pixel's, written after).
void store_pixel(__m128i bytes, std::uint8_t* out, int xx, int out_width, std::size_t c) {
    const auto px = static_cast<std::uint32_t>(_mm_cvtsi128_si32(bytes));
    std::memcpy(out + static_cast<std::size_t>(xx) * c, &px, xx + 1 < out_width ? 4 : c);
}

/// How far past a row's start the horizontal SIMD loops read: a pixel's taps are taken four at
/// a time from 16-byte loads, up to its partner's count where two pixels go together (AVX2).
/// The extra pixels carry weight zero; rows closer than this to the end of the image's buffer
/// are read from a padded copy.
std::size_t horizontal_reach(const axis_filter& f, std::size_t channels) {
    std::size_t reach = 0;
    for (std::size_t i = 0; i < f.first.size(); ++i) {
        const std::size_t partner = std::min(i ^ 1U, f.first.size() - 1);
        const auto n = static_cast<std::size_t>(std::max(f.count[i], f.count[partner]));
        reach = std::max(reach, static_cast<std::size_t>(f.first[i]) + (n + 3) / 4 * 4);
    }
    return reach * channels + 16;
}

/// Byte shuffles that turn pixels (0, 1) and (2, 3) of 16 bytes into int16
/// {p0.c0, p1.c0, p0.c1, p1.c1, ...}: the pair layout of _mm_madd_epi16. -1 makes a zero.
__m128i first_two_of(std::size_t c) {
    return c == 3 ? _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1)
                  : _mm_setr_epi8(0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1);
}
__m128i next_two_of(std::size_t c) {
    return c == 3 ? _mm_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1)
                  : _mm_setr_epi8(8, -1, 12, -1, 9, -1, 13, -1, 10, -1, 14, -1, 11, -1, 15, -1);
}

/// The horizontal pass of one row of 3- or 4-channel pixels, from output pixel `from`: the
/// channels of a pixel are the lanes. SSSE3's byte shuffle brings the pixels of two taps side by
/// side as int16 (one 16-byte load and two shuffles for four taps), _mm_madd_epi16 takes them
/// with their coefficients.
__attribute__((target("ssse3"))) void horizontal_row_ssse3(const std::uint8_t* in,
                                                           std::uint8_t* out, int out_width,
                                                           int channels, const axis_filter& f,
                                                           const pair_table& pairs, int from) {
    const auto c = static_cast<std::size_t>(channels);
    const __m128i first_two = first_two_of(c);
    const __m128i next_two = next_two_of(c);
    for (int xx = from; xx < out_width; ++xx) {
        const pair_table::lane* kk = pairs.at(static_cast<std::size_t>(xx));
        const std::uint8_t* p =
            in + static_cast<std::size_t>(f.first[static_cast<std::size_t>(xx)]) * c;
        const int n = f.count[static_cast<std::size_t>(xx)];
        __m128i hi = _mm_setzero_si128();
        __m128i lo = _mm_setzero_si128();
        int t = 0;
        // Four taps while three or more are left (a fourth past the count has weight zero).
        for (; t + 2 < n; t += 4, p += 4 * c, kk += 8) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
            const __m128i a = _mm_shuffle_epi8(v, first_two);
            const __m128i b = _mm_shuffle_epi8(v, next_two);
            hi = _mm_add_epi32(hi, _mm_madd_epi16(a, kk[0].v));
            lo = _mm_add_epi32(lo, _mm_madd_epi16(a, kk[2].v));
            hi = _mm_add_epi32(hi, _mm_madd_epi16(b, kk[4].v));
            lo = _mm_add_epi32(lo, _mm_madd_epi16(b, kk[6].v));
        }
        if (t < n) {
            const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
            const __m128i a = _mm_shuffle_epi8(v, first_two);
            hi = _mm_add_epi32(hi, _mm_madd_epi16(a, kk[0].v));
            lo = _mm_add_epi32(lo, _mm_madd_epi16(a, kk[2].v));
        }
        const __m128i v = levels(hi, lo);
        store_pixel(_mm_packus_epi16(_mm_packs_epi32(v, v), v), out, xx, out_width, c);
    }
}

/// 16 bytes from `a` in the low lane, 16 from `b` in the high one.
__attribute__((target("avx2"))) __m256i load2(const std::uint8_t* a, const std::uint8_t* b) {
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
}

/// horizontal_row_ssse3 for two output pixels at once, one per 128-bit lane; returns where it
/// stopped (an odd last pixel is left to horizontal_row_ssse3).
__attribute__((target("avx2"))) int horizontal_row_avx2(const std::uint8_t* in, std::uint8_t* out,
                                                        int out_width, int channels,
                                                        const axis_filter& f,
                                                        const pair_table& pairs) {
    const auto c = static_cast<std::size_t>(channels);
    const __m256i first_two = _mm256_broadcastsi128_si256(first_two_of(c));
    const __m256i next_two = _mm256_broadcastsi128_si256(next_two_of(c));
    const __m256i round = _mm256_set1_epi32(half);
    int xx = 0;
    for (; xx + 1 < out_width; xx += 2) {
        const auto i = static_cast<std::size_t>(xx);
        const auto* kk = reinterpret_cast<const __m256i*>(pairs.at(i));
        const std::uint8_t* p0 = in + static_cast<std::size_t>(f.first[i]) * c;
        const std::uint8_t* p1 = in + static_cast<std::size_t>(f.first[i + 1]) * c;
        // The longer count of the two: the other pixel's extra taps have weight zero.
        const int n = std::max(f.count[i], f.count[i + 1]);
        __m256i hi = _mm256_setzero_si256();
        __m256i lo = _mm256_setzero_si256();
        int t = 0;
        for (; t + 2 < n; t += 4, p0 += 4 * c, p1 += 4 * c, kk += 4) {
            const __m256i v = load2(p0, p1);
            const __m256i a = _mm256_shuffle_epi8(v, first_two);
            const __m256i b = _mm256_shuffle_epi8(v, next_two);
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(a, _mm256_loadu_si256(kk)));
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(a, _mm256_loadu_si256(kk + 1)));
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(b, _mm256_loadu_si256(kk + 2)));
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(b, _mm256_loadu_si256(kk + 3)));
        }
        if (t < n) {
            const __m256i v = load2(p0, p1);
            const __m256i a = _mm256_shuffle_epi8(v, first_two);
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(a, _mm256_loadu_si256(kk)));
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(a, _mm256_loadu_si256(kk + 1)));
        }
        const __m256i sum = _mm256_srai_epi32(
            _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi, 15), lo), round),
            precision_bits);
        const __m256i packed = _mm256_packs_epi32(sum, sum);
        const __m256i bytes = _mm256_packus_epi16(packed, packed);
        store_pixel(_mm256_castsi256_si128(bytes), out, xx, out_width, c);
        store_pixel(_mm256_extracti128_si256(bytes, 1), out, xx + 1, out_width, c);
    }
    return xx;
}

bool has_ssse3() {
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("ssse3") != 0;
    }();
    return yes;
}

bool has_avx2() {
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    }();
    return yes;
}

#endif

/// The vertical pass of one output row from byte `from`, 16 bytes at a time (any channel count:
/// every byte is a sample); a tail shorter than 16 is redone from `bytes - 16` (same values), a
/// row shorter than 16 left to the scalar loop. Taps come in pairs; an odd last tap is paired with
/// itself at weight zero.
void vertical_row_sse2(const rows& in, std::uint8_t* out, std::size_t bytes, const std::int32_t* k,
                       const pair_table::lane* kk, int first, int n, std::size_t from) {
    if (bytes < 16) {
        vertical_row_scalar(in, out, bytes, k, first, n);
        return;
    }
    const __m128i zero = _mm_setzero_si128();
    for (std::size_t i = from; i < bytes; i += 16) {
        if (i + 16 > bytes) i = bytes - 16;
        __m128i hi[4] = {zero, zero, zero, zero};
        __m128i lo[4] = {zero, zero, zero, zero};
        for (int t = 0; t < n; t += 2) {
            const bool pair = t + 1 < n;
            const __m128i khi = kk[2 * t].v;
            const __m128i klo = kk[2 * t + 2].v;
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
                hi[j] = _mm_add_epi32(hi[j], _mm_madd_epi16(w[j], khi));
                lo[j] = _mm_add_epi32(lo[j], _mm_madd_epi16(w[j], klo));
            }
        }
        const __m128i low8 = _mm_packs_epi32(levels(hi[0], lo[0]), levels(hi[1], lo[1]));
        const __m128i high8 = _mm_packs_epi32(levels(hi[2], lo[2]), levels(hi[3], lo[3]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(low8, high8));
    }
}

#ifdef FERRY_RESAMPLE_SSSE3

/// vertical_row_sse2 on 32 bytes at a time, one 16-byte half per 128-bit lane, over the whole
/// 32-byte blocks of the row; returns where it stopped (vertical_row_sse2 does the rest).
__attribute__((target("avx2"))) std::size_t vertical_row_avx2(const rows& in, std::uint8_t* out,
                                                              std::size_t bytes,
                                                              const pair_table::lane* kk, int first,
                                                              int n) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i round = _mm256_set1_epi32(half);
    const std::size_t whole = bytes / 32 * 32;
    for (std::size_t i = 0; i < whole; i += 32) {
        __m256i hi[4] = {zero, zero, zero, zero};
        __m256i lo[4] = {zero, zero, zero, zero};
        for (int t = 0; t < n; t += 2) {
            const bool pair = t + 1 < n;
            const __m256i khi = _mm256_broadcastsi128_si256(kk[2 * t].v);
            const __m256i klo = _mm256_broadcastsi128_si256(kk[2 * t + 2].v);
            const __m256i a =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in.at(first + t) + i));
            const __m256i b =
                pair
                    ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in.at(first + t + 1) + i))
                    : a;
            // Within each lane, as in vertical_row_sse2; lane 1 holds bytes 16..31.
            const __m256i ab_lo = _mm256_unpacklo_epi8(a, b);
            const __m256i ab_hi = _mm256_unpackhi_epi8(a, b);
            const __m256i w[4] = {
                _mm256_unpacklo_epi8(ab_lo, zero), _mm256_unpackhi_epi8(ab_lo, zero),
                _mm256_unpacklo_epi8(ab_hi, zero), _mm256_unpackhi_epi8(ab_hi, zero)};
            for (int j = 0; j < 4; ++j) {
                hi[j] = _mm256_add_epi32(hi[j], _mm256_madd_epi16(w[j], khi));
                lo[j] = _mm256_add_epi32(lo[j], _mm256_madd_epi16(w[j], klo));
            }
        }
        __m256i v[4];
        for (int j = 0; j < 4; ++j) {
            v[j] = _mm256_srai_epi32(
                _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi[j], 15), lo[j]), round),
                precision_bits);
        }
        const __m256i bytes32 =
            _mm256_packus_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bytes32);
    }
    return whole;
}

#endif

#endif

/// The horizontal pass: source rows `y0 .. y0 + count` to rows `0 .. count` of `out`.
void horizontal_pass(const image& src, int y0, int count, const out_rows& out, int out_width,
                     const axis_filter& f) {
    const int channels = src.channels();
    const rows in{src.data().data(), src.row_bytes()};
#ifdef FERRY_RESAMPLE_SSSE3
    if ((channels == 3 || channels == 4) && has_ssse3()) {
        const pair_table pairs(f);
        const std::size_t reach = horizontal_reach(f, static_cast<std::size_t>(channels));
        const bool avx2 = has_avx2();
        std::vector<std::uint8_t> padded;
        for (int y = 0; y < count; ++y) {
            const std::uint8_t* row = in.at(y0 + y);
            if (static_cast<std::size_t>(src.height() - y0 - y) * in.stride < reach) {
                padded.assign(reach, 0);
                std::memcpy(padded.data(), row, src.row_bytes());
                row = padded.data();
            }
            const int from =
                avx2 ? horizontal_row_avx2(row, out.at(y), out_width, channels, f, pairs) : 0;
            horizontal_row_ssse3(row, out.at(y), out_width, channels, f, pairs, from);
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
#ifdef FERRY_RESAMPLE_SSE2
    const pair_table pairs(f);
#endif
    for (int yy = 0; yy < out_height; ++yy) {
        const auto i = static_cast<std::size_t>(yy);
        const std::int32_t* k = &f.k[i * static_cast<std::size_t>(f.taps)];
        const int first = f.first[i] - shift;
        const int n = f.count[i];
#ifdef FERRY_RESAMPLE_SSE2
        std::size_t from = 0;
#ifdef FERRY_RESAMPLE_SSSE3
        if (has_avx2()) from = vertical_row_avx2(in, out.at(yy), bytes, pairs.at(i), first, n);
#endif
        vertical_row_sse2(in, out.at(yy), bytes, k, pairs.at(i), first, n, from);
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
