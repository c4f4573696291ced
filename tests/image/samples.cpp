// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image tests' sample files: every format and variant the decoder claims (see samples.hpp).
#include "samples.hpp"

#include <png.h>
#include <algorithm>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

namespace ops_test {

namespace {

constexpr int sample_width = 97;
constexpr int sample_height = 61;

/// Packs one index/sample per entry of `values` into PNG rows of `bits` per sample.
std::vector<std::uint8_t> pack_rows(const std::vector<std::uint8_t>& values, int width, int height,
                                    int bits) {
    const std::size_t row_bytes = (static_cast<std::size_t>(width) * bits + 7) / 8;
    std::vector<std::uint8_t> out(row_bytes * static_cast<std::size_t>(height), 0);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            const int bit = x * bits;
            out[row_bytes * y + bit / 8] |= static_cast<std::uint8_t>(
                values[static_cast<std::size_t>(y) * width + x] << (8 - bits - bit % 8));
        }
    }
    return out;
}

/// A pixel-exact expectation from palette indices: RGB, or RGBA with `alpha` per entry.
cv::Mat from_palette(const std::vector<std::uint8_t>& indices, int width, int height,
                     const std::vector<std::array<std::uint8_t, 3>>& palette,
                     const std::vector<std::uint8_t>& alpha = {}) {
    const int ch = alpha.empty() ? 3 : 4;
    cv::Mat m(height, width, CV_8UC(ch));
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            const std::uint8_t i = indices[static_cast<std::size_t>(y) * width + x];
            auto* p = m.ptr<std::uint8_t>(y) + x * ch;
            for (int c = 0; c < 3; ++c) p[c] = palette[i][c];
            if (ch == 4) p[3] = i < alpha.size() ? alpha[i] : 255;
        }
    }
    return m;
}

