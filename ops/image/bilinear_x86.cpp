// SPDX-License-Identifier: Apache-2.0
/// \file
/// The bilinear resize of 3-channel rows in AVX2 (see bilinear.hpp), chosen at run time.
///
/// Two passes. Horizontal: each source row a vertical tap needs becomes a row of int16 values
/// (levels x 2^7). Output values go in groups of four; a group's eight source bytes (left and
/// right neighbour of each value) lie within 16 bytes of the row for reductions under about 3x,
/// so one unaligned load, one byte shuffle (the bytes as int16 pairs) and one multiply-add of
/// int16 weight pairs (fractions of 2^14) make four values; AVX2 does two groups per
/// instruction. Vertical: the two rows of int16 values are blended with a weight (a fraction
/// of 2^15, _mm256_mulhrs_epi16) and rounded to levels. The scalar tails make the same integers.
#include "bilinear.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#define FERRY_BILINEAR_X86 1
#include <immintrin.h>

#include "x86_cpu.hpp"
#endif

namespace ferry::ops::bilinear_detail {

#ifdef FERRY_BILINEAR_X86
namespace {

constexpr int h_bits = 14;   ///< horizontal weights: fractions of 2^14
constexpr int v_bits = 15;   ///< vertical weights: fractions of 2^15 (mulhrs)
constexpr int mid_bits = 7;  ///< the int16 values between the passes: levels x 2^7

/// One output position along an axis: source neighbours `lo` and `hi` (equal at the edges),
/// and the weight of `hi`.
struct tap {
    int lo = 0;
    int hi = 0;
    int w = 0;
};

/// OpenCV's INTER_LINEAR geometry (resize.cpp): the source coordinate of output `i` is
/// (i + 0.5) * src / dst - 0.5 in float, its floor the left neighbour; before the first pixel
/// and from the last one on, the edge pixel alone.
void map_axis(int src, int dst, int bits, std::vector<tap>& taps) {
    taps.resize(static_cast<std::size_t>(dst));
    const double scale = static_cast<double>(src) / dst;
    const int one = 1 << bits;
    for (int i = 0; i < dst; ++i) {
        const auto f = static_cast<float>((i + 0.5) * scale - 0.5);
        int s = static_cast<int>(std::floor(f));
        float a = f - static_cast<float>(s);
        if (s < 0) {
            s = 0;
            a = 0;
        }
        if (s >= src - 1) {
            s = src - 1;
            a = 0;
        }
        const int w = std::min(one - 1, static_cast<int>(a * static_cast<float>(one) + 0.5F));
        taps[static_cast<std::size_t>(i)] = {s, std::min(s + 1, src - 1), w};
    }
}

/// The horizontal pass's tables for one call: per group of four output values, where its
/// 16-byte load starts, its byte shuffle and its weights (two groups per 32-byte entry, as
/// AVX2 takes them); per output value, its two source bytes and weight, for the scalar tail.
struct plan {
    struct alignas(32) pair_entry {
        std::uint8_t shuffle[32];
        std::int16_t weights[16];
    };
    std::vector<int> base;
    std::vector<pair_entry> pairs;
    std::vector<int> left;
    std::vector<int> right;
    std::vector<int> weight;
    int simd_values = 0;  ///< output values the SIMD loop makes (whole 16s); the rest are scalar
    int read_end = 0;     ///< bytes from a row's start that the SIMD loads read
    std::vector<tap> x_taps;
    std::vector<tap> y_taps;
    // What the tables were made for: a call with the same sizes as the last one on its thread
    // (a dataset of same-sized images) reuses them.
    int x_from = -1;
    int x_to = -1;
    bool x_ok = false;
    int y_from = -1;
    int y_to = -1;
};

/// Builds `p` for rows of `src_w` pixels to `dst_w`; false where a group's bytes do not fit in
/// 16.
bool make_plan(plan& p, int src_w, int dst_w) {
    if (p.x_from == src_w && p.x_to == dst_w) return p.x_ok;
    p.x_from = -1;  // until the tables are whole
    map_axis(src_w, dst_w, h_bits, p.x_taps);
    const int values = dst_w * 3;
    p.left.resize(static_cast<std::size_t>(values));
    p.right.resize(static_cast<std::size_t>(values));
    p.weight.resize(static_cast<std::size_t>(values));
    for (int j = 0; j < values; ++j) {
        const tap& t = p.x_taps[static_cast<std::size_t>(j / 3)];
        p.left[static_cast<std::size_t>(j)] = t.lo * 3 + j % 3;
        p.right[static_cast<std::size_t>(j)] = t.hi * 3 + j % 3;
        p.weight[static_cast<std::size_t>(j)] = t.w;
    }
    p.simd_values = values / 16 * 16;
    const int groups = p.simd_values / 4;
    p.base.resize(static_cast<std::size_t>(groups));
    p.pairs.resize(static_cast<std::size_t>(groups / 2));
    p.read_end = 0;
    for (int g = 0; g < groups; ++g) {
        // The group's first source byte: in an enlargement a later value can come from an
        // earlier byte (the next pixel's first channel from the same source pixel).
        int b = p.left[static_cast<std::size_t>(4 * g)];
        for (int k = 1; k < 4; ++k) b = std::min(b, p.left[static_cast<std::size_t>(4 * g + k)]);
        p.base[static_cast<std::size_t>(g)] = b;
        // Of each four groups, the first and third share an entry (low and high lane), the
        // second and fourth the next: _mm256_packs_epi32 of the two then leaves the four
        // groups' values in order.
        const int i = g % 4;
        plan::pair_entry& e = p.pairs[static_cast<std::size_t>(g / 4 * 2 + i % 2)];
        const int half = (i / 2) * 16;
        for (int k = 0; k < 4; ++k) {
            const auto j = static_cast<std::size_t>(4 * g + k);
            const int l = p.left[j] - b;
            const int r = p.right[j] - b;
            if (l < 0 || r > 15) {
                p.x_from = src_w;
                p.x_to = dst_w;
                p.x_ok = false;
                return false;
            }
            // Each source byte becomes an int16: the byte, then a zero (index 0x80 gives 0).
            e.shuffle[half + 4 * k] = static_cast<std::uint8_t>(l);
            e.shuffle[half + 4 * k + 1] = 0x80;
            e.shuffle[half + 4 * k + 2] = static_cast<std::uint8_t>(r);
            e.shuffle[half + 4 * k + 3] = 0x80;
            e.weights[(half / 2) + 2 * k] = static_cast<std::int16_t>((1 << h_bits) - p.weight[j]);
            e.weights[(half / 2) + 2 * k + 1] = static_cast<std::int16_t>(p.weight[j]);
        }
        p.read_end = std::max(p.read_end, b + 16);
    }
    p.x_from = src_w;
    p.x_to = dst_w;
    p.x_ok = true;
    return true;
}

/// 16 bytes from `row + a` and 16 from `row + b`, in the low and high lane.
__attribute__((target("avx2"))) inline __m256i load2(const std::uint8_t* row, int a, int b) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + a));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + b));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/// One source row to int16 values (levels x 2^7). The plan's arrays are read through local
/// pointers: the stores (through __m256i, which may alias anything) would otherwise make the
/// compiler reload them at every step.
__attribute__((target("avx2"))) void horizontal_row(const plan& p, const std::uint8_t* row,
                                                    std::int16_t* out, int values) {
    const __m256i round = _mm256_set1_epi32(1 << (h_bits - mid_bits - 1));
    const int* const base = p.base.data();
    const plan::pair_entry* const pairs = p.pairs.data();
    const int simd_values = p.simd_values;
    int j = 0;
    for (std::size_t g = 0; j < simd_values; g += 4, j += 16) {
        const plan::pair_entry& e0 = pairs[g / 2];
        const plan::pair_entry& e1 = pairs[g / 2 + 1];
        const __m256i v0 = load2(row, base[g], base[g + 2]);
        const __m256i v1 = load2(row, base[g + 1], base[g + 3]);
        const __m256i s0 = _mm256_madd_epi16(
            _mm256_shuffle_epi8(v0,
                                _mm256_load_si256(reinterpret_cast<const __m256i*>(e0.shuffle))),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(e0.weights)));
        const __m256i s1 = _mm256_madd_epi16(
            _mm256_shuffle_epi8(v1,
                                _mm256_load_si256(reinterpret_cast<const __m256i*>(e1.shuffle))),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(e1.weights)));
        const __m256i r0 = _mm256_srai_epi32(_mm256_add_epi32(s0, round), h_bits - mid_bits);
        const __m256i r1 = _mm256_srai_epi32(_mm256_add_epi32(s1, round), h_bits - mid_bits);
        // Lane by lane: r0 lo, r1 lo, r0 hi, r1 hi, which are groups g .. g + 3 in order.
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_packs_epi32(r0, r1));
    }
    const int* const left = p.left.data();
    const int* const right = p.right.data();
    const int* const weight = p.weight.data();
    for (; j < values; ++j) {
        const int sum = row[left[j]] * ((1 << h_bits) - weight[j]) + row[right[j]] * weight[j];
        out[j] = static_cast<std::int16_t>((sum + (1 << (h_bits - mid_bits - 1))) >>
                                           (h_bits - mid_bits));
    }
}

