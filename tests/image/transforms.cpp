// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image transforms: resize (against OpenCV), crop, center_crop, random_resized_crop,
/// horizontal_flip and normalize; images as tensors and collate are in tensors.cpp.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <numeric>
#include <opencv2/imgproc.hpp>
#include <random>
#include <set>

#include "transforms_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(transforms)
using namespace transforms_test;

// Bilinear resize has the requested size and OpenCV's INTER_LINEAR pixels (within a level).
BOOST_DATA_TEST_CASE(bilinear_resize_matches_opencv, bdata::make(resize_sizes), size) {
    const auto [w, h] = size;
    const ferry::image out = ferry::ops::resize(test_image(), w, h);
    check_pixels(out, cv_resize(test_mat(), w, h, cv::INTER_LINEAR), 0.5, 1,
                 "bilinear to " + std::to_string(w) + "x" + std::to_string(h));
}

// Area resize averages like OpenCV's INTER_AREA (integer and fractional factors).
BOOST_DATA_TEST_CASE(area_resize_matches_opencv_area,
                     bdata::make(std::vector<ferry::image_size>{
                         {48, 30}, {32, 20}, {40, 25}, {7, 5}}),
                     size) {
    const auto [w, h] = size;
    const ferry::image out = ferry::ops::resize(test_image(), w, h, ferry::interpolation::area);
    check_pixels(out, cv_resize(test_mat(), w, h, cv::INTER_AREA), 0.5, 1,
                 "area to " + std::to_string(w) + "x" + std::to_string(h));
}

// The antialias filter (Pillow's bilinear, whose triangle widens with the factor; its pixels
// against Pillow's are in antialias.cpp) stays close to OpenCV's INTER_AREA at strong
// downscales: mean <= 1.5 (0.24 at 2x, 1.4 at 14x: the triangle reaches past the box INTER_AREA
// averages), and the size is exactly the one asked for.
BOOST_DATA_TEST_CASE(antialias_resize_stays_close_to_area,
                     bdata::make(std::vector<ferry::image_size>{
                         {48, 30}, {32, 20}, {13, 9}, {7, 5}}),
                     size) {
    const auto [w, h] = size;
    const ferry::image out =
        ferry::ops::resize(test_image(), w, h, ferry::interpolation::antialias);
    BOOST_TEST(out.width() == w);
    BOOST_TEST(out.height() == h);
    const cv::Mat area = cv_resize(test_mat(), w, h, cv::INTER_AREA);
    check_pixels(out, area, 1.5, -1, "antialias to " + std::to_string(w) + "x" + std::to_string(h));
}

// What antialiasing is for: a one-pixel checkerboard shrunk ~10x averages to mid-grey with
// `antialias` (as with Pillow's resize), while plain bilinear picks whole black or white pixels.
BOOST_AUTO_TEST_CASE(antialias_averages_detail_that_bilinear_aliases) {
    ferry::image board(97, 61, ferry::pixel_format::gray);
    for (int y = 0; y < 61; ++y)
        for (int x = 0; x < 97; ++x)
            board.data()[static_cast<std::size_t>(y) * 97 + static_cast<std::size_t>(x)] =
                ((x + y) % 2 == 0) ? 255 : 0;
    auto spread = [](const ferry::image& img) {
        int worst = 0;
        for (const std::uint8_t v : img.data()) worst = std::max(worst, std::abs(int{v} - 127));
        return worst;
    };
    const ferry::image aa = ferry::ops::resize(board, 9, 6, ferry::interpolation::antialias);
    const ferry::image bilinear = ferry::ops::resize(board, 9, 6);
    BOOST_TEST(spread(aa) <= 20);
    BOOST_TEST(spread(bilinear) >= 100);
}

// Nearest-neighbour upscaling by 2 repeats every pixel 2 x 2.
BOOST_AUTO_TEST_CASE(nearest_upscale_by_two_repeats_pixels) {
    const ferry::image out =
        ferry::ops::resize(test_image(), 194, 122, ferry::interpolation::nearest);
    cv::Mat want(122, 194, CV_8UC3);
    for (int y = 0; y < 122; ++y)
        for (int x = 0; x < 194; ++x)
            want.at<cv::Vec3b>(y, x) = test_mat().at<cv::Vec3b>(y / 2, x / 2);
    check_pixels(out, want, 0, 0, "nearest x2");
}

