// SPDX-License-Identifier: Apache-2.0
/// \file
/// `decode_random_resized_crop`: the same box as `random_resized_crop`, close to the two-step
/// version where a reduced scale is used, deterministic for a seed, bad input reported (suite
/// ops/roi, with region decoding in roi.cpp; tolerances there).
#include <boost/test/unit_test.hpp>

#include <iostream>
#include <limits>
#include <utility>
#include <vector>

#include "roi_support.hpp"

using namespace ops_test;
using ferry::ops::decode_image;

namespace random_resized_crop_test {

/// A 500 x 375 photo-like JPEG (what perf/compare decodes), quality 90, 4:2:0.
const file_bytes& imagenet_like_jpeg(int seed) {
    static std::map<int, file_bytes> cache;
    auto it = cache.find(seed);
    if (it == cache.end()) {
        it = cache
                 .emplace(seed, encode(".jpg", photo(500, 375, 3, static_cast<std::uint32_t>(seed)),
                                       {cv::IMWRITE_JPEG_QUALITY, 90}))
                 .first;
    }
    return it->second;
}

}  // namespace random_resized_crop_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(roi)
using namespace roi_test;
using namespace random_resized_crop_test;

// decode_random_resized_crop draws the same box as random_resized_crop on the decoded image
// (same generator state afterwards, and exactly the same pixels where the crop needs the full
// scale: a target as large as the image).
BOOST_AUTO_TEST_CASE(decode_random_resized_crop_draws_the_same_box_as_random_resized_crop) {
    for (const char* name : {"large_420", "large_gray", "large_progressive", "large_cmyk"}) {
        const file_bytes& f = jpegs().at(name);
        const ferry::image whole = decode_image(as_span(f));
        for (std::uint64_t seed = 0; seed < 20; ++seed) {
            std::mt19937_64 a(seed);
            std::mt19937_64 b(seed);
            const ferry::image fused =
                ferry::ops::decode_random_resized_crop(as_span(f), 400, 300, a);
            const ferry::image two_step = ferry::ops::random_resized_crop(whole, 400, 300, b);
            BOOST_TEST((a == b), name << " seed " << seed << ": the generators diverged");
            check_pixels(fused, to_mat(two_step), 0, 0,
                         std::string(name) + " seed " + std::to_string(seed));
        }
    }
    // Oriented files: the box is drawn on the upright size.
    const file_bytes f = with_exif_orientation(jpegs().at("large_420"), 6, false);
    const ferry::image upright = decode_image(as_span(f));
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
        std::mt19937_64 a(seed);
        std::mt19937_64 b(seed);
        check_pixels(ferry::ops::decode_random_resized_crop(as_span(f), 300, 400, a),
                     to_mat(ferry::ops::random_resized_crop(upright, 300, 400, b)), 0, 0,
                     "orientation 6 seed " + std::to_string(seed));
    }
    // PNG (decoded whole): the same pixels, any target.
    const file_bytes& png = sample_named("png_rgb").file;
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
        std::mt19937_64 a(seed);
        std::mt19937_64 b(seed);
        check_pixels(
            ferry::ops::decode_random_resized_crop(as_span(png), 32, 24, a,
                                                   {.interp = ferry::interpolation::area}),
            to_mat(ferry::ops::random_resized_crop(decode_image(as_span(png)), 32, 24, b,
                                                   {.interp = ferry::interpolation::area})),
            0, 0, "png seed " + std::to_string(seed));
    }
}

// With a reduced DCT scale, decode_random_resized_crop stays close to decoding the whole image
// and random_resized_crop: mean abs diff at most 1 per crop (the average is printed: 0.18).
BOOST_AUTO_TEST_CASE(decode_random_resized_crop_stays_close_to_the_two_step_version) {
    double sum = 0;
    double worst = 0;
    int n = 0;
    for (const int side : {224, 112}) {
        for (int image = 0; image < 4; ++image) {
            const file_bytes& f = imagenet_like_jpeg(image);
            const ferry::image whole = decode_image(as_span(f));
            for (std::uint64_t seed = 0; seed < 25; ++seed) {
                std::mt19937_64 a(seed * 1000 + static_cast<std::uint64_t>(image));
                std::mt19937_64 b = a;
                const ferry::image fused =
                    ferry::ops::decode_random_resized_crop(as_span(f), side, side, a);
                const ferry::image two_step = ferry::ops::random_resized_crop(whole, side, side, b);
                BOOST_TEST((a == b));
                BOOST_TEST_REQUIRE(fused.size() == (ferry::image_size{side, side}));
                const double mean = mean_abs_diff(to_mat(fused), to_mat(two_step));
                BOOST_TEST(mean <= 1.0, "image " << image << " seed " << seed << " side " << side
                                                 << ": mean abs diff " << mean);
                sum += mean;
                worst = std::max(worst, mean);
                ++n;
            }
        }
    }
    BOOST_TEST_MESSAGE("decode_random_resized_crop vs decode + random_resized_crop: mean abs diff "
                       << sum / n << " on average, " << worst << " at worst, over " << n
                       << " crops");
    std::cout << "decode_random_resized_crop vs two-step: mean abs diff " << sum / n << " average, "
              << worst << " worst, " << n << " crops\n";
}

