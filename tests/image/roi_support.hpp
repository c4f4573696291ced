// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the region-decoding cases share (roi.cpp, random_resized_crop.cpp): the JPEGs regions
/// are checked on, the boxes that catch edge cases, and the scale rules of the contract.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "samples.hpp"

using ferry::crop_box;

// Named, not anonymous: data test cases are templates with external linkage.
namespace roi_test {

using namespace ops_test;

/// A photo-like CMYK picture with varying K (inverted, as Adobe stores it).
inline cv::Mat cmyk_photo(int width, int height) {
    const cv::Mat bgr = photo(width, height, 3, 7);
    cv::Mat cmyk(height, width, CV_8UC4);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            const auto& p = bgr.at<cv::Vec3b>(y, x);
            cmyk.at<cv::Vec4b>(y, x) = {p[2], p[1], p[0],
                                        static_cast<std::uint8_t>(128 + (x * 127) / width)};
        }
    }
    return cmyk;
}

/// The JPEGs regions are checked on: the 97x61 samples and 400x300 files of every subsampling.
inline const std::map<std::string, file_bytes>& jpegs() {
    static const std::map<std::string, file_bytes> files = [] {
        std::map<std::string, file_bytes> m;
        for (const char* name : {"jpeg_baseline", "jpeg_progressive", "jpeg_restart_markers",
                                 "jpeg_444", "jpeg_422", "jpeg_gray", "jpeg_cmyk"}) {
            m[name] = sample_named(name).file;
        }
        const cv::Mat& big = large_photo();
        m["large_420"] = large_jpeg();
        m["large_444"] = write_jpeg(big, jpeg_subsampling::s444, 90);
        m["large_422"] = write_jpeg(big, jpeg_subsampling::s422, 90);
        m["large_440"] = write_jpeg(big, jpeg_subsampling::s440, 90);
        m["large_411"] = write_jpeg(big, jpeg_subsampling::s411, 90);
        m["large_gray"] = write_jpeg(big, jpeg_subsampling::gray, 90);
        m["large_progressive"] =
            encode(".jpg", big, {cv::IMWRITE_JPEG_QUALITY, 90, cv::IMWRITE_JPEG_PROGRESSIVE, 1});
        m["large_restart"] =
            encode(".jpg", big, {cv::IMWRITE_JPEG_QUALITY, 90, cv::IMWRITE_JPEG_RST_INTERVAL, 3});
        m["large_cmyk"] = write_jpeg(cmyk_photo(400, 300), jpeg_subsampling::s420, 90);
        return m;
    }();
    return files;
}

inline const std::vector<std::string> jpeg_names{
    "jpeg_baseline", "jpeg_progressive",  "jpeg_restart_markers",
    "jpeg_444",      "jpeg_422",          "jpeg_gray",
    "jpeg_cmyk",     "large_420",         "large_444",
    "large_422",     "large_440",         "large_411",
    "large_gray",    "large_progressive", "large_restart",
    "large_cmyk"};

/// Boxes that catch edge cases in a `width x height` image: the whole image, the corners, 1x1
/// pixels, odd offsets, boxes starting and ending on iMCU boundaries (multiples of 8 and 16),
/// and seeded random ones.
inline std::vector<crop_box> boxes_for(int width, int height) {
    std::vector<crop_box> b{{0, 0, width, height},
                            {0, 0, 17, 13},
                            {width - 17, 0, 17, 13},
                            {0, height - 13, 17, 13},
                            {width - 17, height - 13, 17, 13},
                            {0, 0, 1, 1},
                            {width - 1, height - 1, 1, 1},
                            {width / 2 + 3, height / 2 + 5, 1, 1},
                            {3, 5, 31, 29},
                            {15, 15, 2, 2},
                            {16, 16, 16, 16},
                            {8, 8, 8, 8},
                            {16, 16, 33, 17},
                            {32, 8, 1, 40},
                            {31, 7, 34, 18},
                            {17, 9, width - 40, height - 30},
                            {1, 1, width - 2, height - 2},
                            {0, 1, width, height - 1},
                            {1, 0, width - 1, height}};
    // The fixed boxes above are for images of at least 66 x 48; drop those a smaller one lacks.
    std::erase_if(b, [&](const crop_box& c) {
        return c.x < 0 || c.y < 0 || c.x + c.width > width || c.y + c.height > height;
    });
    std::mt19937 rng(4242U + static_cast<unsigned>(width));
    for (int k = 0; k < 20; ++k) {
        const int w = 1 + static_cast<int>(rng() % static_cast<unsigned>(width));
        const int h = 1 + static_cast<int>(rng() % static_cast<unsigned>(height));
        const int x = static_cast<int>(rng() % static_cast<unsigned>(width - w + 1));
        const int y = static_cast<int>(rng() % static_cast<unsigned>(height - h + 1));
        b.push_back({x, y, w, h});
    }
    return b;
}

inline std::string describe(const crop_box& b) {
    return std::to_string(b.width) + "x" + std::to_string(b.height) + " at (" +
           std::to_string(b.x) + ", " + std::to_string(b.y) + ")";
}

/// The box at DCT scale 1/d, rounded outward (the documented contract).
inline crop_box scaled_box(const crop_box& b, int d) {
    const int x0 = b.x / d;
    const int y0 = b.y / d;
    return {x0, y0, (b.x + b.width + d - 1) / d - x0, (b.y + b.height + d - 1) / d - y0};
}

/// The scale the contract says a region with `reduce_to = target` is decoded at.
inline int expected_denom(const crop_box& b, ferry::image_size target) {
    for (const int d : {8, 4, 2}) {
        const crop_box s = scaled_box(b, d);
        if (s.width >= target.width && s.height >= target.height) return d;
    }
    return 1;
}

/// `reduce_to` that makes a whole `width x height` JPEG decode at exactly 1/d.
inline ferry::image_size whole_at(int width, int height, int d) {
    return {(width + d - 1) / d, (height + d - 1) / d};
}

}  // namespace roi_test
