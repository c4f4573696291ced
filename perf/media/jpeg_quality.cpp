// SPDX-License-Identifier: Apache-2.0
/// \file
/// jpeg_quality: what each JPEG speed option of `decode_image` and `decode_random_resized_crop`
/// costs in pixels and buys in time, on the ImageNet-like set (500x375, q90, 4:2:0; see
/// perf/common/photo_set.hpp) and, with `--photos DIR`, on real photos (every .jpg/.jpeg under DIR,
/// e.g. Debian's plasma-workspace-wallpapers in /usr/share/wallpapers).
///
/// Two jobs, each against its accurate reference computed in the same run:
///  * RandomResizedCrop(224) with a seeded box per image: the reference is the whole image
///    decoded at full scale, cropped and resized (what torchvision does); the variants are
///    `decode_random_resized_crop` with the options below. Both resizes bilinear, and again
///    both antialiased (`--interp antialias`).
///  * a whole decode: `decode_image` with `fast` against `decode_image`.
///
/// For each variant: mean absolute difference per channel value (mean over images, and the
/// worst image), PSNR in dB (median over images; inf when equal) and CPU µs per image (the
/// thread's CPU time, median of `--reps` sequential passes). Prints a markdown table.
///
/// Usage: jpeg_quality [--images N] [--reps R] [--dir DIR] [--photos DIR]
///                     [--interp bilinear|antialias] [--max-photos N]

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/args.hpp"
#include "common/photo_set.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"

namespace {

namespace fs = std::filesystem;
constexpr int side = 224;

/// CPU time of the calling thread: the work of a sequential pass, less disturbed than wall
/// time by other processes on a shared machine.
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Mean |a - b| over every channel value, and the mean squared difference.
std::pair<double, double> differences(const ferry::image& a, const ferry::image& b) {
    if (a.size() != b.size() || a.channels() != b.channels()) {
        std::cerr << "jpeg_quality: sizes differ\n";
        std::exit(1);
    }
    double sum = 0;
    double sq = 0;
    std::size_t n = 0;
    for (int y = 0; y < a.height(); ++y) {
        const auto* pa = a.data().data() + static_cast<std::size_t>(y) * a.row_bytes();
        const auto* pb = b.data().data() + static_cast<std::size_t>(y) * b.row_bytes();
        const std::size_t w = static_cast<std::size_t>(a.width()) * a.channels();
        for (std::size_t i = 0; i < w; ++i) {
            const double d = static_cast<double>(pa[i]) - static_cast<double>(pb[i]);
            sum += std::abs(d);
            sq += d * d;
        }
        n += w;
    }
    return {sum / static_cast<double>(n), sq / static_cast<double>(n)};
}

double psnr(double mse) {
    return mse == 0 ? std::numeric_limits<double>::infinity()
                    : 10.0 * std::log10(255.0 * 255.0 / mse);
}

std::mt19937_64 rng_for(std::size_t index) {
    return std::mt19937_64(0x5EEDULL ^ (index * 0x9E3779B97F4A7C15ULL));
}

struct variant {
    std::string name;
    std::function<ferry::image(const ferry::bytes&, std::size_t)> run;
    int reference = -1;  ///< index of the variant it is compared with (-1: it is a reference)
    std::vector<double> us;
    std::vector<double> mean_diff;
    std::vector<double> psnr_db;
};

variant make_variant(std::string name,
                     std::function<ferry::image(const ferry::bytes&, std::size_t)> run,
                     int reference = -1) {
    variant v;
    v.name = std::move(name);
    v.run = std::move(run);
    v.reference = reference;
    return v;
}

void report(const std::string& title, const std::vector<ferry::bytes>& files,
            std::vector<variant>& vs, int reps) {
    std::vector<std::vector<ferry::image>> out(vs.size());
    for (std::size_t v = 0; v < vs.size(); ++v) {
        for (std::size_t i = 0; i < files.size(); ++i) out[v].push_back(vs[v].run(files[i], i));
    }
    for (int r = 0; r < reps; ++r) {
        for (auto& v : vs) {
            const double t0 = thread_cpu_seconds();
            for (std::size_t i = 0; i < files.size(); ++i) (void)v.run(files[i], i);
            const double s = thread_cpu_seconds() - t0;
            v.us.push_back(s * 1e6 / static_cast<double>(files.size()));
        }
    }
    std::printf("\n%s: %zu JPEGs, CPU µs per image, median of %d sequential passes\n\n",
                title.c_str(), files.size(), reps);
    std::printf(
        "| variant | CPU µs/image | ÷ reference | mean abs diff | worst image | PSNR (median) "
        "|\n|---|---:|---:|---:|---:|---:|\n");
    for (std::size_t v = 0; v < vs.size(); ++v) {
        variant& x = vs[v];
        const double t = median(x.us);
        if (x.reference < 0) {
            std::printf("| %s | %.0f | — | reference | | |\n", x.name.c_str(), t);
            continue;
        }
        const auto ref = static_cast<std::size_t>(x.reference);
        for (std::size_t i = 0; i < files.size(); ++i) {
            const auto [mad, mse] = differences(out[v][i], out[ref][i]);
            x.mean_diff.push_back(mad);
            x.psnr_db.push_back(psnr(mse));
        }
        double mean = 0;
        for (const double d : x.mean_diff) mean += d;
        mean /= static_cast<double>(x.mean_diff.size());
        std::printf("| %s | %.0f | %.2f | %.3f | %.3f | %.1f dB |\n", x.name.c_str(), t,
                    t / median(vs[ref].us), mean,
                    *std::max_element(x.mean_diff.begin(), x.mean_diff.end()), median(x.psnr_db));
    }
}

}  // namespace

