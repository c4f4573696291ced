// SPDX-License-Identifier: Apache-2.0
/// \file
/// `interpolation::antialias`: Pillow's bilinear resample, step for step (Pillow's
/// libImaging/Resample.c: precompute_coeffs, normalize_coeffs_8bpc, ImagingResampleInner), so
/// that the pixels are Pillow's. Two separable passes over 8-bit pixels with precomputed
/// fixed-point coefficients. The loops here are Pillow's; on x86-64 resample_x86.cpp does most
/// rows in SIMD with exactly the same integers.
#include "resample.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "resample_kernels.hpp"

namespace ferry::ops {
namespace {

using namespace resample_detail;

/// Pillow's clip8: the fixed-point sum back to a level, clamped to 0..255.
std::uint8_t clip8(std::int32_t sum) {
    return static_cast<std::uint8_t>(std::clamp(sum >> precision_bits, 0, 255));
}

/// Pillow's precompute_coeffs with the bilinear (triangle) filter and normalize_coeffs_8bpc:
/// the support is 1 source pixel, times the downscale factor when shrinking, so every source
/// pixel under an output pixel counts; each output's weights are normalised to sum to 1 before
/// they are rounded to 22 bits. Pillow's box is the whole image here (a crop is cropped
/// first, as torchvision does), so its start is 0 and its size `in_size`.
axis_filter precompute(int in_size, int out_size) {
    const double scale = static_cast<double>(in_size) / out_size;
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
        const double center = (xx + 0.5) * scale;
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

/// The horizontal pass: rows `y0 .. y0 + count` of `src` to rows `0 .. count` of `out`.
void horizontal_pass(const source& src, int y0, int count, const out_rows& out, int out_width,
                     const axis_filter& f) {
#ifdef FERRY_RESAMPLE_X86
    if (horizontal_pass_x86(src, y0, count, out, out_width, f)) return;
#endif
    for (int y = 0; y < count; ++y) {
        horizontal_row_scalar(src.row(y0 + y), out.at(y), out_width, src.channels, f);
    }
}

/// The vertical pass: `out`'s rows (`bytes` each) from the rows of `in`, whose row 0 is source
/// row `shift`.
void vertical_pass(const rows& in, int shift, const out_rows& out, int out_height,
                   std::size_t bytes, const axis_filter& f) {
#ifdef FERRY_RESAMPLE_X86
    if (vertical_pass_x86(in, shift, out, out_height, bytes, f)) return;
#endif
    for (int yy = 0; yy < out_height; ++yy) {
        const auto i = static_cast<std::size_t>(yy);
        vertical_row_scalar(in, out.at(yy), bytes, &f.k[i * static_cast<std::size_t>(f.taps)],
                            f.first[i] - shift, f.count[i]);
    }
}

}  // namespace

image resample_antialias(const image& img, const crop_box& box, int width, int height) {
    return resample_antialias(region_of(img, box), img.format(), width, height);
}

image resample_antialias(const pixel_view& view, pixel_format format, int width, int height) {
    const auto c = static_cast<std::size_t>(view.channels);
    const source src{view.data, view.stride, view.width, view.height, view.channels, view.end};
    const std::size_t out_bytes = static_cast<std::size_t>(width) * c;
    image out(width, height, format);
    const out_rows dst{out.data().data(), out.row_bytes()};
    // Pillow skips a pass along an axis whose size does not change (it would copy).
    const bool need_horizontal = view.width != width;
    const bool need_vertical = view.height != height;
    if (!need_horizontal && !need_vertical) {
        for (int y = 0; y < height; ++y) std::memcpy(dst.at(y), src.row(y), out_bytes);
        return out;
    }
    if (!need_vertical) {
        horizontal_pass(src, 0, height, dst, width, precompute(view.width, width));
        return out;
    }
    const axis_filter fy = precompute(view.height, height);
    if (!need_horizontal) {
        vertical_pass({src.data, src.stride}, 0, dst, height, out_bytes, fy);
        return out;
    }
    // Horizontally, only the source rows the vertical pass reads.
    const int first = fy.first.front();
    const int last = fy.first.back() + fy.count.back();
    const auto tmp = std::make_unique_for_overwrite<std::uint8_t[]>(
        out_bytes * static_cast<std::size_t>(std::max(last - first, 0)));
    horizontal_pass(src, first, last - first, {tmp.get(), out_bytes}, width,
                    precompute(view.width, width));
    vertical_pass({tmp.get(), out_bytes}, first, dst, height, out_bytes, fy);
    return out;
}

}  // namespace ferry::ops
