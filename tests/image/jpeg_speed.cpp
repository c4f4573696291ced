// SPDX-License-Identifier: Apache-2.0
/// \file
/// The JPEG decoder's speed options: `scale_slack` (a DCT scale that comes a little under the
/// target), `fast` (fast IDCT, plain upsampling) and a strict region decode that looks for the
/// EOI marker instead of decoding the rest (`check_rest` brings the full read back).
///
/// Tolerances, against the accurate decode of the same file (photo-like content, 400x300 and
/// 500x375, quality 90): `fast` stays within a mean absolute difference of 1.5 levels and 24 at
/// most per subsampling (4:2:0 and 4:1:1 differ most: plain upsampling repeats chroma samples);
/// a region decoded with `fast` equals the `fast` whole decode cropped, exactly. A resize from a
/// DCT scale up to 10% under the target stays within 2 levels mean of the full decode resized.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "roi_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;
using ferry::crop_box;
using ferry::image_size;
using ferry::ops::decode_image;
using ferry_test::expect_throw;

namespace jpeg_speed_test {

/// The denominator the contract promises for a box and target with a slack: the largest of 8,
/// 4, 2 whose scaled box is at least ceil(target * (1 - slack)) each way, else 1.
int denom_with_slack(const crop_box& box, image_size target, double slack) {
    const auto need = [&](int t) {
        return std::max(1, static_cast<int>(std::ceil(t * (1.0 - slack) - 1e-9)));
    };
    return roi_test::expected_denom(box, {need(target.width), need(target.height)});
}

}  // namespace jpeg_speed_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(jpeg_speed)
using namespace roi_test;
using namespace jpeg_speed_test;

// Scale selection at many image sizes, targets and slacks, whole and with a crop: the result is
// the box at the scale the contract names, and never under the target by more than the slack.
BOOST_AUTO_TEST_CASE(scale_slack_picks_the_smallest_scale_within_it) {
    int checked = 0;
    int used_slack = 0;  // cases where the slack gave a smaller scale than 0 would
    for (const image_size size : {image_size{442, 430}, image_size{500, 375}, image_size{97, 61},
                                  image_size{333, 517}, image_size{64, 64}}) {
        const file_bytes f =
            write_jpeg(photo(size.width, size.height, 3, 5), jpeg_subsampling::s420, 90);
        for (const image_size target : {image_size{224, 224}, image_size{112, 96},
                                        image_size{30, 20}, image_size{210, 200}}) {
            for (const double slack : {0.0, 0.02, 0.05, 0.1, 0.25, 0.5}) {
                for (const crop_box box : {crop_box{0, 0, size.width, size.height},
                                           crop_box{size.width / 5, size.height / 7,
                                                    size.width * 3 / 4, size.height * 4 / 5}}) {
                    const bool whole = box.width == size.width && box.height == size.height;
                    const int d = denom_with_slack(box, target, slack);
                    const crop_box want = scaled_box(box, d);
                    const std::string what =
                        std::to_string(size.width) + "x" + std::to_string(size.height) + " box " +
                        describe(box) + " target " + std::to_string(target.width) + "x" +
                        std::to_string(target.height) + " slack " + std::to_string(slack);
                    ferry::decode_options o{.reduce_to = target, .scale_slack = slack};
                    if (!whole) o.crop = box;
                    const ferry::image img = decode_image(as_span(f), o);
                    BOOST_TEST((img.size() == image_size{want.width, want.height}), what);
                    if (d > 1 || box.width >= target.width) {
                        BOOST_TEST(img.width() >= std::ceil(target.width * (1 - slack) - 1e-9),
                                   what);
                        BOOST_TEST(img.height() >= std::ceil(target.height * (1 - slack) - 1e-9),
                                   what);
                    }
                    if (d != expected_denom(box, target)) ++used_slack;
                    // With resize, the result is always exactly the target.
                    ferry::decode_options r{.resize = target, .scale_slack = slack};
                    if (!whole) r.crop = box;
                    BOOST_TEST(decode_image(as_span(f), r).size() == target, what);
                    ++checked;
                }
            }
        }
    }
    BOOST_TEST(checked == 5 * 4 * 6 * 2);
    BOOST_TEST(used_slack > 10);  // the slack changes the scale in a good share of the cases
}