// Bicubic and Lanczos upscales stay close to OpenCV's (kernels differ in detail: mean <= 2 on
// smooth content; a wrong filter or offset is far beyond it). Upscales only, where neither
// antialiases.
BOOST_AUTO_TEST_CASE(bicubic_and_lanczos_upscales_stay_close_to_opencv) {
    const ferry::image cubic =
        ferry::ops::resize(test_image(), 150, 100, ferry::interpolation::bicubic);
    check_pixels(cubic, cv_resize(test_mat(), 150, 100, cv::INTER_CUBIC), 2.0, -1, "bicubic");
    const ferry::image lanczos =
        ferry::ops::resize(test_image(), 150, 100, ferry::interpolation::lanczos);
    check_pixels(lanczos, cv_resize(test_mat(), 150, 100, cv::INTER_LANCZOS4), 2.0, -1, "lanczos");
}

// Every filter works on every pixel format and keeps it.
BOOST_AUTO_TEST_CASE(resize_keeps_the_pixel_format) {
    for (const auto format :
         {ferry::pixel_format::gray, ferry::pixel_format::bgr, ferry::pixel_format::rgba}) {
        const ferry::image in = test_image(format);
        for (const auto interp : {ferry::interpolation::nearest, ferry::interpolation::bilinear,
                                  ferry::interpolation::bicubic, ferry::interpolation::area,
                                  ferry::interpolation::lanczos, ferry::interpolation::antialias}) {
            const ferry::image out = ferry::ops::resize(in, 45, 23, interp);
            BOOST_TEST(out.format() == format);
            BOOST_TEST(out.width() == 45);
            BOOST_TEST(out.height() == 23);
        }
        const cv::Mat m = to_mat(in);
        check_pixels(ferry::ops::resize(in, 45, 23), cv_resize(m, 45, 23, cv::INTER_LINEAR), 0.5, 1,
                     std::string("bilinear ") + ferry::to_string(format));
    }
}

// A non-positive target size is an invalid_argument.
BOOST_AUTO_TEST_CASE(resize_rejects_non_positive_sizes) {
    const ferry::image in = test_image();
    BOOST_CHECK_THROW((void)ferry::ops::resize(in, 0, 10), ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::ops::resize(in, 10, 0), ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::ops::resize(in, -5, 10), ferry::invalid_argument);
}

// crop copies exactly the pixels of the box (inner, corner, whole image).
BOOST_AUTO_TEST_CASE(crop_copies_the_pixels_of_the_box) {
    const ferry::image in = test_image();
    for (const ferry::crop_box box :
         {ferry::crop_box{10, 5, 31, 17}, ferry::crop_box{96, 60, 1, 1},
          ferry::crop_box{0, 0, 97, 61}, ferry::crop_box{0, 30, 97, 1}}) {
        const ferry::image out = ferry::ops::crop(in, box);
        check_pixels(out, test_mat()(cv::Rect(box.x, box.y, box.width, box.height)), 0, 0,
                     "crop " + std::to_string(box.x) + "," + std::to_string(box.y) + " " +
                         std::to_string(box.width) + "x" + std::to_string(box.height));
    }
    const ferry::image gray = test_image(ferry::pixel_format::gray);
    check_pixels(ferry::ops::crop(gray, {3, 4, 20, 9}), to_mat(gray)(cv::Rect(3, 4, 20, 9)), 0, 0,
                 "gray crop");
}

// A box reaching outside the image is an invalid_argument (the header says it must lie inside
// but not what happens otherwise: an error is the only safe answer).
BOOST_AUTO_TEST_CASE(crop_outside_the_image_is_rejected) {
    const ferry::image in = test_image();
    for (const ferry::crop_box box :
         {ferry::crop_box{90, 0, 10, 10}, ferry::crop_box{0, 55, 10, 10},
          ferry::crop_box{-1, 0, 10, 10}, ferry::crop_box{0, 0, 0, 10},
          ferry::crop_box{0, 0, 98, 61}}) {
        BOOST_CHECK_THROW((void)ferry::ops::crop(in, box), ferry::invalid_argument);
    }
}

// center_crop takes the central region (odd differences avoided: torchvision rounds half to
// even there, see the report).
BOOST_AUTO_TEST_CASE(center_crop_takes_the_central_region) {
    const ferry::image in = test_image();
    check_pixels(ferry::ops::center_crop(in, 51, 31), test_mat()(cv::Rect(23, 15, 51, 31)), 0, 0,
                 "center 51x31");
    check_pixels(ferry::ops::center_crop(in, 97, 61), test_mat(), 0, 0, "center full");
    check_pixels(ferry::ops::center_crop(in, 1, 1), test_mat()(cv::Rect(48, 30, 1, 1)), 0, 0,
                 "center 1x1");
}