std::vector<sample> make_samples() {
    const int w = sample_width;
    const int h = sample_height;
    std::vector<sample> out;
    const auto add = [&](sample s) {
        s.width = w;
        s.height = h;
        out.push_back(std::move(s));
    };
    const cv::Mat bgr = photo(w, h, 3, 1);
    const cv::Mat gray = photo(w, h, 1, 2);
    const cv::Mat bgra = photo(w, h, 4, 3);
    const cv::Mat rgb = swap_red_blue(bgr);
    const cv::Mat rgba = swap_red_blue(bgra);

    // JPEG. Against the source, a lossy file is only checked to be the same picture (mean abs
    // diff a few levels at quality 90-95); the tight check is against OpenCV's decode.
    add({.name = "jpeg_baseline",
         .format = "jpeg",
         .file = encode(".jpg", bgr, {cv::IMWRITE_JPEG_QUALITY, 90}),
         .channels = 3,
         .lossy = true,
         .source = rgb,
         .source_mean_tol = 4,
         .source_max_tol = -1});
    add({.name = "jpeg_progressive",
         .format = "jpeg",
         .file =
             encode(".jpg", bgr, {cv::IMWRITE_JPEG_QUALITY, 90, cv::IMWRITE_JPEG_PROGRESSIVE, 1}),
         .channels = 3,
         .lossy = true,
         .source = rgb,
         .source_mean_tol = 4,
         .source_max_tol = -1});
    add({.name = "jpeg_restart_markers",
         .format = "jpeg",
         .file =
             encode(".jpg", bgr, {cv::IMWRITE_JPEG_QUALITY, 90, cv::IMWRITE_JPEG_RST_INTERVAL, 2}),
         .channels = 3,
         .lossy = true,
         .source = rgb,
         .source_mean_tol = 4,
         .source_max_tol = -1});
    add({.name = "jpeg_444",
         .format = "jpeg",
         .file = write_jpeg(bgr, jpeg_subsampling::s444, 95),
         .channels = 3,
         .lossy = true,
         .source = rgb,
         .source_mean_tol = 4,
         .source_max_tol = -1});
    add({.name = "jpeg_422",
         .format = "jpeg",
         .file = write_jpeg(bgr, jpeg_subsampling::s422, 95),
         .channels = 3,
         .lossy = true,
         .source = rgb,
         .source_mean_tol = 4,
         .source_max_tol = -1});
    add({.name = "jpeg_gray",
         .format = "jpeg",
         .file = encode(".jpg", gray, {cv::IMWRITE_JPEG_QUALITY, 90}),
         .channels = 1,
         .lossy = true,
         .source =
             [&] {
                 cv::Mat g3;
                 cv::cvtColor(gray, g3, cv::COLOR_GRAY2RGB);
                 return g3;
             }(),
         .source_mean_tol = 4,
         .source_max_tol = -1});
    {
        // Adobe CMYK is stored inverted: C=R, M=G, Y=B with K=255 means RGB (R, G, B).
        cv::Mat cmyk(h, w, CV_8UC4);
        for (int y = 0; y < h; ++y) {
            for (int x = 0; x < w; ++x) {
                const auto& p = rgb.at<cv::Vec3b>(y, x);
                cmyk.at<cv::Vec4b>(y, x) = {p[0], p[1], p[2], 255};
            }
        }
        add({.name = "jpeg_cmyk",
             .format = "jpeg",
             .file = write_jpeg(cmyk, jpeg_subsampling::s444, 95),
             .channels = 4,
             .lossy = true,
             .source = rgb,
             .source_mean_tol = 4,
             .source_max_tol = -1});
    }

    // PNG, from OpenCV.
    add({.name = "png_rgb",
         .format = "png",
         .file = encode(".png", bgr),
         .channels = 3,
         .source = rgb});
    add({.name = "png_gray",
         .format = "png",
         .file = encode(".png", gray),
         .channels = 1,
         .source = [&] {
             cv::Mat g3;
             cv::cvtColor(gray, g3, cv::COLOR_GRAY2RGB);
             return g3;
         }()});
    add({.name = "png_rgba",
         .format = "png",
         .file = encode(".png", bgra),
         .channels = 4,
         .alpha = true,
         .source = rgba});
    {
        const cv::Mat bgr16 = photo16(w, h, 4);
        cv::Mat rgb8;
        swap_red_blue(bgr16).convertTo(rgb8, CV_8U, 1.0 / 257.0);
        // 16 -> 8 bits may round (v / 257) or truncate (v >> 8): at most 1 level apart.
        add({.name = "png_16bit",
             .format = "png",
             .file = encode(".png", bgr16),
             .channels = 3,
             .bit_depth = 16,
             .source = rgb8,
             .source_mean_tol = 1,
             .source_max_tol = 1});
    }

    // PNG, written with libpng: gray + alpha, palettes, 1-bit gray, interlaced.
    {
        std::vector<std::uint8_t> ga;
        cv::Mat want(h, w, CV_8UC4);
        for (int y = 0; y < h; ++y) {
            for (int x = 0; x < w; ++x) {
                const std::uint8_t g = gray.at<std::uint8_t>(y, x);
                const std::uint8_t a = bgra.at<cv::Vec4b>(y, x)[3];
                ga.push_back(g);
                ga.push_back(a);
                want.at<cv::Vec4b>(y, x) = {g, g, g, a};
            }
        }
        add({.name = "png_gray_alpha",
             .format = "png",
             .file = write_png(w, h, PNG_COLOR_TYPE_GRAY_ALPHA, 8, ga, 2),
             .channels = 2,
             .alpha = true,
             .source = want});
    }
    {
        std::vector<std::array<std::uint8_t, 3>> palette;
        for (int i = 0; i < 200; ++i) {
            palette.push_back({static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(255 - i),
                               static_cast<std::uint8_t>((i * 7) % 256)});
        }
        std::vector<std::uint8_t> idx;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                idx.push_back(static_cast<std::uint8_t>((x * 3 + y * 5) % 200));
        add({.name = "png_palette",
             .format = "png",
             .file = write_png(w, h, PNG_COLOR_TYPE_PALETTE, 8, idx, 1, palette),
             .source = from_palette(idx, w, h, palette)});
    }
    {
        std::vector<std::array<std::uint8_t, 3>> palette;
        std::vector<std::uint8_t> trns;
        for (int i = 0; i < 16; ++i) {
            palette.push_back({static_cast<std::uint8_t>(i * 16),
                               static_cast<std::uint8_t>(200 - i * 9),
                               static_cast<std::uint8_t>(i * i)});
            trns.push_back(static_cast<std::uint8_t>(i * 17));
        }
        std::vector<std::uint8_t> idx;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                idx.push_back(static_cast<std::uint8_t>((x / 7 + y / 5) % 16));
        add({.name = "png_palette4_transparent",
             .format = "png",
             .file = write_png(w, h, PNG_COLOR_TYPE_PALETTE, 4, pack_rows(idx, w, h, 4), 1, palette,
                               trns),
             .bit_depth = 0,
             .alpha = true,
             .source = from_palette(idx, w, h, palette, trns)});
    }
    {
        std::vector<std::uint8_t> bits;
        cv::Mat want(h, w, CV_8UC3);
        for (int y = 0; y < h; ++y) {
            for (int x = 0; x < w; ++x) {
                const std::uint8_t b = ((x / 3 + y / 2) % 2 == 0) ? 1 : 0;
                bits.push_back(b);
                want.at<cv::Vec3b>(y, x) = cv::Vec3b::all(b ? 255 : 0);
            }
        }
        add({.name = "png_gray1",
             .format = "png",
             .file = write_png(w, h, PNG_COLOR_TYPE_GRAY, 1, pack_rows(bits, w, h, 1), 1),
             .channels = 1,
             .bit_depth = 1,
             .source = want});
    }
    {
        std::vector<std::uint8_t> px(rgb.data, rgb.data + rgb.total() * 3);
        add({.name = "png_interlaced",
             .format = "png",
             .file = write_png(w, h, PNG_COLOR_TYPE_RGB, 8, px, 3, {}, {}, true),
             .channels = 3,
             .source = rgb});
    }

    // WebP.
    add({.name = "webp_lossless",
         .format = "webp",
         .file = encode(".webp", bgr, {cv::IMWRITE_WEBP_QUALITY, 101}),
         .channels = 3,
         .source = rgb});
    {
        // libwebp may rewrite the colour of fully transparent pixels (it does unless asked to
        // keep them exact), so this source keeps alpha at 1 or more.
        cv::Mat bgra_opaque = bgra.clone();
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                auto& a = bgra_opaque.at<cv::Vec4b>(y, x)[3];
                a = std::max<std::uint8_t>(a, 1);
            }
        add({.name = "webp_lossless_alpha",
             .format = "webp",
             .file = encode(".webp", bgra_opaque, {cv::IMWRITE_WEBP_QUALITY, 101}),
             .channels = 4,
             .alpha = true,
             .source = swap_red_blue(bgra_opaque)});
    }
    add({.name = "webp_lossy",
         .format = "webp",
         .file = encode(".webp", bgr, {cv::IMWRITE_WEBP_QUALITY, 90}),
         .channels = 3,
         .lossy = true,
         .source = rgb,
         .source_mean_tol = 5,
         .source_max_tol = -1});

    // BMP.
    add({.name = "bmp_24bit",
         .format = "bmp",
         .file = encode(".bmp", bgr),
         .channels = 3,
         .source = rgb});
    add({.name = "bmp_gray8", .format = "bmp", .file = encode(".bmp", gray), .source = [&] {
             cv::Mat g3;
             cv::cvtColor(gray, g3, cv::COLOR_GRAY2RGB);
             return g3;
         }()});
    for (const int bits : {1, 4, 8}) {
        std::vector<std::array<std::uint8_t, 3>> palette;
        const int colours = 1 << bits;
        for (int i = 0; i < colours; ++i) {
            palette.push_back({static_cast<std::uint8_t>(255 - i * 255 / colours),
                               static_cast<std::uint8_t>(i * 97 % 256),
                               static_cast<std::uint8_t>(i * 255 / colours)});
        }
        std::vector<std::uint8_t> idx;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                idx.push_back(static_cast<std::uint8_t>((x / 2 + y * 3) % colours));
        // Palette images: channels and a sub-8-bit depth are left open by image_info's docs
        // (index bits or colour bits?), so they are not asserted.
        add({.name = "bmp_palette" + std::to_string(bits),
             .format = "bmp",
             .file = write_palette_bmp(w, h, bits, idx, palette),
             .bit_depth = bits < 8 ? 0 : 8,
             .source = from_palette(idx, w, h, palette)});
    }
    return out;
}

}  // namespace

const std::vector<sample>& samples() {
    static const std::vector<sample> all = [] {
        auto made = make_samples();
        std::vector<std::string> names;
        for (const auto& s : made) names.push_back(s.name);
        if (names != all_samples) throw std::logic_error("all_samples does not list the samples");
        return made;
    }();
    return all;
}

const sample& sample_named(std::string_view name) {
    for (const auto& s : samples())
        if (s.name == name) return s;
    throw std::logic_error("no test sample named " + std::string(name));
}

const cv::Mat& large_photo() {
    static const cv::Mat m = photo(400, 300, 3, 42);
    return m;
}

const file_bytes& large_jpeg() {
    static const file_bytes f = encode(".jpg", large_photo(), {cv::IMWRITE_JPEG_QUALITY, 90});
    return f;
}

}  // namespace ops_test
