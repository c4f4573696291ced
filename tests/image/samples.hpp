// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image tests' sample files: one of every format and variant the decoder claims, each with
/// what probe_image must report and the pixels it must decode to; and a larger photo and JPEG.
#pragma once

#include <opencv2/core.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "support.hpp"

namespace ops_test {

/// One generated test file.
struct sample {
    std::string name;    ///< e.g. "jpeg_progressive"
    std::string format;  ///< what probe_image must report: "jpeg", "png", "webp", "bmp"
    file_bytes file;
    int width = 0;
    int height = 0;
    int channels = 0;    ///< stored channels probe_image must report; 0 where the header's
                         ///< documentation leaves it open (palette images)
    int bit_depth = 8;   ///< what probe_image must report; 0 where the header leaves it open
    bool alpha = false;  ///< the file carries an alpha channel
    bool lossy = false;
    /// Independent expectation from the source pixels: RGB, or RGBA where `alpha`.
    cv::Mat source;
    double source_mean_tol = 0;  ///< mean abs diff allowed against `source`
    double source_max_tol = 0;   ///< max abs diff allowed against `source`; < 0: not checked
};

/// Every format and variant the decoder claims, 97 x 61 (odd, to catch stride bugs); built once,
/// on first use.
const std::vector<sample>& samples();
const sample& sample_named(std::string_view name);

/// The samples' names (what data-driven cases run over; `samples()` checks it matches).
inline const std::vector<std::string> all_samples{"jpeg_baseline",
                                                  "jpeg_progressive",
                                                  "jpeg_restart_markers",
                                                  "jpeg_444",
                                                  "jpeg_422",
                                                  "jpeg_gray",
                                                  "jpeg_cmyk",
                                                  "png_rgb",
                                                  "png_gray",
                                                  "png_rgba",
                                                  "png_16bit",
                                                  "png_gray_alpha",
                                                  "png_palette",
                                                  "png_palette4_transparent",
                                                  "png_gray1",
                                                  "png_interlaced",
                                                  "webp_lossless",
                                                  "webp_lossless_alpha",
                                                  "webp_lossy",
                                                  "bmp_24bit",
                                                  "bmp_gray8",
                                                  "bmp_palette1",
                                                  "bmp_palette4",
                                                  "bmp_palette8"};
/// The samples that carry an alpha channel.
inline const std::vector<std::string> alpha_samples{
    "png_rgba", "png_gray_alpha", "png_palette4_transparent", "webp_lossless_alpha"};
/// The samples without alpha.
inline const std::vector<std::string> opaque_samples{
    "jpeg_baseline", "jpeg_progressive", "jpeg_gray",   "jpeg_cmyk",   "png_rgb",
    "png_gray",      "png_16bit",        "png_palette", "png_gray1",   "webp_lossless",
    "webp_lossy",    "bmp_24bit",        "bmp_gray8",   "bmp_palette4"};

/// A 400 x 300 photo-like picture (BGR) and its baseline JPEG (quality 90): large enough for
/// every DCT scale (1/2, 1/4, 1/8 give 200x150, 100x75, 50x38).
const cv::Mat& large_photo();
const file_bytes& large_jpeg();

}  // namespace ops_test
