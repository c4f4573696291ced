// SPDX-License-Identifier: Apache-2.0
/// \file
/// decode_image against an independent decoder (OpenCV) and against the source pixels, for every
/// format and variant; the decode options: pixel formats, resize, reduce_to, EXIF orientation.
///
/// Tolerances: 8-bit lossless files must come out exactly as written. For JPEG and lossy WebP
/// both ferry and OpenCV use libjpeg-turbo / libwebp, so the mean absolute difference to
/// OpenCV's decode must be at most 1 level (a different IDCT or upsampling choice stays below
/// that; a wrong colour conversion or a stride bug does not).
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "samples.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;
using ferry::ops::decode_image;

// Named, not anonymous: data test cases are templates with external linkage.
namespace decode_test {

/// The first three channels of `m` (RGB of RGBA); `m` itself otherwise.
cv::Mat colour_of(const cv::Mat& m) {
    if (m.channels() != 4) return m;
    cv::Mat rgb;
    cv::cvtColor(m, rgb, cv::COLOR_RGBA2RGB);
    return rgb;
}

/// OpenCV's tolerance-free counterpart: mean 0 and max 0 for 8-bit lossless files, mean 1 for
/// lossy ones and 16-bit PNG (rounding 16 -> 8 bits may differ by one level).
std::pair<double, double> tolerance_to_opencv(const sample& s) {
    if (s.lossy) return {1.0, -1.0};
    if (s.bit_depth > 8) return {1.0, 1.0};
    return {0.0, 0.0};
}

const std::vector<int> orientations{1, 2, 3, 4, 5, 6, 7, 8};

/// Full decode of the large JPEG with OpenCV, RGB.
const cv::Mat& large_reference() {
    static const cv::Mat m = reference_decode(large_jpeg(), cv::IMREAD_COLOR);
    return m;
}

cv::Mat cv_resize(const cv::Mat& m, int width, int height, int interp) {
    cv::Mat out;
    cv::resize(m, out, cv::Size(width, height), 0, 0, interp);
    return out;
}

}  // namespace decode_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(decode)
using namespace decode_test;

// Every format and variant decodes to the RGB pixels OpenCV decodes and to the source pixels.
BOOST_DATA_TEST_CASE(decodes_to_the_same_pixels_as_opencv, bdata::make(all_samples), name) {
    const sample& s = sample_named(name);
    const ferry::image img = decode_image(as_span(s.file));
    BOOST_TEST(img.format() == ferry::pixel_format::rgb);
    const auto [mean_tol, max_tol] = tolerance_to_opencv(s);
    check_pixels(img, reference_decode(s.file, cv::IMREAD_COLOR), mean_tol, max_tol,
                 name + " vs OpenCV");
    check_pixels(img, colour_of(s.source), s.source_mean_tol, s.source_max_tol,
                 name + " vs source");
}

// Decoding does not depend on where the bytes sit in memory (no aligned loads of the input).
BOOST_DATA_TEST_CASE(decodes_unaligned_input_the_same, bdata::make(all_samples), name) {
    const sample& s = sample_named(name);
    std::vector<std::uint8_t> shifted(s.file.size() + 1);
    std::copy(s.file.begin(), s.file.end(), shifted.begin() + 1);
    const auto input = as_span(shifted).subspan(1);
    const ferry::image aligned = decode_image(as_span(s.file));
    const ferry::image unaligned = decode_image(input);
    check_pixels(unaligned, to_mat(aligned), 0, 0, name);
}

// BGR is the RGB decode with red and blue swapped, exactly.
BOOST_DATA_TEST_CASE(bgr_is_rgb_with_red_and_blue_swapped, bdata::make(all_samples), name) {
    const sample& s = sample_named(name);
    const ferry::image rgb = decode_image(as_span(s.file));
    const ferry::image bgr = decode_image(as_span(s.file), {.format = ferry::pixel_format::bgr});
    BOOST_TEST(bgr.format() == ferry::pixel_format::bgr);
    cv::Mat want;
    cv::cvtColor(to_mat(rgb), want, cv::COLOR_RGB2BGR);
    check_pixels(bgr, want, 0, 0, name);
}