// The same seed gives the same bytes, every time; another seed gives another crop.
BOOST_AUTO_TEST_CASE(decode_random_resized_crop_is_deterministic_for_a_seed) {
    const file_bytes& f = imagenet_like_jpeg(0);
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
        std::mt19937_64 a(seed);
        std::mt19937_64 b(seed);
        const ferry::image x = ferry::ops::decode_random_resized_crop(as_span(f), 224, 224, a);
        const ferry::image y = ferry::ops::decode_random_resized_crop(as_span(f), 224, 224, b);
        BOOST_TEST((x.data().size() == y.data().size() &&
                    std::equal(x.data().begin(), x.data().end(), y.data().begin())),
                   "seed " << seed);
    }
    std::mt19937_64 a(1);
    std::mt19937_64 b(2);
    BOOST_TEST(
        mean_abs_diff(to_mat(ferry::ops::decode_random_resized_crop(as_span(f), 64, 64, a)),
                      to_mat(ferry::ops::decode_random_resized_crop(as_span(f), 64, 64, b))) > 1.0);
}

// Bad arguments: a non-positive target is invalid_argument (after the draw, as
// random_resized_crop); a damaged file is a decode_error.
BOOST_AUTO_TEST_CASE(decode_random_resized_crop_reports_bad_input) {
    std::mt19937_64 rng(3);
    const file_bytes& f = imagenet_like_jpeg(0);
    BOOST_CHECK_THROW((void)ferry::ops::decode_random_resized_crop(as_span(f), 0, 10, rng),
                      ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::ops::decode_random_resized_crop(as_span(f), 10, 10, rng,
                                                                   {.scale = {0.5, 0.1}}),
                      ferry::invalid_argument);
    const file_bytes cut(f.begin(), f.begin() + 100);
    BOOST_CHECK_THROW((void)ferry::ops::decode_random_resized_crop(as_span(cut), 10, 10, rng),
                      ferry::decode_error);
}

// scale and ratio come from user code: NaN, infinite or reversed ranges are invalid_arguments,
// and finite but absurd ones (a crop of 1e300 times the image's area, a ratio of 1e-300) give a
// box inside the image (the tries fail, the fallback crops the centre), not an overflowing cast.
BOOST_AUTO_TEST_CASE(random_resized_crop_box_refuses_non_finite_ranges_and_clips_huge_ones) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    using range = std::pair<double, double>;
    for (const auto& [scale, ratio] :
         std::vector<std::pair<range, range>>{{{0.08, inf}, {0.75, 1.33}},
                                              {{0.08, 1.0}, {0.75, inf}},
                                              {{nan, 1.0}, {0.75, 1.33}},
                                              {{0.08, 1.0}, {0.75, nan}},
                                              {{0.5, 0.1}, {0.75, 1.33}},
                                              {{0.08, 1.0}, {0.0, 1.33}}}) {
        std::mt19937_64 rng(1);
        BOOST_CHECK_EXCEPTION((void)ferry::ops::random_resized_crop_box(
                                  {640, 480}, rng, {.scale = scale, .ratio = ratio}),
                              ferry::invalid_argument, [](const ferry::invalid_argument& e) {
                                  return std::string(e.what()).find("finite positive ranges") !=
                                         std::string::npos;
                              });
    }
    for (const auto& [scale, ratio] :
         std::vector<std::pair<range, range>>{{{1e300, 1e300}, {0.75, 1.33}},
                                              {{0.08, 1.0}, {1e-300, 1e-300}},
                                              {{0.08, 1.0}, {1e300, 1e300}},
                                              {{1e-300, 1e-300}, {0.75, 1.33}}}) {
        std::mt19937_64 rng(1);
        const auto box =
            ferry::ops::random_resized_crop_box({640, 480}, rng, {.scale = scale, .ratio = ratio});
        BOOST_TEST((box.width >= 1 && box.height >= 1 && box.x >= 0 && box.y >= 0 &&
                    box.x + box.width <= 640 && box.y + box.height <= 480),
                   "scale " << scale.first << " ratio " << ratio.first << ": box " << box.x << ","
                            << box.y << " " << box.width << "x" << box.height);
    }
}

