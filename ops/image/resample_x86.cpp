// SPDX-License-Identifier: Apache-2.0
/// \file
/// resample.cpp's two passes in x86 SIMD, with exactly the integers of its scalar loops: the
/// vertical pass in SSE2 (AVX2 where the CPU has it), the horizontal pass of 3- and 4-channel
/// rows in SSSE3 (AVX2: two output pixels at once), chosen at run time.
#include "resample_kernels.hpp"

#ifdef FERRY_RESAMPLE_X86

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "x86_cpu.hpp"

namespace ferry::ops::resample_detail {
namespace {

using x86::has_avx2;
using x86::has_ssse3;

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

/// Stores the 3 or 4 levels of `bytes`' low lanes as output pixel `xx` of `out`: 4 bytes but for
/// the row's last pixel (for RGB the fourth byte is the next pixel's, written after).
void store_pixel(__m128i bytes, std::uint8_t* out, int xx, int out_width, std::size_t c) {
    const auto px = static_cast<std::uint32_t>(_mm_cvtsi128_si32(bytes));
    std::uint8_t* to = out + static_cast<std::size_t>(xx) * c;
    // Constant sizes: a variable one would be a call to memcpy per pixel.
    if (xx + 1 < out_width || c == 4) {
        std::memcpy(to, &px, 4);
    } else {
        std::memcpy(to, &px, 3);
    }
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

/// The vertical pass of one output row from byte `from`, 16 bytes at a time (any channel count:
/// every byte is a sample); a tail shorter than 16 is redone from `bytes - 16` (same values), so
/// rows need 16 bytes. Taps come in pairs; an odd last tap is paired with
/// itself at weight zero.
void vertical_row_sse2(const rows& in, std::uint8_t* out, std::size_t bytes,
                       const pair_table::lane* kk, int first, int n, std::size_t from) {
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

}  // namespace

bool horizontal_pass_x86(const source& src, int y0, int count, const out_rows& out, int out_width,
                         const axis_filter& f) {
    const int channels = src.channels;
    if ((channels != 3 && channels != 4) || !has_ssse3()) return false;
    const pair_table pairs(f);
    const std::size_t reach = horizontal_reach(f, static_cast<std::size_t>(channels));
    const auto row_bytes = static_cast<std::size_t>(src.width) * static_cast<std::size_t>(channels);
    const bool avx2 = has_avx2();
    std::vector<std::uint8_t> padded;
    for (int y = 0; y < count; ++y) {
        const std::uint8_t* row = src.row(y0 + y);
        if (static_cast<std::size_t>(src.end - row) < reach) {
            padded.assign(reach, 0);
            std::memcpy(padded.data(), row, row_bytes);
            row = padded.data();
        }
        const int from =
            avx2 ? horizontal_row_avx2(row, out.at(y), out_width, channels, f, pairs) : 0;
        horizontal_row_ssse3(row, out.at(y), out_width, channels, f, pairs, from);
    }
    return true;
}

bool vertical_pass_x86(const rows& in, int shift, const out_rows& out, int out_height,
                       std::size_t bytes, const axis_filter& f) {
    if (bytes < 16) return false;
    const pair_table pairs(f);
    const bool avx2 = has_avx2();
    for (int yy = 0; yy < out_height; ++yy) {
        const auto i = static_cast<std::size_t>(yy);
        const int first = f.first[i] - shift;
        const std::size_t from =
            avx2 ? vertical_row_avx2(in, out.at(yy), bytes, pairs.at(i), first, f.count[i]) : 0;
        vertical_row_sse2(in, out.at(yy), bytes, pairs.at(i), first, f.count[i], from);
    }
    return true;
}

}  // namespace ferry::ops::resample_detail

#endif
