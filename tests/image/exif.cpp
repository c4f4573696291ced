// SPDX-License-Identifier: Apache-2.0
/// \file
/// EXIF orientation in the layouts real files use (suite ops/exif): the tag among other IFD0
/// entries, APP1 after JFIF's APP0, both TIFF byte orders, SHORT and LONG, values outside 1..8,
/// damaged EXIF blocks, and PNG's eXIf chunk; pixels against the stored decode turned the way
/// each orientation says, and probe_image's sizes.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <random>

#include "samples.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;
using ferry::ops::decode_image;
using ferry::ops::probe_image;

// Named, not anonymous: data test cases are templates with external linkage.
namespace exif_test {

const std::vector<int> orientations{1, 2, 3, 4, 5, 6, 7, 8};

/// The JPEG and the PNG the cases add EXIF to (97 x 61, photo-like; the JPEG starts with JFIF's
/// APP0, as OpenCV writes it).
const file_bytes& plain_jpeg() {
    return sample_named("jpeg_baseline").file;
}
const file_bytes& plain_png() {
    return sample_named("png_rgb").file;
}

/// The stored pixels of `f` (no orientation applied).
cv::Mat stored_of(const file_bytes& f) {
    return to_mat(decode_image(as_span(f), {.apply_orientation = false}));
}

/// `f` decodes as `stored` turned by `orientation` (exactly: orientation moves pixels only),
/// and probe_image reports that orientation, the stored size and, as oriented_size(), the size
/// decode_image returns.
void check_oriented(const file_bytes& f, const cv::Mat& stored, int orientation,
                    const std::string& what) {
    const ferry::image img = decode_image(as_span(f));
    check_pixels(img, oriented(stored, orientation), 0, 0, what);
    const ferry::image_info info = probe_image(as_span(f));
    BOOST_TEST(info.orientation == orientation, what);
    BOOST_TEST(info.width == stored.cols, what);
    BOOST_TEST(info.height == stored.rows, what);
    BOOST_TEST(info.oriented_size() == img.size(), what);
}

std::string name_of(const exif_layout& l, bool after_app0) {
    return std::string(l.big_endian ? "MM" : "II") + (l.type == 4 ? " LONG" : " SHORT") +
           (l.camera ? " camera IFD0" : " one-entry IFD0") +
           (after_app0 ? ", APP1 after APP0" : ", APP1 first");
}

}  // namespace exif_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(exif)
using namespace exif_test;

// Every orientation, in every layout: either byte order, SHORT or LONG, the tag alone or the
// third of a camera's seven IFD0 entries, APP1 first or after JFIF's APP0.
BOOST_DATA_TEST_CASE(jpeg_orientation_is_read_in_every_layout,
                     bdata::make(orientations) * bdata::make({false, true}) * bdata::make({3, 4}) *
                         bdata::make({false, true}) * bdata::make({false, true}),
                     orientation, big_endian, type, camera, after_app0) {
    const exif_layout layout{.big_endian = big_endian, .type = type, .camera = camera};
    const file_bytes f = with_exif_app1(
        plain_jpeg(), exif_tiff(static_cast<std::uint32_t>(orientation), layout), after_app0);
    check_oriented(
        f, stored_of(plain_jpeg()), orientation,
        "orientation " + std::to_string(orientation) + ", " + name_of(layout, after_app0));
}

// An XMP APP1 segment before the EXIF one does not hide it.
BOOST_AUTO_TEST_CASE(jpeg_orientation_is_found_after_an_xmp_app1_segment) {
    const std::string xmp = std::string("http://ns.adobe.com/xap/1.0/") + '\0' + "<x:xmpmeta/>";
    file_bytes segment{0xFF, 0xE1, 0, static_cast<std::uint8_t>(2 + xmp.size())};
    segment.insert(segment.end(), xmp.begin(), xmp.end());
    file_bytes f = with_exif_app1(plain_jpeg(), exif_tiff(6, {.camera = true}), true);
    f.insert(f.begin() + 2, segment.begin(), segment.end());
    check_oriented(f, stored_of(plain_jpeg()), 6, "XMP, then EXIF orientation 6");
}

// Values that are not an orientation (0, 9 and above, in SHORT and LONG, a LONG whose low half
// would read as 6) read as 1: the image comes out as stored.
BOOST_DATA_TEST_CASE(out_of_range_orientations_read_as_none,
                     bdata::make(std::vector<std::uint32_t>{0, 9, 255, 0xFFFF, 0x10006}) *
                         bdata::make({3, 4}) * bdata::make({false, true}),
                     value, type, big_endian) {
    if (type == 3 && value > 0xFFFF) return;  // not a SHORT
    const exif_layout layout{.big_endian = big_endian, .type = type, .camera = true};
    const std::string what = "value " + std::to_string(value) + ", " + name_of(layout, true);
    const file_bytes jpeg = with_exif_app1(plain_jpeg(), exif_tiff(value, layout), true);
    check_oriented(jpeg, stored_of(plain_jpeg()), 1, "JPEG " + what);
    const file_bytes png = with_png_exif(plain_png(), exif_tiff(value, layout));
    check_oriented(png, stored_of(plain_png()), 1, "PNG " + what);
}