// The case: 442x430 resized to 224x224 decodes at 1/2 (221x215) with a 5% slack, at
// full size without.
BOOST_AUTO_TEST_CASE(a_scale_just_under_the_target_is_taken_with_a_slack) {
    const file_bytes f = write_jpeg(photo(442, 430, 3, 9), jpeg_subsampling::s420, 90);
    BOOST_TEST(
        (decode_image(as_span(f), {.reduce_to = {224, 224}}).size() == image_size{442, 430}));
    BOOST_TEST((decode_image(as_span(f), {.reduce_to = {224, 224}, .scale_slack = 0.05}).size() ==
                image_size{221, 215}));
}

BOOST_AUTO_TEST_CASE(a_slack_outside_zero_to_half_is_invalid) {
    const file_bytes& f = large_jpeg();
    for (const double slack : {-0.01, 0.51, 1.0, std::numeric_limits<double>::quiet_NaN()}) {
        const std::string msg =
            expect_throw<ferry::invalid_argument>(
                [&] {
                    (void)decode_image(as_span(f), {.reduce_to = {9, 9}, .scale_slack = slack});
                },
                "slack " + std::to_string(slack))
                .what();
        BOOST_TEST(msg.find("scale_slack") != std::string::npos, msg);
        BOOST_TEST(msg.find("outside [0, 0.5]") != std::string::npos, msg);
    }
}

// A resize from a scale up to 10% under the target is close to the full decode resized the same
// way (both antialiased).
BOOST_AUTO_TEST_CASE(a_resize_from_a_scale_under_the_target_stays_close) {
    for (const image_size size : {image_size{442, 430}, image_size{500, 375}}) {
        const file_bytes f =
            write_jpeg(photo(size.width, size.height, 3, 13), jpeg_subsampling::s420, 90);
        const image_size target{size.width * 53 / 100, size.height * 53 / 100};
        const ferry::image accurate =
            decode_image(as_span(f), {.resize = target, .interp = ferry::interpolation::antialias});
        const ferry::image slack = decode_image(
            as_span(f),
            {.resize = target, .interp = ferry::interpolation::antialias, .scale_slack = 0.1});
        const double mean = mean_abs_diff(to_mat(slack), to_mat(accurate));
        BOOST_TEST_MESSAGE(size.width << "x" << size.height << " -> " << target.width << "x"
                                      << target.height << " from 1/2: mean |diff| " << mean);
        BOOST_TEST(mean > 0.0);  // it did take the 1/2 scale
        BOOST_TEST(mean <= 2.0);
    }
}

// `fast` against the accurate decode, per subsampling: close, not equal.
BOOST_DATA_TEST_CASE(fast_decode_is_close_to_the_accurate_one,
                     bdata::make(std::vector<std::string>{"large_420", "large_444", "large_422",
                                                          "large_440", "large_411", "large_gray",
                                                          "large_progressive", "large_cmyk"}),
                     name) {
    const file_bytes& f = jpegs().at(name);
    const ferry::image accurate = decode_image(as_span(f));
    const ferry::image fast = decode_image(as_span(f), {.fast = true});
    BOOST_TEST(fast.size() == accurate.size());
    const double mean = mean_abs_diff(to_mat(fast), to_mat(accurate));
    const double most = max_abs_diff(to_mat(fast), to_mat(accurate));
    BOOST_TEST_MESSAGE(name << " fast: mean |diff| " << mean << ", max " << most);
    BOOST_TEST(mean > 0.0);  // the option reaches the decoder
    BOOST_TEST(mean <= 1.5, name);
    BOOST_TEST(most <= 24.0, name);
}