// RGBA keeps the file's alpha exactly (PNG, palette tRNS, gray + alpha, lossless WebP).
BOOST_DATA_TEST_CASE(rgba_keeps_the_alpha_of_the_file, bdata::make(alpha_samples), name) {
    const sample& s = sample_named(name);
    const ferry::image img = decode_image(as_span(s.file), {.format = ferry::pixel_format::rgba});
    BOOST_TEST(img.format() == ferry::pixel_format::rgba);
    check_pixels(img, s.source, 0, 0, name);
}

// Without alpha in the file, RGBA is the RGB decode with alpha 255 everywhere.
BOOST_DATA_TEST_CASE(rgba_of_an_opaque_image_has_alpha_255, bdata::make(opaque_samples), name) {
    const sample& s = sample_named(name);
    const ferry::image rgb = decode_image(as_span(s.file));
    const ferry::image rgba = decode_image(as_span(s.file), {.format = ferry::pixel_format::rgba});
    cv::Mat want;
    cv::cvtColor(to_mat(rgb), want, cv::COLOR_RGB2RGBA);  // alpha 255
    check_pixels(rgba, want, 0, 0, name);
}

// The default (RGB) drops alpha and keeps the stored colours (no blending).
BOOST_DATA_TEST_CASE(rgb_drops_alpha_and_keeps_colours, bdata::make(alpha_samples), name) {
    const sample& s = sample_named(name);
    const ferry::image img = decode_image(as_span(s.file));
    BOOST_TEST(img.channels() == 3);
    check_pixels(img, colour_of(s.source), 0, 0, name);
}

// Gray output matches OpenCV's grayscale decode; gray files come out exactly as stored.
BOOST_DATA_TEST_CASE(gray_matches_opencv_grayscale, bdata::make(all_samples), name) {
    const sample& s = sample_named(name);
    const ferry::image img = decode_image(as_span(s.file), {.format = ferry::pixel_format::gray});
    BOOST_TEST(img.format() == ferry::pixel_format::gray);
    BOOST_TEST(img.channels() == 1);
    const bool stored_gray = name == "png_gray" || name == "png_gray1" || name == "bmp_gray8";
    // Colour to gray: ITU-R BT.601 luma either way, rounding may differ by a level.
    check_pixels(img, reference_decode(s.file, cv::IMREAD_GRAYSCALE), 1.0, stored_gray ? 0 : -1,
                 name + " vs OpenCV");
}

// A CMYK JPEG with varying K decodes like OpenCV's (Adobe inverted CMYK: R = C * K / 255).
BOOST_AUTO_TEST_CASE(cmyk_jpeg_multiplies_by_inverted_k) {
    const cv::Mat rgb = swap_red_blue(photo(97, 61, 3, 11));
    cv::Mat cmyk(rgb.rows, rgb.cols, CV_8UC4);
    cv::Mat want(rgb.rows, rgb.cols, CV_8UC3);
    for (int y = 0; y < rgb.rows; ++y) {
        for (int x = 0; x < rgb.cols; ++x) {
            const auto p = rgb.at<cv::Vec3b>(y, x);
            const int k = 255 - 2 * x;  // stored K falls from 255 to 63 left to right
            cmyk.at<cv::Vec4b>(y, x) = {p[0], p[1], p[2], static_cast<std::uint8_t>(k)};
            for (int c = 0; c < 3; ++c)
                want.at<cv::Vec3b>(y, x)[c] = static_cast<std::uint8_t>((p[c] * k + 127) / 255);
        }
    }
    const file_bytes f = write_jpeg(cmyk, jpeg_subsampling::s444, 95);
    const ferry::image img = decode_image(as_span(f));
    check_pixels(img, reference_decode(f, cv::IMREAD_COLOR), 1.0, -1, "cmyk vs OpenCV");
    check_pixels(img, want, 4.0, -1, "cmyk vs R = C * K / 255");
}

// A 32-bit BMP decodes to its colour channels.
BOOST_AUTO_TEST_CASE(bmp_32bit_decodes_its_colour_channels) {
    const cv::Mat bgra = photo(97, 61, 4, 12);
    const file_bytes f = encode(".bmp", bgra);
    BOOST_TEST_REQUIRE(f[28] == 32);  // bits per pixel, as OpenCV wrote it
    const ferry::image img = decode_image(as_span(f));
    cv::Mat want;
    cv::cvtColor(bgra, want, cv::COLOR_BGRA2RGB);
    check_pixels(img, want, 0, 0, "bmp 32-bit");
}

