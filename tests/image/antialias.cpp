// SPDX-License-Identifier: Apache-2.0
/// \file
/// `interpolation::antialias` against Pillow: ferry's resize, random_resized_crop and
/// decode_image(.resize) give exactly the pixels of Pillow's `Image.resize(size, BILINEAR)` (of
/// the crop, for a crop; the bound is 0: same filter, same fixed-point arithmetic). Pillow runs in
/// python3 (the Debian package python3-pil; FERRY_TEST_PYTHON names another interpreter).
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ops_test;

namespace antialias_test {

/// One resize for Pillow: the `box` region of `in`, cropped, to `width x height`.
struct pillow_job {
    ferry::image in;
    ferry::crop_box box;
    int width = 0;
    int height = 0;
    std::string name;
};

/// Reads raw pixels, resizes them as a job line says, writes them back: one process for many
/// images. CMYK stands in for ferry's RGBA: Pillow premultiplies RGBA by alpha before it filters,
/// ferry does not, and CMYK is four channels filtered each on its own.
constexpr const char* pillow_script = R"(import sys
from PIL import Image
BILINEAR = getattr(Image, "Resampling", Image).BILINEAR
MODES = {1: "L", 3: "RGB", 4: "CMYK"}
for line in open(sys.argv[1]):
    src, dst, c, w, h, x0, y0, x1, y1, ow, oh = line.split()
    c, w, h, x0, y0, x1, y1, ow, oh = map(int, (c, w, h, x0, y0, x1, y1, ow, oh))
    im = Image.frombytes(MODES[c], (w, h), open(src, "rb").read())
    out = im.crop((x0, y0, x1, y1)).resize((ow, oh), BILINEAR)
    open(dst, "wb").write(out.tobytes())
)";

/// An interpreter that imports PIL: $FERRY_TEST_PYTHON, else python3, else /usr/bin/python3
/// (where a python3 earlier on the PATH lacks the Debian package).
std::string pillow_python() {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("FERRY_TEST_PYTHON")) candidates.emplace_back(env);
    candidates.insert(candidates.end(), {"python3", "/usr/bin/python3"});
    for (const auto& py : candidates) {
        if (std::system((py + " -c 'import PIL' >/dev/null 2>&1").c_str()) == 0) return py;
    }
    BOOST_TEST_REQUIRE(false,
                       "no python3 that imports PIL: install python3-pil (setup.sh deps) "
                       "or set FERRY_TEST_PYTHON");
    return {};
}

/// Pillow's results for `jobs`, in order.
std::vector<std::vector<std::uint8_t>> pillow_resize(const std::vector<pillow_job>& jobs) {
    const temp_folder dir;
    const auto bytes = [](const std::string& s) {
        return std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
    };
    std::string list;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        const pillow_job& j = jobs[i];
        const auto in = dir.write("in" + std::to_string(i), j.in.data());
        list += in.string() + " " + (dir.path() / ("out" + std::to_string(i))).string() + " " +
                std::to_string(j.in.channels()) + " " + std::to_string(j.in.width()) + " " +
                std::to_string(j.in.height()) + " " + std::to_string(j.box.x) + " " +
                std::to_string(j.box.y) + " " + std::to_string(j.box.x + j.box.width) + " " +
                std::to_string(j.box.y + j.box.height) + " " + std::to_string(j.width) + " " +
                std::to_string(j.height) + "\n";
    }
    const auto script = dir.write("resize.py", bytes(pillow_script));
    const auto jobs_file = dir.write("jobs.txt", bytes(list));
    const std::string cmd = pillow_python() + " " + script.string() + " " + jobs_file.string();
    BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0, "Pillow failed: " << cmd);
    std::vector<std::vector<std::uint8_t>> out;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        std::ifstream f(dir.path() / ("out" + std::to_string(i)), std::ios::binary);
        out.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    return out;
}

/// Checks that `got[i]` has exactly Pillow's pixels for `jobs[i]`.
void check_equal_to_pillow(const std::vector<pillow_job>& jobs,
                           const std::vector<ferry::image>& got) {
    const auto want = pillow_resize(jobs);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        const auto g = got[i].data();
        BOOST_TEST_REQUIRE(g.size() == want[i].size(), jobs[i].name << ": " << g.size()
                                                                    << " bytes, Pillow's "
                                                                    << want[i].size());
        int worst = 0;
        std::size_t differ = 0;
        for (std::size_t k = 0; k < g.size(); ++k) {
            const int d = std::abs(int{g[k]} - int{want[i][k]});
            worst = std::max(worst, d);
            differ += d != 0 ? 1U : 0U;
        }
        BOOST_TEST(worst == 0, jobs[i].name << ": " << differ << " of " << g.size()
                                            << " samples differ from Pillow's, by up to " << worst);
    }
}

