// SPDX-License-Identifier: Apache-2.0
/// \file
/// probe_image: format, stored size, channels, bit depth and EXIF orientation, read from the
/// header alone.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "samples.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;
using ferry::ops::probe_image;

// Named, not anonymous: data test cases are templates with external linkage.
namespace probe_test {

const std::vector<int> orientations{1, 2, 3, 4, 5, 6, 7, 8};

}  // namespace probe_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(probe)
using namespace probe_test;

// Every format and variant reports its format, stored size, channels and bit depth.
BOOST_DATA_TEST_CASE(reports_format_size_channels_and_depth, bdata::make(all_samples), name) {
    const sample& s = sample_named(name);
    const ferry::image_info info = probe_image(as_span(s.file));
    BOOST_TEST(info.format == s.format);
    BOOST_TEST(info.width == s.width);
    BOOST_TEST(info.height == s.height);
    if (s.channels != 0) BOOST_TEST(info.channels == s.channels);
    if (s.bit_depth != 0) BOOST_TEST(info.bit_depth == s.bit_depth);
    BOOST_TEST(info.orientation == 1);
}

// The EXIF orientation is reported (both byte orders), with the size as stored.
BOOST_DATA_TEST_CASE(reports_exif_orientation_and_stored_size,
                     bdata::make(orientations) * bdata::make({false, true}), orientation,
                     big_endian) {
    const file_bytes f =
        with_exif_orientation(sample_named("jpeg_baseline").file, orientation, big_endian);
    const ferry::image_info info = probe_image(as_span(f));
    BOOST_TEST(info.format == "jpeg");
    BOOST_TEST(info.orientation == orientation);
    BOOST_TEST(info.width == 97);
    BOOST_TEST(info.height == 61);
}

// Probing reads the header only: a JPEG cut right after its SOS header and a PNG cut after its
// IHDR chunk still probe (what a ranged read of the first few KB gives).
BOOST_AUTO_TEST_CASE(needs_only_the_header) {
    const file_bytes jpeg = with_exif_orientation(sample_named("jpeg_baseline").file, 6, false);
    const file_bytes jpeg_head(
        jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg_header_length(jpeg)));
    const ferry::image_info j = probe_image(as_span(jpeg_head));
    BOOST_TEST(j.format == "jpeg");
    BOOST_TEST(j.width == 97);
    BOOST_TEST(j.height == 61);
    BOOST_TEST(j.orientation == 6);

    const file_bytes& png = sample_named("png_16bit").file;
    const file_bytes png_head(png.begin(), png.begin() + 33);  // signature + IHDR
    const ferry::image_info p = probe_image(as_span(png_head));
    BOOST_TEST(p.format == "png");
    BOOST_TEST(p.width == 97);
    BOOST_TEST(p.height == 61);
    BOOST_TEST(p.bit_depth == 16);
}

// Probing bytes that are no image is a decode_error, as decoding them is.
BOOST_AUTO_TEST_CASE(rejects_empty_and_foreign_bytes) {
    BOOST_CHECK_THROW((void)probe_image({}), ferry::decode_error);
    const ferry::bytes text = ferry::bytes::from_string("this is a text file, not a picture\n");
    BOOST_CHECK_THROW((void)probe_image(text), ferry::decode_error);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