// Damaged EXIF blocks (cut short, offsets out of bounds, a wrong byte
// order mark or magic number, a tag of another type) are ignored: the image decodes as stored
// and probe_image reports orientation 1. The EXIF block is metadata; a damaged one never makes
// a decodable image an error.
BOOST_AUTO_TEST_CASE(damaged_exif_blocks_leave_the_image_as_stored) {
    const file_bytes good = exif_tiff(6, {.camera = true});
    const file_bytes good_mm = exif_tiff(6, {.big_endian = true, .camera = true});
    std::vector<std::pair<std::string, file_bytes>> cases;
    // Cut anywhere before the orientation entry ends (the entry is the third: bytes 34..46).
    for (std::size_t n : {0, 1, 4, 7, 8, 9, 10, 21, 33, 40, 45}) {
        cases.emplace_back("cut to " + std::to_string(n) + " bytes",
                           file_bytes(good.begin(), good.begin() + static_cast<long>(n)));
    }
    auto patched = [&](const char* what, const file_bytes& base, std::size_t at,
                       std::vector<std::uint8_t> bytes) {
        file_bytes f = base;
        std::copy(bytes.begin(), bytes.end(), f.begin() + static_cast<long>(at));
        cases.emplace_back(what, f);
    };
    patched("IFD0 offset past the end", good, 4, {0xF0, 0xFF, 0, 0});
    patched("IFD0 offset inside the header", good, 4, {2, 0, 0, 0});
    patched("IFD0 offset 0xFFFFFFFF", good, 4, {0xFF, 0xFF, 0xFF, 0xFF});
    patched("byte order mark XX", good, 0, {'X', 'X'});
    patched("byte order II, data MM", good_mm, 0, {'I', 'I'});
    patched("magic 43", good, 2, {43, 0});
    patched("orientation as ASCII", good, 8 + 2 + 2 * 12 + 2, {2, 0});
    patched("orientation as RATIONAL", good, 8 + 2 + 2 * 12 + 2, {5, 0});
    // Random bytes after a valid TIFF header.
    std::mt19937 rng(7);
    for (int k = 0; k < 3; ++k) {
        file_bytes f = good;
        for (std::size_t i = 8; i < f.size(); ++i) f[i] = static_cast<std::uint8_t>(rng());
        f[8] = 7;  // a few entries, so the walk over them is exercised
        f[9] = 0;
        cases.emplace_back("random IFD " + std::to_string(k), f);
    }
    const cv::Mat jpeg_stored = stored_of(plain_jpeg());
    const cv::Mat png_stored = stored_of(plain_png());
    for (const auto& [what, tiff] : cases) {
        check_oriented(with_exif_app1(plain_jpeg(), tiff, true), jpeg_stored, 1, "JPEG " + what);
        check_oriented(with_png_exif(plain_png(), tiff), png_stored, 1, "PNG " + what);
    }
    // An entry count past the end of the block: the entries inside it are still read, and the
    // walk stops at the end.
    for (const file_bytes& base : {good, good_mm}) {
        file_bytes f = base;
        f[8] = f[9] = 0xFF;
        check_oriented(with_exif_app1(plain_jpeg(), f, true), jpeg_stored, 6, "JPEG 65535 entries");
        check_oriented(with_png_exif(plain_png(), f), png_stored, 6, "PNG 65535 entries");
        f.resize(8 + 2 + 2 * 12);  // cut before the orientation entry
        check_oriented(with_exif_app1(plain_jpeg(), f, true), jpeg_stored, 1,
                       "JPEG 65535 entries, cut");
        check_oriented(with_png_exif(plain_png(), f), png_stored, 1, "PNG 65535 entries, cut");
    }
    // An APP1 segment with only "Exif\0\0", or an eXIf chunk with nothing.
    check_oriented(with_exif_app1(plain_jpeg(), {}, true), jpeg_stored, 1, "empty APP1");
    check_oriented(with_png_exif(plain_png(), {}), png_stored, 1, "empty eXIf");
}

