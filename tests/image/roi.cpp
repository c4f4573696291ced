// SPDX-License-Identifier: Apache-2.0
/// \file
/// Region decoding (`decode_options::crop`) and `decode_random_resized_crop`.
///
/// Tolerances: a JPEG region comes from the same libjpeg-turbo IDCT, upsampling and colour
/// conversion as the whole image (the region decoder widens what it decodes so that the edge
/// columns' chroma upsampling sees the same neighbours), so it must equal the whole decode
/// cropped exactly (max abs diff 0), at every DCT scale, for 4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1,
/// gray, progressive, restart markers and YCCK. PNG, WebP and BMP regions are the whole decode
/// cropped, exactly. `decode_random_resized_crop` picks the same box as `random_resized_crop`
/// and equals it exactly where no reduced scale is used; with one it stays within a mean
/// absolute difference of 1 level per crop (measured: 0.18 on average and 0.58 at worst over 200
/// crops of 500x375 photo-like JPEGs to 224x224 and 112x112; the reduced IDCT averages where the
/// full-size resize samples, and the box is rounded outward to whole reduced pixels).
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>

#include "../support/damaged_copies.hpp"
#include "roi_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;
using ferry::crop_box;
using ferry::ops::decode_image;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(roi)
using namespace roi_test;

// A JPEG region (every subsampling, gray, progressive, restart markers, YCCK) has exactly the
// pixels of the whole image decoded and cropped, for boxes at the corners, on and off iMCU
// boundaries, 1x1 and the whole image.
BOOST_DATA_TEST_CASE(jpeg_region_is_the_whole_decode_cropped, bdata::make(jpeg_names), name) {
    const file_bytes& f = jpegs().at(name);
    const ferry::image whole = decode_image(as_span(f));
    for (const crop_box& box : boxes_for(whole.width(), whole.height())) {
        const ferry::image region = decode_image(as_span(f), {.crop = box});
        check_pixels(region, to_mat(ferry::ops::crop(whole, box)), 0, 0,
                     name + " region " + describe(box));
    }
}

// The same in every output format (BGR, gray, RGBA): the region never changes the colours.
BOOST_DATA_TEST_CASE(jpeg_region_in_every_pixel_format,
                     bdata::make(std::vector<std::string>{"large_420", "large_444", "large_gray",
                                                          "large_progressive", "large_cmyk"}) *
                         bdata::make(std::vector<ferry::pixel_format>{ferry::pixel_format::bgr,
                                                                      ferry::pixel_format::gray,
                                                                      ferry::pixel_format::rgba}),
                     name, format) {
    const file_bytes& f = jpegs().at(name);
    const ferry::image whole = decode_image(as_span(f), {.format = format});
    for (const crop_box& box : boxes_for(whole.width(), whole.height())) {
        const ferry::image region = decode_image(as_span(f), {.format = format, .crop = box});
        BOOST_TEST(region.format() == format);
        check_pixels(region, to_mat(ferry::ops::crop(whole, box)), 0, 0,
                     name + " " + ferry::to_string(format) + " region " + describe(box));
    }
}

// With reduce_to, a region is decoded at the smallest DCT scale 1/d at which it still covers the
// target, and is the 1/d image's pixels under the box rounded outward, exactly.
BOOST_DATA_TEST_CASE(jpeg_region_with_reduce_to_is_the_reduced_image_rounded_outward,
                     bdata::make(jpeg_names), name) {
    const file_bytes& f = jpegs().at(name);
    const ferry::image_info info = ferry::ops::probe_image(as_span(f));
    std::map<int, ferry::image> reduced;
    for (const int d : {1, 2, 4, 8}) {
        reduced[d] = decode_image(as_span(f), {.reduce_to = whole_at(info.width, info.height, d)});
        BOOST_TEST_REQUIRE(reduced[d].size() == whole_at(info.width, info.height, d));
    }
    int scales_seen = 0;
    std::map<int, int> count;
    for (const crop_box& box : boxes_for(info.width, info.height)) {
        // Targets that land on each scale: the box's own size at 1/8, 1/4, 1/2, and 1x1.
        for (const int d : {2, 4, 8}) {
            const crop_box at = scaled_box(box, d);
            for (const ferry::image_size target :
                 {ferry::image_size{at.width, at.height}, ferry::image_size{1, 1}}) {
                const int want_d = expected_denom(box, target);
                ++count[want_d];
                const ferry::image region =
                    decode_image(as_span(f), {.reduce_to = target, .crop = box});
                check_pixels(
                    region, to_mat(ferry::ops::crop(reduced[want_d], scaled_box(box, want_d))), 0,
                    0,
                    name + " region " + describe(box) + " reduce_to " +
                        std::to_string(target.width) + "x" + std::to_string(target.height) +
                        " (1/" + std::to_string(want_d) + ")");
            }
        }
    }
    for (const auto& [d, n] : count) scales_seen += n > 0 ? 1 : 0;
    BOOST_TEST(scales_seen >= 3, name << ": only " << scales_seen << " DCT scales exercised");
}