// center_crop pads an image smaller than the crop with zeros on every side.
BOOST_AUTO_TEST_CASE(center_crop_pads_a_smaller_image_with_zeros) {
    const cv::Mat small = test_mat()(cv::Rect(0, 0, 31, 21)).clone();
    const ferry::image in = to_image(small, ferry::pixel_format::rgb);

    cv::Mat want = cv::Mat::zeros(31, 41, CV_8UC3);
    small.copyTo(want(cv::Rect(5, 5, 31, 21)));
    check_pixels(ferry::ops::center_crop(in, 41, 31), want, 0, 0, "padded both ways");

    // Wider crop, shorter crop: padded left and right, cropped top and bottom.
    cv::Mat mixed = cv::Mat::zeros(11, 41, CV_8UC3);
    small(cv::Rect(0, 5, 31, 11)).copyTo(mixed(cv::Rect(5, 0, 31, 11)));
    check_pixels(ferry::ops::center_crop(in, 41, 11), mixed, 0, 0, "padded across, cropped down");
}

// Same generator state, same box; different seeds give different boxes.
BOOST_AUTO_TEST_CASE(random_resized_crop_box_is_reproducible) {
    std::set<std::tuple<int, int, int, int>> distinct;
    for (std::uint64_t seed = 0; seed < 100; ++seed) {
        std::mt19937_64 a(seed);
        std::mt19937_64 b(seed);
        const ferry::crop_box first = ferry::ops::random_resized_crop_box({97, 61}, a);
        const ferry::crop_box second = ferry::ops::random_resized_crop_box({97, 61}, b);
        BOOST_TEST((first == second), "seed " << seed);
        distinct.emplace(first.x, first.y, first.width, first.height);
    }
    BOOST_TEST(distinct.size() >= 50U);
}

// Boxes lie inside the image; unless it is the central fallback, a box's area fraction lies in
// `scale` and its ratio in `ratio` (up to rounding to whole pixels).
BOOST_DATA_TEST_CASE(random_resized_crop_box_respects_scale_and_ratio,
                     bdata::make(std::vector<ferry::image_size>{
                         {97, 61}, {400, 300}, {61, 97}, {224, 224}}),
                     size) {
    const ferry::image_size image = size;
    const double area = static_cast<double>(image.width) * image.height;
    for (const auto& options :
         {ferry::random_resized_crop_options{},
          ferry::random_resized_crop_options{.scale = {0.5, 0.6}, .ratio = {0.9, 1.1}},
          ferry::random_resized_crop_options{.scale = {0.1, 0.3}, .ratio = {1.5, 2.0}}}) {
        int fallbacks = 0;
        constexpr int draws = 1000;
        for (int seed = 0; seed < draws; ++seed) {
            std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
            const ferry::crop_box box = ferry::ops::random_resized_crop_box(image, rng, options);
            BOOST_TEST_REQUIRE(inside(box, image), "seed " << seed << ": box " << box.x << ","
                                                           << box.y << " " << box.width << "x"
                                                           << box.height);
            const bool central = box.x == (image.width - box.width) / 2 &&
                                 box.y == (image.height - box.height) / 2 &&
                                 (box.width == image.width || box.height == image.height);
            if (central) {
                ++fallbacks;
                continue;
            }
            // Widest and narrowest the true (unrounded) box could have been.
            const double w = box.width;
            const double h = box.height;
            BOOST_TEST((w + 0.5) * (h + 0.5) >= options.scale.first * area,
                       "seed " << seed << ": area fraction " << w * h / area);
            BOOST_TEST((w - 0.5) * (h - 0.5) <= options.scale.second * area,
                       "seed " << seed << ": area fraction " << w * h / area);
            BOOST_TEST((w + 0.5) / (h - 0.5) >= options.ratio.first,
                       "seed " << seed << ": ratio " << w / h);
            BOOST_TEST((w - 0.5) / (h + 0.5) <= options.ratio.second,
                       "seed " << seed << ": ratio " << w / h);
        }
        BOOST_TEST_MESSAGE("random_resized_crop_box " << image.width << "x" << image.height
                                                      << " scale [" << options.scale.first << ", "
                                                      << options.scale.second << "]: " << fallbacks
                                                      << " of " << draws << " central");
        // With options that fit the image, the fallback is rare (torchvision: 10 tries).
        BOOST_TEST(fallbacks < draws / 4);
    }
}

