// SPDX-License-Identifier: Apache-2.0
/// \file
/// resize: CPU microseconds per image of ferry's antialiased resize (`interpolation::antialias`,
/// Pillow's bilinear filter) against the OpenCV calls a user would write by hand for an
/// antialiased resize, measured in the same run on the same photo-like RGB images:
///
///  * `cv INTER_AREA`     `cv::resize(src, dst, size, 0, 0, cv::INTER_AREA)`;
///  * `cv box + AREA`     whole k x k blocks averaged while the image is at least twice the
///                        target, then INTER_AREA for the rest: ferry's antialias until it
///                        became Pillow's filter (kept here as the baseline only);
///  * `ferry antialias`   `ferry::ops::resize(img, w, h, interpolation::antialias)`, or
///                        `random_resized_crop` for the crop rows.
///
/// Cases: 500x375, 640x480, 448x448 (exactly 2x) and 1000x750 to 224x224, and the crops
/// torchvision's RandomResizedCrop draws from 500x375 (64 boxes, the same for every method)
/// to 224x224. OpenCV runs on the calling thread, as ferry sets it. Each cell is the median of
/// `--reps` timed repetitions; the ratio is the baseline's time over ferry's.
///
/// A second table times the bilinear resize without antialiasing on the same cases:
/// `cv::resize(..., INTER_LINEAR)` against `ferry::ops::resize` (`interpolation::bilinear`, the
/// AVX2 kernel of ops/image/bilinear_x86.cpp where it applies, OpenCV beyond a ~3x reduction).
///
/// Usage: resize [--reps R] [--iters N]
///   --reps   timed repetitions per cell (default 5)
///   --iters  images resized per repetition (default 200)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/args.hpp"
#include "ferry/image.hpp"

namespace {

/// Photo-like RGB content: smooth waves, a few shapes and noise (flat colour would flatter
/// nothing here, but noise keeps every rounding path busy).
ferry::image photo(int w, int h, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.0F, 1.0F);
    std::normal_distribution<float> noise(0.0F, 6.0F);
    ferry::image img(w, h, ferry::pixel_format::rgb);
    float f[3];
    for (float& v : f) v = 1.0F + 5.0F * u(rng);
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            for (int c = 0; c < 3; ++c) {
                const float v =
                    128.0F +
                    60.0F *
                        std::sin(f[c] * (static_cast<float>(x) / w + static_cast<float>(y) / h) *
                                 6.28F) +
                    noise(rng);
                img.data()[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w) +
                            static_cast<std::size_t>(x)) *
                               3 +
                           static_cast<std::size_t>(c)] =
                    static_cast<std::uint8_t>(std::clamp(v, 0.0F, 255.0F));
            }
        }
    }
    return img;
}

cv::Mat view(const ferry::image& img) {
    return {img.height(), img.width(), CV_8UC3,
            const_cast<std::uint8_t*>(img.data().data())};  // NOLINT: no const cv::Mat view
}

/// The baseline's first step: each kx x ky block of `src` averaged into one pixel.
cv::Mat box_reduce(const cv::Mat& src, int kx, int ky) {
    const int c = src.channels();
    const int w = (src.cols + kx - 1) / kx;
    const int h = (src.rows + ky - 1) / ky;
    cv::Mat dst(h, w, src.type());
    std::vector<std::uint32_t> acc(static_cast<std::size_t>(src.cols) *
                                   static_cast<std::size_t>(c));
    for (int oy = 0; oy < h; ++oy) {
        const int y0 = oy * ky;
        const int rows = std::min(ky, src.rows - y0);
        std::fill(acc.begin(), acc.end(), 0U);
        for (int y = y0; y < y0 + rows; ++y) {
            const std::uint8_t* r = src.ptr<std::uint8_t>(y);
            for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += r[i];
        }
        std::uint8_t* d = dst.ptr<std::uint8_t>(oy);
        for (int ox = 0; ox < w; ++ox) {
            const int x0 = ox * kx;
            const int cols = std::min(kx, src.cols - x0);
            const auto n = static_cast<std::uint32_t>(rows * cols);
            for (int k = 0; k < c; ++k) {
                std::uint32_t sum = 0;
                for (int x = x0; x < x0 + cols; ++x) {
                    sum += acc[static_cast<std::size_t>(x) * static_cast<std::size_t>(c) +
                               static_cast<std::size_t>(k)];
                }
                d[ox * c + k] = static_cast<std::uint8_t>((sum + n / 2) / n);
            }
        }
    }
    return dst;
}

/// The baseline: box reduction while at least twice the target, whole blocks only (the rest
/// trimmed evenly from both edges), then INTER_AREA.
void box_then_area(const cv::Mat& src, cv::Mat& dst, cv::Size size) {
    const int kx = std::max(1, src.cols / size.width);
    const int ky = std::max(1, src.rows / size.height);
    if (kx < 2 && ky < 2) {
        cv::resize(src, dst, size, 0, 0, cv::INTER_AREA);
        return;
    }
    const int tx = src.cols % kx;
    const int ty = src.rows % ky;
    const cv::Mat whole = src(cv::Rect(tx / 2, ty / 2, src.cols - tx, src.rows - ty));
    cv::resize(box_reduce(whole, kx, ky), dst, size, 0, 0, cv::INTER_AREA);
}

/// CPU time of the calling thread, in microseconds: what a resize costs, also on a machine
/// busy with other work (wall time would count the waits for a core).
double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