// Each EXIF orientation (both TIFF byte orders) comes out the way it is meant to be seen.
BOOST_DATA_TEST_CASE(exif_orientation_is_applied,
                     bdata::make(orientations) * bdata::make({false, true}), orientation,
                     big_endian) {
    const file_bytes& plain = sample_named("jpeg_baseline").file;
    const file_bytes f = with_exif_orientation(plain, orientation, big_endian);
    const cv::Mat stored = reference_decode(plain, cv::IMREAD_COLOR);
    const ferry::image img = decode_image(as_span(f));
    check_pixels(img, oriented(stored, orientation), 1.0, -1,
                 "orientation " + std::to_string(orientation) + (big_endian ? " MM" : " II"));
    // And so does OpenCV: the test file says what it should.
    BOOST_TEST(
        mean_abs_diff(reference_decode(f, cv::IMREAD_COLOR), oriented(stored, orientation)) == 0.0);
}

// apply_orientation = false returns the pixels as stored.
BOOST_DATA_TEST_CASE(unapplied_orientation_keeps_the_stored_layout, bdata::make(orientations),
                     orientation) {
    const file_bytes& plain = sample_named("jpeg_baseline").file;
    const file_bytes f = with_exif_orientation(plain, orientation, false);
    const ferry::image img = decode_image(as_span(f), {.apply_orientation = false});
    check_pixels(img, reference_decode(plain, cv::IMREAD_COLOR), 1.0, -1,
                 "orientation " + std::to_string(orientation));
}

// resize gives exactly the requested size, down or up, for every format.
BOOST_DATA_TEST_CASE(resize_gives_exactly_the_requested_size,
                     bdata::make(std::vector<std::string>{
                         "jpeg_baseline", "jpeg_progressive", "jpeg_gray", "jpeg_cmyk", "png_rgb",
                         "png_palette", "webp_lossy", "bmp_palette4"}),
                     name) {
    const sample& s = sample_named(name);
    for (const ferry::image_size size :
         {ferry::image_size{33, 17}, ferry::image_size{1, 1}, ferry::image_size{97, 61},
          ferry::image_size{200, 151}, ferry::image_size{20, 60}}) {
        const ferry::image img = decode_image(as_span(s.file), {.resize = size});
        BOOST_TEST(img.size() == size, name << " resized to " << size.width << "x" << size.height
                                            << " came out " << img.width() << "x" << img.height());
        BOOST_TEST(img.channels() == 3);
        BOOST_TEST(img.data().size() == static_cast<std::size_t>(size.width * size.height * 3));
    }
}

// resize on a lossless file is a full decode and OpenCV's bilinear resize (within a level).
BOOST_AUTO_TEST_CASE(resize_of_a_lossless_image_matches_opencv_bilinear) {
    const sample& s = sample_named("png_rgb");
    for (const ferry::image_size size : {ferry::image_size{41, 29}, ferry::image_size{150, 100}}) {
        const ferry::image img = decode_image(as_span(s.file), {.resize = size});
        check_pixels(img, cv_resize(s.source, size.width, size.height, cv::INTER_LINEAR), 0.5, 1,
                     "png to " + std::to_string(size.width) + "x" + std::to_string(size.height));
    }
}

// A strong JPEG downscale (DCT scaling, then resize) stays close to full decode + resize.
// They are not equal: the reduced IDCT averages each block where bilinear samples points (and
// this content has noise), so the bound is a mean of 6 levels, still far below what a wrong
// picture, channel order or orientation gives (tens of levels).
BOOST_AUTO_TEST_CASE(resize_of_a_large_jpeg_stays_close_to_full_decode_and_resize) {
    for (const ferry::image_size size : {ferry::image_size{100, 75}, ferry::image_size{90, 60},
                                         ferry::image_size{37, 23}, ferry::image_size{190, 140}}) {
        const ferry::image img = decode_image(as_span(large_jpeg()), {.resize = size});
        check_pixels(
            img, cv_resize(large_reference(), size.width, size.height, cv::INTER_LINEAR), 6.0, -1,
            "jpeg 400x300 to " + std::to_string(size.width) + "x" + std::to_string(size.height));
    }
}