// When no try fits, the box is the central crop at the nearest allowed ratio (torchvision's
// rule: the whole image, or its full width or height at the range's bound).
BOOST_AUTO_TEST_CASE(random_resized_crop_box_falls_back_to_a_central_crop) {
    std::mt19937_64 rng(1);
    // Too wide a ratio for a square: full width, height = round(100 / 3) = 33.
    BOOST_TEST((ferry::ops::random_resized_crop_box({100, 100}, rng,
                                                    {.scale = {0.99, 1.0}, .ratio = {3.0, 4.0}}) ==
                ferry::crop_box{0, 33, 100, 33}));
    // Too narrow: full height, width = round(100 / 3) = 33.
    BOOST_TEST((ferry::ops::random_resized_crop_box(
                    {100, 100}, rng, {.scale = {0.99, 1.0}, .ratio = {0.25, 1.0 / 3.0}}) ==
                ferry::crop_box{33, 0, 33, 100}));
    // Ratio fits but no area can (more than the image): the whole image.
    BOOST_TEST((ferry::ops::random_resized_crop_box({100, 80}, rng,
                                                    {.scale = {1.5, 2.0}, .ratio = {0.5, 2.0}}) ==
                ferry::crop_box{0, 0, 100, 80}));
}

// random_resized_crop has the requested size and is the chosen box, resized.
BOOST_AUTO_TEST_CASE(random_resized_crop_resizes_the_chosen_box) {
    const ferry::image in = test_image();
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        std::mt19937_64 box_rng(seed);
        std::mt19937_64 crop_rng(seed);
        const ferry::crop_box box = ferry::ops::random_resized_crop_box(in.size(), box_rng);
        const ferry::image out = ferry::ops::random_resized_crop(in, 64, 48, crop_rng);
        BOOST_TEST_REQUIRE(out.width() == 64);
        BOOST_TEST_REQUIRE(out.height() == 48);
        check_pixels(out, to_mat(ferry::ops::resize(ferry::ops::crop(in, box), 64, 48)), 1.0, -1,
                     "seed " + std::to_string(seed));
        // The generator advanced the same way.
        BOOST_TEST(box_rng() == crop_rng());
    }
}

// horizontal_flip mirrors exactly, for every format; flipping twice gives the image back.
BOOST_AUTO_TEST_CASE(horizontal_flip_mirrors_the_pixels) {
    for (const auto format :
         {ferry::pixel_format::rgb, ferry::pixel_format::gray, ferry::pixel_format::rgba}) {
        const ferry::image in = test_image(format);
        cv::Mat want;
        cv::flip(to_mat(in), want, 1);
        const ferry::image once = ferry::ops::horizontal_flip(in);
        BOOST_TEST(once.format() == format);
        check_pixels(once, want, 0, 0, std::string("flip ") + ferry::to_string(format));
        check_pixels(ferry::ops::horizontal_flip(once), to_mat(in), 0, 0,
                     std::string("flip twice ") + ferry::to_string(format));
    }
}

// horizontal_flip's SIMD blocks and their scalar edges: every width from 1 to 40 and two wide
// ones, every format, as a copy and in place (an rvalue keeps its buffer), against cv::flip.
BOOST_AUTO_TEST_CASE(horizontal_flip_is_exact_at_every_width_and_in_place) {
    std::mt19937 rng(7);
    std::vector<int> widths(40);
    std::iota(widths.begin(), widths.end(), 1);
    widths.insert(widths.end(), {224, 301});
    for (const auto format : {ferry::pixel_format::rgb, ferry::pixel_format::bgr,
                              ferry::pixel_format::gray, ferry::pixel_format::rgba}) {
        for (const int w : widths) {
            ferry::image in(w, 3, format);
            for (auto& b : in.data()) b = static_cast<std::uint8_t>(rng());
            cv::Mat want;
            cv::flip(to_mat(in), want, 1);
            const std::string what =
                std::string(ferry::to_string(format)) + " width " + std::to_string(w);
            check_pixels(ferry::ops::horizontal_flip(in), want, 0, 0, what);
            ferry::image moved = in;
            const std::uint8_t* buffer = moved.data().data();
            const ferry::image flipped = ferry::ops::horizontal_flip(std::move(moved));
            BOOST_TEST(flipped.data().data() == buffer, what << ": an rvalue is flipped in place");
            check_pixels(flipped, want, 0, 0, what + " in place");
        }
    }
}