// PNG, WebP and BMP regions are the whole decode cropped (exact; these formats decode whole).
BOOST_DATA_TEST_CASE(other_formats_region_is_the_whole_decode_cropped,
                     bdata::make(std::vector<std::string>{
                         "png_rgb", "png_rgba", "png_palette", "png_interlaced", "png_16bit",
                         "webp_lossless", "webp_lossless_alpha", "webp_lossy", "bmp_24bit",
                         "bmp_palette4"}) *
                         bdata::make(std::vector<ferry::pixel_format>{ferry::pixel_format::rgb,
                                                                      ferry::pixel_format::rgba}),
                     name, format) {
    const sample& s = sample_named(name);
    const ferry::image whole = decode_image(as_span(s.file), {.format = format});
    for (const crop_box& box : boxes_for(whole.width(), whole.height())) {
        // reduce_to does not apply to these formats: the region is still at full scale.
        const ferry::image region =
            decode_image(as_span(s.file), {.format = format, .reduce_to = {1, 1}, .crop = box});
        check_pixels(region, to_mat(ferry::ops::crop(whole, box)), 0, 0,
                     name + " " + ferry::to_string(format) + " region " + describe(box));
    }
}

// crop + resize: the region, resized to exactly the requested size (a JPEG via DCT scaling when
// the region is at least twice as large), close to cropping and resizing the whole image.
BOOST_AUTO_TEST_CASE(crop_with_resize_is_the_region_resized) {
    const file_bytes& f = jpegs().at("large_420");
    const ferry::image whole = decode_image(as_span(f));
    for (const crop_box& box :
         {crop_box{10, 20, 300, 200}, crop_box{0, 0, 400, 300}, crop_box{101, 53, 64, 64}}) {
        for (const ferry::image_size size :
             {ferry::image_size{64, 48}, ferry::image_size{30, 30}}) {
            const ferry::image img = decode_image(as_span(f), {.resize = size, .crop = box});
            BOOST_TEST(img.size() == size);
            const ferry::image want =
                ferry::ops::resize(ferry::ops::crop(whole, box), size.width, size.height);
            check_pixels(img, to_mat(want), 6.0, -1, "region " + describe(box) + " resized");
        }
    }
    const sample& png = sample_named("png_rgb");
    const crop_box box{5, 7, 50, 40};
    const ferry::image img = decode_image(as_span(png.file), {.resize = {25, 20}, .crop = box});
    check_pixels(
        img,
        to_mat(ferry::ops::resize(ferry::ops::crop(decode_image(as_span(png.file)), box), 25, 20)),
        0, 0, "png region resized");
}