// An APP1 segment whose length runs past the end of the file is a cut JPEG, not an EXIF
// problem: decode_image and probe_image throw decode_error saying the data is truncated.
BOOST_AUTO_TEST_CASE(an_app1_segment_past_the_end_of_the_file_is_a_truncated_jpeg) {
    file_bytes f = with_exif_app1(plain_jpeg(), exif_tiff(6, {.camera = true}), true);
    const std::size_t app1 = 2 + 2 + ((std::size_t{f[4]} << 8) | f[5]);
    f.resize(app1 + 40);  // inside the EXIF block
    for (const bool probe : {false, true}) {
        const auto e = ferry_test::expect_throw<ferry::decode_error>([&] {
            if (probe) {
                (void)probe_image(as_span(f));
            } else {
                (void)decode_image(as_span(f));
            }
        });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(mentions(e->what(), {"truncated"}), e->what());
    }
}

// A PNG's eXIf chunk orients it like a JPEG's APP1: every orientation, either byte order, the
// chunk before or after the image data, with or without a JPEG-style "Exif\0\0" prefix.
BOOST_DATA_TEST_CASE(png_exif_chunk_orients_the_image,
                     bdata::make(orientations) * bdata::make({false, true}) *
                         bdata::make({false, true}) * bdata::make({false, true}),
                     orientation, big_endian, after_idat, exif_prefix) {
    file_bytes body = exif_tiff(static_cast<std::uint32_t>(orientation),
                                {.big_endian = big_endian, .camera = true});
    if (exif_prefix) body.insert(body.begin(), {'E', 'x', 'i', 'f', 0, 0});
    const file_bytes f = with_png_exif(plain_png(), body, after_idat);
    const std::string what =
        "PNG orientation " + std::to_string(orientation) + (big_endian ? " MM" : " II") +
        (after_idat ? ", after IDAT" : ", before IDAT") + (exif_prefix ? ", Exif prefix" : "");
    const cv::Mat stored = stored_of(plain_png());
    check_pixels(decode_image(as_span(f), {.apply_orientation = false}), stored, 0, 0,
                 what + ": stored pixels");
    check_oriented(f, stored, orientation, what);
}

// With an oriented PNG, a crop box and decode_random_resized_crop are in the coordinates of the
// upright image, as for a JPEG.
BOOST_DATA_TEST_CASE(png_crops_are_in_upright_coordinates, bdata::make(orientations), orientation) {
    const file_bytes f =
        with_png_exif(plain_png(), exif_tiff(static_cast<std::uint32_t>(orientation)));
    const ferry::image upright = decode_image(as_span(f));
    const std::string what = "PNG orientation " + std::to_string(orientation);
    check_oriented(f, stored_of(plain_png()), orientation, what);
    const ferry::crop_box box{5, 7, 23, 31};
    check_pixels(decode_image(as_span(f), {.crop = box}), to_mat(ferry::ops::crop(upright, box)), 0,
                 0, what + ": crop");
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
        std::mt19937_64 a(seed);
        std::mt19937_64 b(seed);
        check_pixels(ferry::ops::decode_random_resized_crop(as_span(f), 20, 30, a),
                     to_mat(ferry::ops::random_resized_crop(upright, 20, 30, b)), 0, 0,
                     what + ": random_resized_crop seed " + std::to_string(seed));
    }
}

// With apply_orientation = false a PNG's eXIf chunk is ignored (the stored pixels), and a resize
// target is meant for the upright image.
BOOST_AUTO_TEST_CASE(png_orientation_can_be_ignored_and_resize_is_upright) {
    const file_bytes f = with_png_exif(plain_png(), exif_tiff(6));
    check_pixels(decode_image(as_span(f), {.apply_orientation = false}),
                 to_mat(decode_image(as_span(plain_png()))), 0, 0, "apply_orientation = false");
    const ferry::image img = decode_image(as_span(f), {.resize = {40, 70}});
    BOOST_TEST(img.size() == (ferry::image_size{40, 70}));
    check_pixels(img, to_mat(ferry::ops::resize(decode_image(as_span(f)), 40, 70)), 0, 0,
                 "orientation 6 resized to 40x70");
}

// probe_image's oriented_size() is the size decode_image returns, for JPEG and PNG and every
// orientation; the stored size stays width x height.
BOOST_DATA_TEST_CASE(probe_reports_the_size_after_orientation, bdata::make(orientations),
                     orientation) {
    const auto o = static_cast<std::uint32_t>(orientation);
    const bool swap = orientation >= 5;
    for (const file_bytes& f : {with_exif_app1(plain_jpeg(), exif_tiff(o, {.camera = true}), true),
                                with_png_exif(plain_png(), exif_tiff(o, {.big_endian = true}))}) {
        const ferry::image_info info = probe_image(as_span(f));
        const std::string what = info.format + " orientation " + std::to_string(orientation);
        BOOST_TEST(info.orientation == orientation, what);
        BOOST_TEST((info.width == 97 && info.height == 61), what);
        BOOST_TEST(
            info.oriented_size() == (swap ? ferry::image_size{61, 97} : ferry::image_size{97, 61}),
            what);
        BOOST_TEST(decode_image(as_span(f)).size() == info.oriented_size(), what);
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