int main(int argc, char** argv) {
    int images = 200;
    int reps = 3;
    int max_photos = 60;
    const char* tmp = std::getenv("TMPDIR");
    fs::path dir = fs::path(tmp != nullptr ? tmp : "/tmp") / "ferry-image-pipeline";
    fs::path photos;
    ferry::interpolation interp = ferry::interpolation::bilinear;
    ferry_perf::options opt(argc, argv,
                            "usage: jpeg_quality [--images N] [--reps R] [--dir DIR] "
                            "[--photos DIR] [--interp bilinear|antialias] [--max-photos N]");
    while (opt.next()) {
        const std::string_view a = opt.name();
        if (a == "--images") {
            images = std::max(1, opt.integer());
        } else if (a == "--reps") {
            reps = std::max(1, opt.integer());
        } else if (a == "--max-photos") {
            max_photos = std::max(1, opt.integer());
        } else if (a == "--dir") {
            dir = opt.value();
        } else if (a == "--photos") {
            photos = opt.value();
        } else if (a == "--interp") {
            const std::string_view v = opt.value();
            if (v != "bilinear" && v != "antialias") opt.bad_value("bilinear or antialias");
            interp =
                v == "antialias" ? ferry::interpolation::antialias : ferry::interpolation::bilinear;
        } else {
            opt.unknown();
        }
    }
    std::vector<std::pair<std::string, std::vector<ferry::bytes>>> sets;
    {
        std::vector<ferry::bytes> files;
        for (const auto& p : ferry_perf::photo_set(dir, images)) {
            files.push_back(ferry::ops::read_file(p));
        }
        sets.emplace_back("ImageNet-like set (500x375, q90, 4:2:0)", std::move(files));
    }
    if (!photos.empty()) {
        std::vector<ferry::bytes> files;
        for (const auto& p : ferry_perf::jpegs_under(photos, max_photos)) {
            files.push_back(ferry::ops::read_file(p));
        }
        if (files.empty()) {
            std::cerr << "jpeg_quality: no .jpg files under " << photos << '\n';
            return 2;
        }
        sets.emplace_back("photos under " + photos.string(), std::move(files));
    }

    namespace ops = ferry::ops;
    for (auto& [title, files] : sets) {
        auto rrc = [interp](ferry::decode_random_resized_crop_options o) {
            o.interp = interp;
            return [o](const ferry::bytes& b, std::size_t i) {
                std::mt19937_64 rng = rng_for(i);
                return ops::decode_random_resized_crop(b, side, side, rng, o);
            };
        };
        std::vector<variant> crop;
        crop.push_back(make_variant("decode, then random_resized_crop (reference)",
                                    [interp](const ferry::bytes& b, std::size_t i) {
                                        std::mt19937_64 rng = rng_for(i);
                                        return ops::random_resized_crop(ops::decode_image(b), side,
                                                                        side, rng,
                                                                        {.interp = interp});
                                    }));
        crop.push_back(make_variant("region decode", rrc({}), 0));
        crop.push_back(make_variant("region decode, check_rest", rrc({.check_rest = true}), 0));
        crop.push_back(make_variant("region decode, fast", rrc({.fast = true}), 0));
        crop.push_back(
            make_variant("region decode, scale_slack 0.1", rrc({.scale_slack = 0.1}), 0));
        crop.push_back(
            make_variant("region decode, scale_slack 0.25", rrc({.scale_slack = 0.25}), 0));
        crop.push_back(make_variant("region decode, fast + scale_slack 0.1",
                                    rrc({.scale_slack = 0.1, .fast = true}), 0));
        crop.push_back(make_variant("region decode, fast + scale_slack 0.25",
                                    rrc({.scale_slack = 0.25, .fast = true}), 0));
        report(title + ", RandomResizedCrop 224 (" +
                   (interp == ferry::interpolation::antialias ? "antialias" : "bilinear") + ")",
               files, crop, reps);

        std::vector<variant> whole;
        whole.push_back(
            make_variant("decode_image (reference)",
                         [](const ferry::bytes& b, std::size_t) { return ops::decode_image(b); }));
        whole.push_back(make_variant(
            "decode_image, fast",
            [](const ferry::bytes& b, std::size_t) { return ops::decode_image(b, {.fast = true}); },
            0));
        report(title + ", whole image", files, whole, reps);
    }
    return 0;
}