// A JPEG resized by the decoder (from the rows it wrote, with no region image in between) has
// exactly the pixels of the same decode without the resize, resized: every subsampling, every
// filter, with and without a crop, with the thread's row buffer reused across sizes and a region
// too large for it (1400x1100 RGB, over 4 MiB) in between.
BOOST_DATA_TEST_CASE(resize_in_the_decoder_is_the_reduced_decode_resized, bdata::make(jpeg_names),
                     name) {
    static const file_bytes huge = write_jpeg(photo(1400, 1100, 3, 5), jpeg_subsampling::s420, 85);
    const auto check = [](const file_bytes& f, const std::string& what, bool boxes) {
        const ferry::image whole = decode_image(as_span(f));
        std::vector<std::optional<crop_box>> crops{std::nullopt};
        if (boxes) {
            for (const crop_box& b : boxes_for(whole.width(), whole.height())) {
                crops.emplace_back(b);
            }
        }
        for (const auto& box : crops) {
            std::vector<ferry::image_size> sizes{{64, 48}, {31, 45}};
            if (!box) sizes.push_back({800, 600});  // an upscale, or a region over 4 MiB
            for (const ferry::image_size size : sizes) {
                for (const auto interp :
                     {ferry::interpolation::bilinear, ferry::interpolation::antialias,
                      ferry::interpolation::area}) {
                    const ferry::image one_step =
                        decode_image(as_span(f), {.resize = size, .interp = interp, .crop = box});
                    const ferry::image reduced =
                        decode_image(as_span(f), {.reduce_to = size, .crop = box});
                    const std::string where =
                        what + (box ? " region " + describe(*box) : std::string(" whole")) +
                        " to " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                        " interp " + std::to_string(static_cast<int>(interp));
                    BOOST_TEST_REQUIRE(one_step.size() == size, where);
                    check_pixels(
                        one_step,
                        to_mat(ferry::ops::resize(reduced, size.width, size.height, interp)), 0, 0,
                        where);
                }
            }
        }
    };
    check(jpegs().at(name), name, true);
    if (name == "large_420") check(huge, "1400x1100", false);
}

// An empty box, or one that does not lie inside the image, is a ferry::invalid_argument naming
// the box and the image's size (as seen, after EXIF orientation); the decoder is left usable.
BOOST_AUTO_TEST_CASE(invalid_boxes_are_invalid_argument_naming_the_box) {
    const auto message = [](const file_bytes& f, const ferry::decode_options& o) {
        const auto e =
            expect_throw<ferry::invalid_argument>([&] { (void)decode_image(as_span(f), o); });
        if (e) BOOST_TEST(e->code() == ferry::errc::invalid_argument);
        return e.what();
    };
    const file_bytes& jpeg = sample_named("jpeg_baseline").file;  // 97 x 61
    const file_bytes& png = sample_named("png_rgb").file;
    for (const file_bytes* f : {&jpeg, &png}) {
        BOOST_TEST(message(*f, {.crop = crop_box{93, 0, 5, 5}}) ==
                   "decode_image: decode_options::crop = 5x5 at (93, 0) is not inside the 97x61 "
                   "image");
        BOOST_TEST(message(*f, {.crop = crop_box{0, 0, 0, 5}}) ==
                   "decode_image: decode_options::crop = 0x5 at (0, 0) is not inside the 97x61 "
                   "image");
        BOOST_TEST(message(*f, {.crop = crop_box{-1, 0, 5, 5}}).find("not inside") !=
                   std::string::npos);
        BOOST_TEST(message(*f, {.crop = crop_box{0, 61, 1, 1}}).find("(0, 61)") !=
                   std::string::npos);
        BOOST_TEST(message(*f, {.crop = crop_box{0, 0, 98, 61}}).find("98x61") !=
                   std::string::npos);
        BOOST_TEST(message(*f, {.reduce_to = {10, 10}, .crop = crop_box{0, 0, 97, 62}})
                       .find("not inside") != std::string::npos);
    }
    // Orientation 6 shows the 97 x 61 file as 61 x 97.
    const file_bytes rotated = with_exif_orientation(jpeg, 6, false);
    BOOST_TEST(
        message(rotated, {.crop = crop_box{0, 0, 97, 61}}) ==
        "decode_image: decode_options::crop = 97x61 at (0, 0) is not inside the 61x97 image");
    // And the decoder is fine afterwards.
    const ferry::image whole = decode_image(as_span(jpeg));
    check_pixels(decode_image(as_span(jpeg), {.crop = crop_box{1, 2, 30, 40}}),
                 to_mat(ferry::ops::crop(whole, {1, 2, 30, 40})), 0, 0, "after the bad boxes");
}

