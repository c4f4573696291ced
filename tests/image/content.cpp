// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image tests' photo-like content, 8 and 16 bits per channel (see support.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <opencv2/core.hpp>
#include <random>

#include "support.hpp"

namespace ops_test {

namespace {

std::uint8_t clamp_u8(double v) {
    return static_cast<std::uint8_t>(std::clamp(std::lround(v), 0L, 255L));
}

/// One colour sample of the photo-like content at (x, y), in [0, 255] before noise.
double smooth_value(int x, int y, int width, int height, int channel, double phase) {
    const double fx = static_cast<double>(x) / width;
    const double fy = static_cast<double>(y) / height;
    // Channels ramp along different axes (0: down, 1: right, 2: diagonal), so that any of the
    // eight EXIF orientations changes the picture.
    const double ramp = channel == 0 ? fy : channel == 1 ? fx : 0.6 * fx + 0.4 * (1.0 - fy);
    return 40.0 + 150.0 * ramp + 30.0 * std::sin(5.0 * fx + 3.0 * fy + phase);
}

}  // namespace

cv::Mat photo(int width, int height, int channels, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> phase(0.0, 2.0 * std::numbers::pi);
    std::normal_distribution<double> noise(0.0, 2.0);
    const double phases[3] = {phase(rng), phase(rng), phase(rng)};
    cv::Mat m(height, width, CV_8UC(channels));
    for (int y = 0; y < height; ++y) {
        auto* row = m.ptr<std::uint8_t>(y);
        for (int x = 0; x < width; ++x) {
            for (int c = 0; c < channels; ++c) {
                double v;
                if (channels == 1) {
                    v = 0.5 * (smooth_value(x, y, width, height, 1, phases[0]) +
                               smooth_value(x, y, width, height, 0, phases[1]));
                } else if (c < 3) {
                    v = smooth_value(x, y, width, height, c, phases[c]);
                } else {
                    // Alpha: a smooth ramp that reaches both 0 and 255.
                    v = 255.0 * (1.2 * x / (width - 1) - 0.1);
                }
                if (c < 3) v += noise(rng);
                row[x * channels + c] = clamp_u8(v);
            }
        }
    }
    return m;
}

cv::Mat uniform_noise(int width, int height, std::uint32_t seed) {
    cv::Mat m(height, width, CV_8UC3);
    std::mt19937 rng(seed);
    for (auto it = m.begin<cv::Vec3b>(); it != m.end<cv::Vec3b>(); ++it) {
        const std::uint32_t v = rng();
        *it = cv::Vec3b(static_cast<uchar>(v), static_cast<uchar>(v >> 8),
                        static_cast<uchar>(v >> 16));
    }
    return m;
}

cv::Mat photo16(int width, int height, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> phase(0.0, 2.0 * std::numbers::pi);
    std::normal_distribution<double> noise(0.0, 300.0);
    const double phases[3] = {phase(rng), phase(rng), phase(rng)};
    cv::Mat m(height, width, CV_16UC3);
    for (int y = 0; y < height; ++y) {
        auto* row = m.ptr<std::uint16_t>(y);
        for (int x = 0; x < width; ++x) {
            for (int c = 0; c < 3; ++c) {
                const double v =
                    257.0 * smooth_value(x, y, width, height, c, phases[c]) + noise(rng);
                row[x * 3 + c] = static_cast<std::uint16_t>(std::clamp(std::lround(v), 0L, 65535L));
            }
        }
    }
    return m;
}

}  // namespace ops_test