// normalize computes (v / 255 - mean) / std per channel, C x H x W by default.
BOOST_AUTO_TEST_CASE(normalize_values_in_chw_layout) {
    ferry::image img(2, 1, ferry::pixel_format::rgb);
    const std::uint8_t px[6] = {0, 128, 255, 255, 0, 51};
    std::memcpy(img.data().data(), px, sizeof px);
    const std::vector<float> mean{0.5F, 0.25F, 0.0F};
    const std::vector<float> stdv{0.5F, 0.25F, 2.0F};
    const ferry::tensor t = ferry::ops::normalize(img, {.mean = mean, .std = stdv});
    BOOST_TEST(t.dtype() == ferry::dtype::f32);
    BOOST_TEST(t.shape() == (std::vector<std::int64_t>{3, 1, 2}), boost::test_tools::per_element());
    const float* v = t.data_as<float>();
    for (int c = 0; c < 3; ++c) {
        for (int x = 0; x < 2; ++x) {
            const float want = (static_cast<float>(px[x * 3 + c]) / 255.0F - mean[c]) / stdv[c];
            BOOST_TEST(v[c * 2 + x] == want, boost::test_tools::tolerance(1e-5F));
        }
    }
}

// normalize with chw = false keeps H x W x C, the same values.
BOOST_AUTO_TEST_CASE(normalize_values_in_hwc_layout) {
    const ferry::image img = test_image();
    const ferry::tensor chw = ferry::ops::normalize(img);
    const ferry::tensor hwc = ferry::ops::normalize(img, {.chw = false});
    BOOST_TEST(hwc.shape() == (std::vector<std::int64_t>{61, 97, 3}),
               boost::test_tools::per_element());
    BOOST_TEST(chw.shape() == (std::vector<std::int64_t>{3, 61, 97}),
               boost::test_tools::per_element());
    const float* a = chw.data_as<float>();
    const float* b = hwc.data_as<float>();
    const float mean[3] = {0.485F, 0.456F, 0.406F};  // ImageNet, the default
    const float stdv[3] = {0.229F, 0.224F, 0.225F};
    int mismatches = 0;
    for (int y = 0; y < 61; ++y) {
        for (int x = 0; x < 97; ++x) {
            for (int c = 0; c < 3; ++c) {
                const float want =
                    (static_cast<float>(img.at(x, y, c)) / 255.0F - mean[c]) / stdv[c];
                const float got_chw = a[(c * 61 + y) * 97 + x];
                const float got_hwc = b[(y * 97 + x) * 3 + c];
                if (std::abs(got_chw - want) > 1e-4F || std::abs(got_hwc - want) > 1e-4F)
                    ++mismatches;
            }
        }
    }
    BOOST_TEST(mismatches == 0);
}

// mean/std with the wrong number of entries, or a zero std, are invalid_arguments.
BOOST_AUTO_TEST_CASE(normalize_rejects_mean_and_std_that_do_not_fit) {
    const ferry::image rgb = test_image();
    BOOST_CHECK_THROW((void)ferry::ops::normalize(rgb, {.mean = {0.5F, 0.5F}}),
                      ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::ops::normalize(rgb, {.std = {0.5F, 0.5F, 0.5F, 0.5F}}),
                      ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::ops::normalize(rgb, {.std = {0.5F, 0.0F, 0.5F}}),
                      ferry::invalid_argument);
    const ferry::image gray = test_image(ferry::pixel_format::gray);
    BOOST_CHECK_THROW((void)ferry::ops::normalize(gray),
                      ferry::invalid_argument);  // 3 entries, 1 channel
    const ferry::tensor t = ferry::ops::normalize(gray, {.mean = {0.5F}, .std = {0.5F}});
    BOOST_TEST(t.shape() == (std::vector<std::int64_t>{1, 61, 97}),
               boost::test_tools::per_element());
}

// normalize allocates its result with the given allocator.
BOOST_AUTO_TEST_CASE(normalize_allocates_with_the_given_allocator) {
    recording_allocator alloc;
    const ferry::tensor t = ferry::ops::normalize(test_image(), {.alloc = alloc.get()});
    BOOST_TEST(alloc.st->calls == 1);
    BOOST_TEST(alloc.st->requested >= std::size_t{3 * 61 * 97 * 4});
    BOOST_TEST(static_cast<const void*>(alloc.st->last) == t.data());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