// A region of an EXIF-oriented JPEG is the region of the upright image (all eight orientations),
// with and without a reduced scale; with apply_orientation = false, of the stored image.
BOOST_DATA_TEST_CASE(region_of_an_oriented_jpeg_is_the_upright_image_cropped,
                     bdata::make(std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}), orientation) {
    for (const char* name : {"jpeg_baseline", "large_420", "large_422"}) {
        const file_bytes f =
            with_exif_orientation(jpegs().at(name), orientation, orientation % 2 == 0);
        const ferry::image upright = decode_image(as_span(f));
        const std::string what = std::string(name) + " orientation " + std::to_string(orientation);
        for (const crop_box& box : boxes_for(upright.width(), upright.height())) {
            check_pixels(decode_image(as_span(f), {.crop = box}),
                         to_mat(ferry::ops::crop(upright, box)), 0, 0,
                         what + " region " + describe(box));
        }
        const ferry::image stored = decode_image(as_span(f), {.apply_orientation = false});
        for (const crop_box& box : boxes_for(stored.width(), stored.height())) {
            check_pixels(decode_image(as_span(f), {.apply_orientation = false, .crop = box}),
                         to_mat(ferry::ops::crop(stored, box)), 0, 0,
                         what + " unapplied, region " + describe(box));
        }
        // At 1/2 scale the region is the reduced upright image's pixels under the box (the box
        // rounded outward in the stored image; for these even sizes the same as in the upright).
        if (upright.width() % 2 == 0 && upright.height() % 2 == 0) {
            const ferry::image half = decode_image(
                as_span(f), {.reduce_to = {upright.width() / 2, upright.height() / 2}});
            for (const crop_box& box : {crop_box{10, 20, 100, 80}, crop_box{33, 17, 64, 90}}) {
                check_pixels(decode_image(as_span(f), {.reduce_to = {scaled_box(box, 2).width,
                                                                     scaled_box(box, 2).height},
                                                       .crop = box}),
                             to_mat(ferry::ops::crop(half, scaled_box(box, 2))), 0, 0,
                             what + " 1/2 region " + describe(box));
            }
        }
    }
}

