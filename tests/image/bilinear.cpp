// SPDX-License-Identifier: Apache-2.0
/// \file
/// The bilinear resize of 3-channel images (ops/image/bilinear_x86.cpp, AVX2 where the CPU has
/// it): within a level of OpenCV's INTER_LINEAR over sizes that hit every tail and edge case,
/// views inside bigger images equal to resized copies of the same pixels (rows read up to the
/// end of their buffer), and the kernel in use where the CPU has AVX2.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "transforms_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;

namespace bilinear_test {

/// Sources from one pixel to photo size, widths at several residues of 16 bytes, and shapes
/// one pixel thin.
inline const std::vector<ferry::image_size> sources{{1, 1},     {1, 7},     {7, 1},   {5, 3},
                                                    {17, 3},    {16, 16},   {97, 61}, {333, 222},
                                                    {500, 375}, {224, 224}, {640, 97}};
/// Targets: the usual 224 square, reductions up to ~30x (the kernel's limit is ~3x: beyond,
/// OpenCV), enlargements, and widths whose 3 * width is not a multiple of 16.
inline const std::vector<ferry::image_size> targets{{224, 224}, {1, 1},    {5, 3},     {31, 17},
                                                    {48, 30},   {200, 61}, {400, 300}, {113, 7}};

std::string describe(ferry::image_size from, ferry::image_size to) {
    return std::to_string(from.width) + "x" + std::to_string(from.height) + " -> " +
           std::to_string(to.width) + "x" + std::to_string(to.height);
}

cv::Mat cv_linear(const cv::Mat& m, int width, int height) {
    return transforms_test::cv_resize(m, width, height, cv::INTER_LINEAR);
}

}  // namespace bilinear_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(bilinear)
using namespace bilinear_test;

// Every source size to every target, RGB and BGR: at most one level from OpenCV anywhere, and
// a small mean (~0.13 on photos where the kernel runs; 0 where OpenCV does the work).
BOOST_DATA_TEST_CASE(within_a_level_of_opencv_at_every_size, bdata::make(sources), from) {
    const cv::Mat m = photo(from.width, from.height, 3, 77U + static_cast<unsigned>(from.width));
    for (const ferry::pixel_format format : {ferry::pixel_format::rgb, ferry::pixel_format::bgr}) {
        const ferry::image img = to_image(m, format);
        for (const ferry::image_size to : targets) {
            const ferry::image out = ferry::ops::resize(img, to.width, to.height);
            BOOST_TEST(out.width() == to.width);
            BOOST_TEST(out.height() == to.height);
            BOOST_TEST(out.format() == format);
            check_pixels(out, cv_linear(m, to.width, to.height), 0.25, 1,
                         describe(from, to) + " " + ferry::to_string(format));
        }
    }
}

// random_resized_crop resizes a view of the box inside the image (rows further apart than the
// box is wide; the box's last row may end at the image's last byte): the pixels equal those of
// the box copied out and resized, and stay within a level of OpenCV on the same box.
BOOST_AUTO_TEST_CASE(views_resize_like_their_copies) {
    const cv::Mat m = photo(500, 375, 3, 4242);
    const ferry::image img = to_image(m, ferry::pixel_format::rgb);
    for (int draw = 0; draw < 60; ++draw) {
        std::mt19937_64 rng(static_cast<std::uint64_t>(draw));
        std::mt19937_64 same = rng;
        const ferry::crop_box box = ferry::ops::random_resized_crop_box({500, 375}, same);
        const ferry::image out = ferry::ops::random_resized_crop(img, 224, 224, rng);
        const ferry::image copied = ferry::ops::resize(ferry::ops::crop(img, box), 224, 224);
        const std::string what = "box " + std::to_string(box.x) + "," + std::to_string(box.y) +
                                 " " + std::to_string(box.width) + "x" + std::to_string(box.height);
        check_pixels(out, to_mat(copied), 0, 0, what + " view against copy");
        check_pixels(out, cv_linear(m(cv::Rect(box.x, box.y, box.width, box.height)), 224, 224),
                     0.25, 1, what + " against OpenCV");
    }
    // The bottom-right corner: the view's last row is the image's last bytes.
    const ferry::crop_box corner{500 - 173, 375 - 151, 173, 151};
    const ferry::image out = ferry::ops::resize(ferry::ops::crop(img, corner), 224, 224);
    check_pixels(out,
                 cv_linear(m(cv::Rect(corner.x, corner.y, corner.width, corner.height)), 224, 224),
                 0.25, 1, "bottom-right corner");
}

// Where the CPU has AVX2 the kernel does the work, reducing and enlarging: its pixels differ
// from OpenCV's somewhere (its weights are finer), which OpenCV itself never does; elsewhere
// they are OpenCV's.
BOOST_DATA_TEST_CASE(the_kernel_runs_where_the_cpu_has_avx2,
                     bdata::make(std::vector<ferry::image_size>{
                         {333, 222}, {97, 61}, {221, 233}, {150, 200}, {224, 100}}),
                     from) {
    const cv::Mat m = photo(from.width, from.height, 3, 9);
    const ferry::image out = ferry::ops::resize(to_image(m, ferry::pixel_format::rgb), 224, 224);
    const double mean = mean_abs_diff(to_mat(out), cv_linear(m, 224, 224));
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") != 0;
#else
    const bool avx2 = false;
#endif
    BOOST_TEST_MESSAGE(describe(from, {224, 224})
                       << " AVX2: " << avx2 << ", mean |diff| against OpenCV " << mean);
    if (avx2) {
        BOOST_TEST(mean > 0.0);
    } else {
        BOOST_TEST(mean == 0.0);
    }
    BOOST_TEST(mean <= 0.25);
}

// Gray and RGBA stay on OpenCV: its pixels exactly.
BOOST_AUTO_TEST_CASE(other_channel_counts_are_opencvs) {
    for (const int channels : {1, 4}) {
        const cv::Mat m = photo(333, 222, channels, 10);
        const auto format = channels == 1 ? ferry::pixel_format::gray : ferry::pixel_format::rgba;
        const ferry::image out = ferry::ops::resize(to_image(m, format), 224, 224);
        check_pixels(out, cv_linear(m, 224, 224), 0, 0, std::to_string(channels) + " channels");
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
