// SPDX-License-Identifier: Apache-2.0
/// \file
/// The benchmarks' image sets, generated with OpenCV's imgcodecs, deterministic per index:
/// ImageNet-like JPEGs (500x375, quality 90, photo-like content), and an FFCV-like set (the
/// longer side 512 at ImageNet's usual aspect ratios, quality 90, like the set of FFCV's
/// published ImageNet benchmark).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <vector>

namespace ferry_perf {

/// One photo-like `w x h` picture (500x375 by default): a smooth colour field, a few blurred
/// shapes, fine texture and sensor-like noise, so JPEG has real entropy to code (flat colours
/// would flatter the decoder). Shapes scale with the width.
inline cv::Mat photo_like(std::mt19937& rng, int w = 500, int h = 375) {
    const float scale = static_cast<float>(w) / 500.0F;
    std::uniform_real_distribution<float> u(0.0F, 1.0F);
    cv::Mat img(h, w, CV_32FC3);
    float fx[3], fy[3], ph[3], base[3];
    for (int c = 0; c < 3; ++c) {
        fx[c] = 1.0F + 5.0F * u(rng);
        fy[c] = 1.0F + 5.0F * u(rng);
        ph[c] = 6.28F * u(rng);
        base[c] = 60.0F + 120.0F * u(rng);
    }
    for (int y = 0; y < h; ++y) {
        auto* row = img.ptr<cv::Vec3f>(y);
        for (int x = 0; x < w; ++x) {
            for (int c = 0; c < 3; ++c) {
                row[x][c] =
                    base[c] +
                    50.0F * std::sin(fx[c] * static_cast<float>(x) / static_cast<float>(w) * 6.28F +
                                     fy[c] * static_cast<float>(y) / static_cast<float>(h) * 6.28F +
                                     ph[c]);
            }
        }
    }
    for (int k = 0; k < 12; ++k) {
        const cv::Point centre(static_cast<int>(u(rng) * w), static_cast<int>(u(rng) * h));
        const cv::Size axes(static_cast<int>(scale * (10 + static_cast<int>(u(rng) * 120))),
                            static_cast<int>(scale * (10 + static_cast<int>(u(rng) * 90))));
        const cv::Scalar colour(255 * u(rng), 255 * u(rng), 255 * u(rng));
        cv::ellipse(img, centre, axes, 360 * u(rng), 0, 360, colour, -1, cv::LINE_AA);
    }
    cv::GaussianBlur(img, img, cv::Size(0, 0), 2.0);
    cv::Mat noise(h, w, CV_32FC3);
    cv::randn(noise, 0.0, 6.0);
    img += noise;
    cv::Mat out;
    img.convertTo(out, CV_8UC3);
    return out;
}

/// The FFCV-like set's size of image `i`: the longer side 512 (the ImageNet set of FFCV's
/// published benchmark: 512 px, quality 90), at ImageNet's common shapes: 4:3 landscape most
/// often, then 3:2, 1:1, 3:4 portrait and 16:9.
inline cv::Size ffcv_size(int i) {
    static constexpr int shapes[10][2] = {{512, 384}, {512, 384}, {512, 384}, {512, 384},
                                          {512, 341}, {512, 341}, {512, 512}, {384, 512},
                                          {384, 512}, {512, 288}};
    const auto& s = shapes[static_cast<unsigned>(i) * 7U % 10U];
    return {s[0], s[1]};
}

/// `count` photo-like 500x375 JPEGs (quality 90) named img00000.jpg, ... in `dir`, made once:
/// files already there are reused (the content is a function of the index alone). `ffcv`: the
/// FFCV-like set instead, ffcv00000.jpg, ... (see ffcv_size).
inline std::vector<std::filesystem::path> photo_set(const std::filesystem::path& dir, int count,
                                                    bool ffcv = false) {
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    std::vector<fs::path> paths;
    int made = 0;
    for (int i = 0; i < count; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, ffcv ? "ffcv%05d.jpg" : "img%05d.jpg", i);
        fs::path p = dir / name;
        if (!fs::exists(p)) {
            std::mt19937 rng(static_cast<unsigned>(i) * 7919U + 17U);
            std::vector<unsigned char> buf;
            const cv::Size size = ffcv ? ffcv_size(i) : cv::Size(500, 375);
            cv::imencode(".jpg", photo_like(rng, size.width, size.height), buf,
                         {cv::IMWRITE_JPEG_QUALITY, 90});
            std::ofstream(p, std::ios::binary)
                .write(reinterpret_cast<const char*>(buf.data()),
                       static_cast<std::streamsize>(buf.size()));
            ++made;
        }
        paths.push_back(std::move(p));
    }
    if (made > 0) std::cerr << "generated " << made << " JPEGs in " << dir << '\n';
    return paths;
}

/// The first `max` files (by path) named .jpg, .jpeg or .JPG under `dir`, searched recursively:
/// a set of real photos (e.g. Debian's plasma-workspace-wallpapers under /usr/share/wallpapers).
inline std::vector<std::filesystem::path> jpegs_under(const std::filesystem::path& dir, int max) {
    namespace fs = std::filesystem;
    std::vector<fs::path> paths;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".JPG")) {
            paths.push_back(e.path());
        }
    }
    std::sort(paths.begin(), paths.end());
    if (paths.size() > static_cast<std::size_t>(max)) paths.resize(static_cast<std::size_t>(max));
    return paths;
}

}  // namespace ferry_perf