// Truncated and byte-flipped JPEGs (10 cuts and 10 flips per file), decoded with a crop, strict
// and lenient, with and without reduce_to: a decode_error or an image of the region's size,
// never anything else; strict, every cut is a decode_error (this runs under ASan + UBSan). The
// intact file decodes afterwards.
BOOST_DATA_TEST_CASE(damaged_jpegs_with_a_crop_fail_cleanly_or_give_the_region,
                     bdata::make(jpeg_names), name) {
    const file_bytes& f = jpegs().at(name);
    const ferry::image whole = decode_image(as_span(f));
    const int w = whole.width();
    const int h = whole.height();
    const auto damaged = ferry_test::damaged_copies(
        f, {.header_flips = 5, .seed = 77U + static_cast<std::uint32_t>(f.size())});
    const std::vector<crop_box> boxes{
        {w / 4, h / 4, w / 2, h / 2}, {0, 0, 9, 9}, {w - 9, h - 9, 9, 9}};
    int images = 0;
    int errors = 0;
    for (const auto& copy : damaged) {
        const std::string& how = copy.how;
        const file_bytes& bytes = copy.data;
        for (const crop_box& box : boxes) {
            for (const bool strict : {true, false}) {
                for (const ferry::image_size reduce :
                     {ferry::image_size{}, ferry::image_size{2, 2}}) {
                    const std::string what = name + " " + how + " region " + describe(box) +
                                             (strict ? " strict" : " lenient") +
                                             (reduce.width > 0 ? " reduced" : "");
                    try {
                        const ferry::image img =
                            decode_image(as_span(bytes),
                                         {.reduce_to = reduce,
                                          .max_pixels = 16ULL * static_cast<std::uint64_t>(w * h),
                                          .strict = strict,
                                          .crop = box});
                        // A damaged header may declare another size; the box must still fit it
                        // (otherwise invalid_argument, checked below), and the result is its size
                        // at some scale.
                        BOOST_TEST(
                            (!img.empty() && img.width() >= 1 && img.height() >= 1 &&
                             img.width() <= box.width && img.height() <= box.height &&
                             img.data().size() ==
                                 static_cast<std::size_t>(img.height()) * img.row_bytes()),
                            what << ": invalid image " << img.width() << "x" << img.height());
                        if (reduce.width == 0) {
                            BOOST_TEST((img.width() == box.width && img.height() == box.height),
                                       what);
                        }
                        // Strict mode notices every cut, even below the region.
                        if (strict && copy.cut) BOOST_ERROR(what << ": decoded although cut");
                        ++images;
                    } catch (const ferry::decode_error&) {
                        ++errors;
                    } catch (const ferry::invalid_argument& e) {
                        // Only when the damage shrank the declared size below the box.
                        BOOST_TEST(std::string(e.what()).find("not inside") != std::string::npos,
                                   what << ": " << e.what());
                    } catch (const std::exception& e) {
                        BOOST_ERROR(what << ": threw " << typeid(e).name() << ": " << e.what());
                    }
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(name << " damaged with a crop: " << images << " images, " << errors
                            << " decode_errors");
    check_pixels(decode_image(as_span(f), {.crop = boxes[0]}),
                 to_mat(ferry::ops::crop(whole, boxes[0])), 0, 0, name + " intact, afterwards");
}

// Strict decoding still notices a cut below the region (the EOI marker is missing): a file cut
// at 90% is a decode_error saying truncated, even for a region at the top.
BOOST_DATA_TEST_CASE(strict_region_notices_truncation_below_the_region, bdata::make(jpeg_names),
                     name) {
    const file_bytes& f = jpegs().at(name);
    const file_bytes cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(f.size() * 9 / 10));
    for (const ferry::image_size reduce : {ferry::image_size{}, ferry::image_size{1, 1}}) {
        const std::string msg =
            expect_throw<ferry::decode_error>(
                [&] {
                    (void)decode_image(as_span(cut),
                                       {.reduce_to = reduce, .crop = crop_box{0, 0, 8, 8}});
                },
                name + " cut to 90%, region at the top")
                .what();
        BOOST_TEST(mentions(msg, {"truncat", "premature", "end of"}), name << ": " << msg);
    }
}

// strict = false keeps a truncated JPEG's region; rows that were in the file are right.
BOOST_AUTO_TEST_CASE(lenient_region_of_a_truncated_jpeg_keeps_the_rows_that_are_there) {
    const file_bytes& full = jpegs().at("large_420");
    const file_bytes cut(full.begin(),
                         full.begin() + static_cast<std::ptrdiff_t>(full.size() * 6 / 10));
    const ferry::image whole = decode_image(as_span(full));
    const crop_box top{37, 11, 300, 60};
    const ferry::image img = decode_image(as_span(cut), {.strict = false, .crop = top});
    check_pixels(img, to_mat(ferry::ops::crop(whole, top)), 0, 0, "top region of the cut file");
    // A region below the cut comes out (grey), the right size.
    const ferry::image low =
        decode_image(as_span(cut), {.strict = false, .crop = crop_box{0, 280, 50, 20}});
    BOOST_TEST(low.size() == (ferry::image_size{50, 20}));
}

// max_pixels counts the stored image, with a crop too, and refuses it before decoding.
BOOST_AUTO_TEST_CASE(max_pixels_applies_to_the_whole_image_not_the_region) {
    const std::string msg =
        expect_throw<ferry::decode_error>(
            [] {
                (void)decode_image(as_span(jpegs().at("large_420")),
                                   {.max_pixels = 100'000, .crop = crop_box{0, 0, 10, 10}});
            },
            "400x300 with a 10x10 crop, max_pixels 100000")
            .what();
    BOOST_TEST(mentions(msg, {"max_pixels"}), msg);
    const file_bytes huge = jpeg_declaring(sample_named("jpeg_baseline").file, 60000, 60000);
    BOOST_CHECK_THROW((void)decode_image(as_span(huge), {.crop = crop_box{0, 0, 10, 10}}),
                      ferry::decode_error);
}

// A damaged file leaves nothing behind in the per-thread decompressor: good regions decode
// exactly afterwards, on the same thread.
BOOST_AUTO_TEST_CASE(a_bad_file_does_not_break_later_region_decodes) {
    const file_bytes& good = jpegs().at("large_422");
    const ferry::image whole = decode_image(as_span(good));
    const crop_box box{50, 60, 123, 77};
    const file_bytes& other = jpegs().at("jpeg_progressive");
    for (const std::size_t n :
         {std::size_t{20}, std::size_t{60}, std::size_t{150}, other.size() / 2}) {
        const file_bytes cut(other.begin(), other.begin() + static_cast<std::ptrdiff_t>(n));
        BOOST_CHECK_THROW((void)decode_image(as_span(cut), {.crop = crop_box{0, 0, 4, 4}}),
                          ferry::decode_error);
        try {  // lenient: an image where the header is whole, an error where it is not
            (void)decode_image(as_span(cut), {.strict = false, .crop = crop_box{0, 0, 4, 4}});
        } catch (const ferry::decode_error&) {
        }
    }
    check_pixels(decode_image(as_span(good), {.crop = box}), to_mat(ferry::ops::crop(whole, box)),
                 0, 0, "after the bad files");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