// A region decoded with `fast` is the `fast` whole decode cropped, exactly, at every scale.
BOOST_DATA_TEST_CASE(fast_region_equals_the_fast_whole_decode_cropped, bdata::make(jpeg_names),
                     name) {
    const file_bytes& f = jpegs().at(name);
    for (const int d : {1, 2, 4}) {
        const ferry::image whole = decode_image(as_span(f), {.fast = true});
        const image_size at = whole_at(whole.width(), whole.height(), d);
        const ferry::image scaled = decode_image(as_span(f), {.reduce_to = at, .fast = true});
        for (const crop_box& box : boxes_for(whole.width(), whole.height())) {
            const ferry::image region =
                decode_image(as_span(f), {.reduce_to = {1, 1}, .crop = box, .fast = true});
            const int rd = expected_denom(box, {1, 1});
            const ferry::image base =
                rd == d ? scaled
                        : decode_image(as_span(f),
                                       {.reduce_to = whole_at(whole.width(), whole.height(), rd),
                                        .fast = true});
            check_pixels(region, to_mat(ferry::ops::crop(base, scaled_box(box, rd))), 0, 0,
                         name + " fast region " + describe(box));
            const ferry::image full_region = decode_image(as_span(f), {.crop = box, .fast = true});
            check_pixels(full_region, to_mat(ferry::ops::crop(whole, box)), 0, 0,
                         name + " fast full-scale region " + describe(box));
        }
    }
}

// A strict region decode of a baseline file whose data below the region is damaged but ends
// with an EOI marker (cut at 80%, EOI appended): by default the region comes out, with the
// intact file's pixels; with check_rest, and for a whole decode, it is a decode_error.
BOOST_AUTO_TEST_CASE(damage_below_a_region_is_found_with_check_rest) {
    const file_bytes& full = jpegs().at("large_420");
    file_bytes damaged(full.begin(),
                       full.begin() + static_cast<std::ptrdiff_t>(full.size() * 8 / 10));
    damaged.push_back(0xFF);
    damaged.push_back(0xD9);
    const crop_box top{40, 8, 120, 40};
    const ferry::image region = decode_image(as_span(damaged), {.crop = top});
    check_pixels(region, to_mat(ferry::ops::crop(decode_image(as_span(full)), top)), 0, 0,
                 "region above the damage");
    for (const bool whole : {false, true}) {
        ferry::decode_options o{.check_rest = true};
        if (!whole) o.crop = top;
        const std::string msg =
            expect_throw<ferry::decode_error>([&] { (void)decode_image(as_span(damaged), o); },
                                              whole ? "whole decode" : "region with check_rest")
                .what();
        BOOST_TEST(mentions(msg, {"corrupt", "premature", "truncat"}), msg);
    }
}

// Without an EOI marker (a cut file), the default strict region decode fails with the message
// a whole decode gives.
BOOST_DATA_TEST_CASE(a_cut_file_fails_a_strict_region_decode_as_a_whole_one,
                     bdata::make(std::vector<std::string>{"large_420", "large_444", "large_restart",
                                                          "large_gray"}),
                     name) {
    const file_bytes& full = jpegs().at(name);
    for (const std::size_t keep : {full.size() / 2, full.size() - 40, full.size() - 1}) {
        const file_bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(keep));
        const std::string whole = expect_throw<ferry::decode_error>(
                                      [&] { (void)decode_image(as_span(cut)); }, name + " whole")
                                      .what();
        const std::string region =
            expect_throw<ferry::decode_error>(
                [&] {
                    (void)decode_image(as_span(cut), {.crop = crop_box{0, 0, 16, 16}});
                },
                name + " region")
                .what();
        BOOST_TEST(region == whole, name << " cut to " << keep);
    }
}

// decode_random_resized_crop takes the same options and still gives exactly the target size.
BOOST_AUTO_TEST_CASE(random_resized_crop_takes_the_speed_options) {
    const file_bytes& f = large_jpeg();
    for (int k = 0; k < 20; ++k) {
        std::mt19937_64 a(static_cast<std::uint64_t>(k));
        std::mt19937_64 b(static_cast<std::uint64_t>(k));
        const ferry::image plain = ferry::ops::decode_random_resized_crop(as_span(f), 96, 80, a);
        const ferry::image quick = ferry::ops::decode_random_resized_crop(
            as_span(f), 96, 80, b, {.scale_slack = 0.25, .fast = true});
        BOOST_TEST((quick.size() == image_size{96, 80}));
        BOOST_TEST(a() == b());  // the same draws
        BOOST_TEST(mean_abs_diff(to_mat(quick), to_mat(plain)) <= 3.0, "crop " << k);
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