/// Levels from one int16 row (`w1` = 0) or a blend of two.
__attribute__((target("avx2"))) void vertical_row(const std::int16_t* h0, const std::int16_t* h1,
                                                  int w1, std::uint8_t* out, int values) {
    const __m256i round = _mm256_set1_epi16(1 << (mid_bits - 1));
    const __m256i w = _mm256_set1_epi16(static_cast<std::int16_t>(w1));
    int j = 0;
    for (; j + 16 <= values; j += 16) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h0 + j));
        if (w1 != 0) {
            const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h1 + j));
            v = _mm256_add_epi16(v, _mm256_mulhrs_epi16(_mm256_sub_epi16(b, v), w));
        }
        v = _mm256_srai_epi16(_mm256_add_epi16(v, round), mid_bits);
        const __m128i bytes =
            _mm_packus_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), bytes);
    }
    for (; j < values; ++j) {
        int v = h0[j];
        // _mm256_mulhrs_epi16: ((a * b >> 14) + 1) >> 1.
        if (w1 != 0) v += (((h1[j] - v) * w1 >> (v_bits - 1)) + 1) >> 1;
        out[j] =
            static_cast<std::uint8_t>(std::clamp((v + (1 << (mid_bits - 1))) >> mid_bits, 0, 255));
    }
}

}  // namespace