/// Median CPU microseconds per call of `work(i)` over `iters` calls, `reps` times.
double median_us(int reps, int iters, const std::function<void(int)>& work) {
    for (int i = 0; i < std::min(iters, 20); ++i) work(i);  // warm caches and allocators
    std::vector<double> us;
    for (int r = 0; r < reps; ++r) {
        const double t0 = thread_cpu_us();
        for (int i = 0; i < iters; ++i) work(i);
        us.push_back((thread_cpu_us() - t0) / iters);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

struct row {
    std::string name;
    double area = 0;
    double box_area = 0;
    double ferry = 0;
    double linear = 0;        ///< cv::resize INTER_LINEAR
    double ferry_linear = 0;  ///< ferry's bilinear resize
};

}  // namespace

int main(int argc, char** argv) {
    int reps = 5;
    int iters = 200;
    ferry_perf::options opt(argc, argv, "usage: resize [--reps R] [--iters N]");
    while (opt.next()) {
        const std::string_view a = opt.name();
        if (a == "--reps") {
            reps = std::max(1, opt.integer());
        } else if (a == "--iters") {
            iters = std::max(1, opt.integer());
        } else {
            opt.unknown();
        }
    }
    cv::setNumThreads(1);  // ferry's default for OpenCV: the calling thread only
    constexpr int side = 224;
    const cv::Size target(side, side);
    std::vector<row> rows;
    volatile std::uint8_t sink = 0;  // keeps every result observed

    for (const auto& [w, h] :
         std::vector<std::pair<int, int>>{{500, 375}, {640, 480}, {448, 448}, {1000, 750}}) {
        const ferry::image src = photo(w, h, static_cast<std::uint32_t>(w * 31 + h));
        const cv::Mat m = view(src);
        row r{std::to_string(w) + "x" + std::to_string(h) + " to 224x224"};
        cv::Mat dst;
        r.area = median_us(reps, iters, [&](int) {
            cv::resize(m, dst, target, 0, 0, cv::INTER_AREA);
            sink = dst.data[0];
        });
        r.box_area = median_us(reps, iters, [&](int) {
            box_then_area(m, dst, target);
            sink = dst.data[0];
        });
        r.ferry = median_us(reps, iters, [&](int) {
            sink = ferry::ops::resize(src, side, side, ferry::interpolation::antialias).data()[0];
        });
        r.linear = median_us(reps, iters, [&](int) {
            cv::resize(m, dst, target, 0, 0, cv::INTER_LINEAR);
            sink = dst.data[0];
        });
        r.ferry_linear = median_us(reps, iters, [&](int) {
            sink = ferry::ops::resize(src, side, side, ferry::interpolation::bilinear).data()[0];
        });
        rows.push_back(r);
    }

    {
        const ferry::image src = photo(500, 375, 7);
        const cv::Mat m = view(src);
        std::vector<ferry::crop_box> boxes;
        for (std::uint64_t i = 0; i < 64; ++i) {
            std::mt19937_64 rng(i);
            boxes.push_back(ferry::ops::random_resized_crop_box(src.size(), rng));
        }
        const auto roi = [&](int i) {
            const ferry::crop_box& b = boxes[static_cast<std::size_t>(i) % boxes.size()];
            return m(cv::Rect(b.x, b.y, b.width, b.height));
        };
        row r{"random resized crops of 500x375 to 224x224"};
        cv::Mat dst;
        r.area = median_us(reps, iters, [&](int i) {
            cv::resize(roi(i), dst, target, 0, 0, cv::INTER_AREA);
            sink = dst.data[0];
        });
        r.box_area = median_us(reps, iters, [&](int i) {
            box_then_area(roi(i), dst, target);
            sink = dst.data[0];
        });
        r.ferry = median_us(reps, iters, [&](int i) {
            std::mt19937_64 rng(static_cast<std::uint64_t>(i) % boxes.size());
            sink = ferry::ops::random_resized_crop(src, side, side, rng,
                                                   {.interp = ferry::interpolation::antialias})
                       .data()[0];
        });
        r.linear = median_us(reps, iters, [&](int i) {
            cv::resize(roi(i), dst, target, 0, 0, cv::INTER_LINEAR);
            sink = dst.data[0];
        });
        r.ferry_linear = median_us(reps, iters, [&](int i) {
            std::mt19937_64 rng(static_cast<std::uint64_t>(i) % boxes.size());
            sink = ferry::ops::random_resized_crop(src, side, side, rng).data()[0];
        });
        rows.push_back(r);
    }
    (void)sink;

    std::printf("Antialiased resize, RGB, CPU microseconds per image (median of %d x %d)\n\n", reps,
                iters);
    std::printf(
        "| case | cv INTER_AREA | cv box + AREA (old ferry) | ferry antialias | vs INTER_AREA | "
        "vs box + AREA |\n|---|---|---|---|---|---|\n");
    for (const row& r : rows) {
        std::printf("| %s | %.1f | %.1f | %.1f | %.2fx | %.2fx |\n", r.name.c_str(), r.area,
                    r.box_area, r.ferry, r.area / r.ferry, r.box_area / r.ferry);
    }
    std::printf("\nBilinear resize (no antialiasing), RGB, CPU microseconds per image\n\n");
    std::printf(
        "| case | cv INTER_LINEAR | ferry bilinear | vs INTER_LINEAR |\n|---|---|---|---|\n");
    for (const row& r : rows) {
        std::printf("| %s | %.1f | %.1f | %.2fx |\n", r.name.c_str(), r.linear, r.ferry_linear,
                    r.linear / r.ferry_linear);
    }
    return 0;
}