/// Photo-like content, or uniform noise (every rounding case, no smooth areas).
ferry::image content(int width, int height, ferry::pixel_format format, bool noise,
                     std::uint32_t seed) {
    const int c = ferry::channels_of(format);
    if (!noise) {
        const cv::Mat m = photo(width, height, c, seed);
        return to_image(c == 1 ? m : swap_red_blue(m), format);
    }
    ferry::image img(width, height, format);
    std::mt19937 rng(seed);
    for (auto& v : img.data()) v = static_cast<std::uint8_t>(rng() >> 24);
    return img;
}

}  // namespace antialias_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(antialias)
using namespace antialias_test;

// resize(..., antialias) is Pillow's BILINEAR resize, pixel for pixel: down by non-integer and
// exact factors, strong downscales, upscales, one axis only, 1-pixel sizes; gray, RGB and
// 4-channel images; photo-like content and noise.
BOOST_AUTO_TEST_CASE(resize_equals_pillow_bilinear) {
    const std::vector<std::array<int, 4>> sizes{
        {500, 375, 224, 224}, {640, 480, 224, 224}, {448, 448, 224, 224}, {1000, 750, 224, 224},
        {97, 61, 48, 30},     {97, 61, 33, 17},     {97, 61, 13, 9},      {97, 61, 1, 1},
        {97, 61, 150, 100},   {97, 61, 97, 20},     {97, 61, 200, 61},    {300, 200, 299, 201},
        {1, 1, 5, 3},         {61, 1, 7, 1},        {1, 61, 1, 7},        {5, 4, 17, 2},
        {333, 17, 2, 16},     {64, 64, 32, 32},     {255, 255, 256, 256}, {2000, 30, 3, 30}};
    std::vector<pillow_job> jobs;
    std::vector<ferry::image> got;
    std::uint32_t seed = 1;
    for (const auto format :
         {ferry::pixel_format::rgb, ferry::pixel_format::gray, ferry::pixel_format::rgba}) {
        for (const bool noise : {false, true}) {
            for (const auto& [w, h, ow, oh] : sizes) {
                ferry::image in = content(w, h, format, noise, seed++);
                got.push_back(ferry::ops::resize(in, ow, oh, ferry::interpolation::antialias));
                jobs.push_back({std::move(in),
                                {0, 0, w, h},
                                ow,
                                oh,
                                std::string(ferry::to_string(format)) + (noise ? " noise " : " ") +
                                    std::to_string(w) + "x" + std::to_string(h) + " to " +
                                    std::to_string(ow) + "x" + std::to_string(oh)});
            }
        }
    }
    check_equal_to_pillow(jobs, got);
}

// random_resized_crop(..., antialias) is Pillow's resize of the crop (`im.crop(box).resize`, what
// torchvision's RandomResizedCrop does on PIL images; the filter sees no pixel outside the box):
// the boxes torchvision draws, to 224 and 112, down and up.
BOOST_AUTO_TEST_CASE(random_resized_crop_equals_pillow_crop_then_resize) {
    std::vector<pillow_job> jobs;
    std::vector<ferry::image> got;
    for (const auto format : {ferry::pixel_format::rgb, ferry::pixel_format::gray}) {
        const ferry::image in = content(500, 375, format, false, 7);
        for (std::uint64_t i = 0; i < 40; ++i) {
            const int side = i % 2 == 0 ? 224 : 112;
            const ferry::random_resized_crop_options options{
                .scale = i < 30 ? std::pair{0.08, 1.0} : std::pair{0.01, 0.05},
                .interp = ferry::interpolation::antialias};
            std::mt19937_64 rng(i);
            const ferry::crop_box box =
                ferry::ops::random_resized_crop_box(in.size(), rng, options);
            rng.seed(i);
            got.push_back(ferry::ops::random_resized_crop(in, side, side, rng, options));
            jobs.push_back({in, box, side, side,
                            std::string(ferry::to_string(format)) + " box " +
                                std::to_string(box.width) + "x" + std::to_string(box.height) +
                                " at " + std::to_string(box.x) + "," + std::to_string(box.y) +
                                " to " + std::to_string(side)});
        }
    }
    check_equal_to_pillow(jobs, got);
}

// decode_image(.resize, .interp = antialias) resizes with the same filter: Pillow's pixels
// (PNG, so no reduced-scale decode comes first).
BOOST_AUTO_TEST_CASE(decode_image_resize_equals_pillow) {
    const cv::Mat m = photo(500, 375, 3, 11);
    const file_bytes png = encode(".png", m);
    const ferry::image full = ferry::ops::decode_image(as_span(png));
    const ferry::image out = ferry::ops::decode_image(
        as_span(png), {.resize = {224, 224}, .interp = ferry::interpolation::antialias});
    check_equal_to_pillow({{full, {0, 0, 500, 375}, 224, 224, "decode_image png 500x375 to 224"}},
                          {out});
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