bool resize_rgb(const pixel_view& src, std::uint8_t* out, std::size_t out_stride, int width,
                int height) {
    if (src.channels != 3 || width <= 0 || height <= 0 || src.width <= 0 || src.height <= 0 ||
        !x86::has_avx2()) {
        return false;
    }
    // Exactly half in both directions, cv::resize averages 2x2 blocks (its INTER_AREA fast path,
    // the same pixels as bilinear there), faster than this kernel.
    if (src.width == 2 * width && src.height == 2 * height) return false;
    // Per thread, reused: a call allocates nothing once the sizes have been seen.
    thread_local plan p;
    thread_local std::vector<std::int16_t> rows[2];
    thread_local std::vector<std::uint8_t> padded;
    if (!make_plan(p, src.width, width)) return false;
    if (p.y_from != src.height || p.y_to != height) {
        p.y_from = -1;
        map_axis(src.height, height, v_bits, p.y_taps);
        p.y_from = src.height;
        p.y_to = height;
    }
    const int values = width * 3;
    const auto row_bytes = static_cast<std::size_t>(src.width) * 3;
    for (auto& r : rows) r.resize(static_cast<std::size_t>(values));
    // A row whose loads would read past the end of its buffer is read from a padded copy.
    padded.resize(std::max(row_bytes, static_cast<std::size_t>(p.read_end)));
    int held[2] = {-1, -1};  // the source row in each of `rows`
    const auto source_row = [&](int y) -> const std::int16_t* {
        for (int k = 0; k < 2; ++k) {
            if (held[k] == y) return rows[k].data();
        }
        const int k = held[0] < held[1] ? 0 : 1;  // rows only go down: drop the upper one
        held[k] = y;
        const std::uint8_t* row = src.data + static_cast<std::size_t>(y) * src.stride;
        if (src.end - row < p.read_end) {
            std::memcpy(padded.data(), row, row_bytes);
            row = padded.data();
        }
        horizontal_row(p, row, rows[k].data(), values);
        return rows[k].data();
    };
    for (int y = 0; y < height; ++y) {
        const tap& t = p.y_taps[static_cast<std::size_t>(y)];
        const std::int16_t* h0 = source_row(t.lo);
        const std::int16_t* h1 = t.w != 0 && t.hi != t.lo ? source_row(t.hi) : h0;
        vertical_row(h0, h1, h1 == h0 ? 0 : t.w, out + static_cast<std::size_t>(y) * out_stride,
                     values);
    }
    return true;
}

#else

bool resize_rgb(const pixel_view&, std::uint8_t*, std::size_t, int, int) {
    return false;
}

#endif

}  // namespace ferry::ops::bilinear_detail