// reduce_to picks the smallest DCT scale (1/2, 1/4, 1/8) whose result is at least the target.
BOOST_AUTO_TEST_CASE(reduce_to_picks_the_smallest_dct_scale_not_below_the_target) {
    struct expectation {
        ferry::image_size target;
        ferry::image_size want;
    };
    for (const auto& [target, want] : std::vector<expectation>{{{100, 75}, {100, 75}},
                                                               {{101, 75}, {200, 150}},
                                                               {{100, 76}, {200, 150}},
                                                               {{50, 38}, {50, 38}},
                                                               {{50, 37}, {50, 38}},
                                                               {{10, 10}, {50, 38}},
                                                               {{200, 150}, {200, 150}},
                                                               {{201, 150}, {400, 300}},
                                                               {{400, 300}, {400, 300}},
                                                               {{800, 600}, {400, 300}}}) {
        const ferry::image img = decode_image(as_span(large_jpeg()), {.reduce_to = target});
        BOOST_TEST(img.size() == want, "reduce_to " << target.width << "x" << target.height
                                                    << ": got " << img.width() << "x"
                                                    << img.height() << ", want " << want.width
                                                    << "x" << want.height);
    }
}

// A reduced decode has the pixels of libjpeg's scaled IDCT (what OpenCV's IMREAD_REDUCED_* do).
BOOST_AUTO_TEST_CASE(reduce_to_pixels_match_opencv_reduced_decode) {
    struct expectation {
        ferry::image_size target;
        int flag;
    };
    for (const auto& [target, flag] :
         std::vector<expectation>{{{200, 150}, cv::IMREAD_REDUCED_COLOR_2},
                                  {{100, 75}, cv::IMREAD_REDUCED_COLOR_4},
                                  {{50, 38}, cv::IMREAD_REDUCED_COLOR_8}}) {
        const ferry::image img = decode_image(as_span(large_jpeg()), {.reduce_to = target});
        check_pixels(
            img, reference_decode(large_jpeg(), flag), 1.0, -1,
            "reduce_to " + std::to_string(target.width) + "x" + std::to_string(target.height));
    }
}

// reduce_to on a PNG (no DCT scaling) decodes at full size.
BOOST_AUTO_TEST_CASE(reduce_to_decodes_a_png_at_full_size) {
    const cv::Mat bgr = large_photo();
    const file_bytes f = encode(".png", bgr);
    const ferry::image img = decode_image(as_span(f), {.reduce_to = {100, 75}});
    check_pixels(img, swap_red_blue(bgr), 0, 0, "png 400x300 reduce_to 100x75");
}

// When both are set, resize wins: the result has the resize size.
BOOST_AUTO_TEST_CASE(resize_takes_precedence_over_reduce_to) {
    const ferry::image img =
        decode_image(as_span(large_jpeg()), {.resize = {64, 48}, .reduce_to = {200, 150}});
    BOOST_TEST(img.width() == 64);
    BOOST_TEST(img.height() == 48);
}

// With orientation and resize, the output has the requested size and the rotated content.
BOOST_AUTO_TEST_CASE(orientation_and_resize_give_the_requested_size_rotated) {
    const file_bytes f = with_exif_orientation(large_jpeg(), 6, false);
    const cv::Mat upright = oriented(large_reference(), 6);  // 300 x 400
    for (const ferry::image_size size :
         {ferry::image_size{150, 200}, ferry::image_size{75, 100}, ferry::image_size{200, 150}}) {
        const ferry::image img = decode_image(as_span(f), {.resize = size});
        check_pixels(img, cv_resize(upright, size.width, size.height, cv::INTER_LINEAR), 6.0, -1,
                     "orientation 6 resized to " + std::to_string(size.width) + "x" +
                         std::to_string(size.height));
    }
}

// With orientation and reduce_to, the reduced image comes out rotated. (A 400x300 file with
// orientation 6 and a 100x100 target gives 150x200 whether the target is read in stored or in
// display orientation; the header does not say which.)
BOOST_AUTO_TEST_CASE(orientation_and_reduce_to_rotate_the_reduced_image) {
    const file_bytes f = with_exif_orientation(large_jpeg(), 6, true);
    const ferry::image img = decode_image(as_span(f), {.reduce_to = {100, 100}});
    check_pixels(img, oriented(reference_decode(large_jpeg(), cv::IMREAD_REDUCED_COLOR_2), 6), 1.0,
                 -1, "orientation 6 reduce_to 100x100");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