// random_resized_crop_box is torchvision's RandomResizedCrop.get_params step for step: for fixed
// seeds, sizes, scales and ratios it gives golden boxes computed independently, and leaves the
// generator where they say (the number of draws: two per failed try, four on success, none in the
// fallback). The table is the output of tests/image/rrc_golden.py, which implements
// std::mt19937_64 from the C++ standard and torchvision 0.14's get_params line for line in
// Python, with torch's uniform_ and randint replaced by ferry's documented draws; rerun it and
// paste its output to change a case. Each row: seed, image size, scale, ratio (the comment says
// which try succeeded, or the fallback), the box {x, y, width, height} (torchvision's j, i, w, h)
// and the generator's next output.
BOOST_AUTO_TEST_CASE(random_resized_crop_box_matches_torchvision_golden_boxes) {
    struct golden {
        std::uint64_t seed;
        int width;
        int height;
        std::pair<double, double> scale;
        std::pair<double, double> ratio;
        ferry::crop_box box;
        std::uint64_t next;  ///< the generator's next output after the draw
    };
    // clang-format off
    const std::vector<golden> cases{
        {0ULL, 500, 375, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 1
         {42, 147, 238, 179}, 10003392056472839596ULL},
        {1ULL, 500, 375, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 1
         {21, 123, 176, 217}, 6472927700900931384ULL},
        {2ULL, 500, 375, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 1
         {31, 1, 457, 374}, 4665249168328654236ULL},
        {42ULL, 224, 224, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 1
         {2, 22, 205, 189}, 16662371453428439381ULL},
        {7ULL, 1920, 1080, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 2
         {292, 394, 699, 558}, 15357338357345460609ULL},
        {123456789ULL, 97, 61, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 1
         {24, 9, 46, 52}, 16028989633461488813ULL},
        {18446744073709551615ULL, 640, 480, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 1
         {170, 48, 190, 168}, 17279096482229114326ULL},
        {3ULL, 375, 500, {0.25, 0.5}, {0.5, 2.0},  // try 1
         {140, 83, 219, 334}, 10326406840904628101ULL},
        {4ULL, 800, 600, {0.5, 0.5}, {1.0, 1.0},  // try 1
         {196, 57, 490, 490}, 10108488131231922659ULL},
        {5ULL, 256, 256, {0.9, 1.0}, {0.75, 1.3333333333333333},  // try 6
         {6, 1, 249, 239}, 5219275217223161993ULL},
        {6ULL, 1000, 10, {0.08, 1.0}, {0.75, 1.3333333333333333},  // fallback
         {493, 0, 13, 10}, 217789980412922928ULL},
        {8ULL, 10, 1000, {0.08, 1.0}, {0.75, 1.3333333333333333},  // fallback
         {0, 493, 10, 13}, 5757931311930086699ULL},
        {9ULL, 33, 17, {0.01, 0.02}, {0.1, 10.0},  // try 1
         {0, 12, 3, 3}, 4352328545201414233ULL},
        {10ULL, 1, 1, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 1
         {0, 0, 1, 1}, 665441777603363039ULL},
        {11ULL, 3, 1000, {0.5, 1.0}, {0.75, 1.3333333333333333},  // fallback
         {0, 498, 3, 4}, 5540954627478706884ULL},
        {12ULL, 100, 100, {0.9, 1.0}, {4.0, 5.0},  // fallback
         {0, 37, 100, 25}, 8514160333957291849ULL},
        {13ULL, 300, 100, {0.9, 1.0}, {0.1, 0.2},  // fallback
         {140, 0, 20, 100}, 15447903772713508353ULL},
        {14ULL, 50, 50, {1.0, 1.0}, {0.5, 0.6},  // fallback
         {10, 0, 30, 50}, 9592374271156518154ULL},
        {15ULL, 120, 100, {1.0, 1.0}, {1.1, 1.3},  // try 5
         {0, 0, 120, 100}, 16705139787016195225ULL},
        {19ULL, 1000, 1000, {1.0, 1.0}, {0.5, 2.0},  // fallback
         {0, 0, 1000, 1000}, 12368361556703320122ULL},
        {16ULL, 1, 10, {0.9, 1.0}, {3.0, 4.0},  // fallback, clamped (torchvision: 1x0)
         {0, 4, 1, 1}, 12572657599212108250ULL},
        {17ULL, 4032, 3024, {0.08, 1.0}, {0.75, 1.3333333333333333},  // try 2
         {73, 52, 3124, 2832}, 659169651777763519ULL},
        {18ULL, 500, 375, {0.35, 1.0}, {0.75, 1.3333333333333333},  // try 1
         {42, 31, 362, 309}, 14198324429824399569ULL},
    };
    // clang-format on
    for (const golden& c : cases) {
        std::mt19937_64 rng(c.seed);
        const ferry::crop_box box = ferry::ops::random_resized_crop_box(
            {c.width, c.height}, rng, {.scale = c.scale, .ratio = c.ratio});
        const std::string what = "seed " + std::to_string(c.seed) + ", " + std::to_string(c.width) +
                                 "x" + std::to_string(c.height);
        BOOST_TEST(box == c.box, what);
        BOOST_TEST(rng() == c.next, what << ": a different number of draws");
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
