// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's baseline Huffman decoder (ops/image/jpeg_huffman.cpp), which stands in for
/// libjpeg-turbo's: every decode must come out as libjpeg's own decoder makes it, byte for
/// byte, since only the entropy decoding changes. The reference here is libjpeg-turbo called
/// directly, with the same settings (scale, fast IDCT and plain upsampling or not).
///
/// Cases: noise (long codes, large values, many stuffed 0xFF bytes) and photo-like content, at
/// qualities 10 to 100, with libjpeg's standard and optimized Huffman tables, every common
/// chroma sampling, odd sizes down to 1x1, every DCT scale, restart markers every 1 to 100
/// MCUs; progressive files (libjpeg's decoder keeps those). Then damaged files, cut short or
/// with bytes changed (restart markers lost, repeated or out of order among them):
/// lenient decodes equal libjpeg's lenient decodes (grey where the data ran out), and a strict
/// decode fails wherever libjpeg warns.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include <csetjmp>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <string>
#include <vector>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;

namespace jpeg_huffman_test {

/// libjpeg-turbo decoding on its own, lenient: warnings are counted, not fatal.
struct reference_state {
    jpeg_decompress_struct d{};
    jpeg_error_mgr err{};
    std::jmp_buf jump{};
    int warnings = 0;
    char message[JMSG_LENGTH_MAX] = {};
};

reference_state& state_of(j_common_ptr c) {
    return *reinterpret_cast<reference_state*>(reinterpret_cast<char*>(c) -
                                               offsetof(reference_state, d));
}
void on_error(j_common_ptr c) {
    (*c->err->format_message)(c, state_of(c).message);
    std::longjmp(state_of(c).jump, 1);
}
void on_message(j_common_ptr c, int level) {
    if (level < 0) ++state_of(c).warnings;
}

bool start(reference_state& s, const file_bytes& f, int denom, bool fast) {
    if (setjmp(s.jump)) return false;
    jpeg_mem_src(&s.d, f.data(), static_cast<unsigned long>(f.size()));
    jpeg_read_header(&s.d, TRUE);
    s.d.scale_num = 1;
    s.d.scale_denom = static_cast<unsigned int>(denom);
    s.d.out_color_space = JCS_RGB;
    s.d.dct_method = fast ? JDCT_IFAST : JDCT_ISLOW;
    s.d.do_fancy_upsampling = fast ? FALSE : TRUE;
    jpeg_start_decompress(&s.d);
    return true;
}

bool read(reference_state& s, unsigned char* out, std::size_t row_bytes) {
    if (setjmp(s.jump)) return false;
    while (s.d.output_scanline < s.d.output_height) {
        JSAMPROW row = out + row_bytes * s.d.output_scanline;
        jpeg_read_scanlines(&s.d, &row, 1);
    }
    jpeg_abort_decompress(&s.d);
    return true;
}

/// libjpeg's RGB decode of `f` at 1/`denom`; an empty Mat when libjpeg fails.
cv::Mat libjpeg_decode(const file_bytes& f, int denom, bool fast, int* warnings = nullptr) {
    reference_state s;
    s.d.err = jpeg_std_error(&s.err);
    s.err.error_exit = on_error;
    s.err.emit_message = on_message;
    jpeg_create_decompress(&s.d);
    cv::Mat out;
    if (start(s, f, denom, fast)) {
        out.create(static_cast<int>(s.d.output_height), static_cast<int>(s.d.output_width),
                   CV_8UC3);
        if (!read(s, out.data, out.step)) out = cv::Mat();
    }
    jpeg_destroy_decompress(&s.d);
    if (warnings != nullptr) *warnings = s.warnings;
    return out;
}

struct huffman_sample {
    std::string name;
    file_bytes file;
};

std::vector<huffman_sample> samples() {
    std::vector<huffman_sample> out;
    const cv::Mat pic = photo(333, 222, 3, 7);
    const cv::Mat hiss = uniform_noise(97, 61, 3);
    for (int q : {10, 50, 90, 100}) {
        out.push_back(
            {"photo 4:2:0 q" + std::to_string(q), write_jpeg(pic, jpeg_subsampling::s420, q)});
        out.push_back(
            {"noise 4:4:4 q" + std::to_string(q), write_jpeg(hiss, jpeg_subsampling::s444, q)});
    }
    out.push_back({"photo 4:2:2", write_jpeg(pic, jpeg_subsampling::s422, 85)});
    out.push_back({"photo 4:1:1", write_jpeg(pic, jpeg_subsampling::s411, 85)});
    out.push_back({"photo 4:4:0", write_jpeg(pic, jpeg_subsampling::s440, 85)});
    out.push_back({"photo gray", write_jpeg(pic, jpeg_subsampling::gray, 85)});
    out.push_back({"noise 4:2:0", write_jpeg(hiss, jpeg_subsampling::s420, 97)});
    // Optimized tables: codes of up to 16 bits for the rare symbols.
    out.push_back(
        {"photo optimized",
         encode(".jpg", pic, {cv::IMWRITE_JPEG_QUALITY, 95, cv::IMWRITE_JPEG_OPTIMIZE, 1})});
    out.push_back(
        {"noise optimized",
         encode(".jpg", hiss, {cv::IMWRITE_JPEG_QUALITY, 100, cv::IMWRITE_JPEG_OPTIMIZE, 1})});
    for (const auto& [w, h] :
         std::vector<std::pair<int, int>>{{1, 1}, {7, 5}, {17, 33}, {250, 3}}) {
        out.push_back({"photo " + std::to_string(w) + "x" + std::to_string(h),
                       write_jpeg(photo(w, h, 3, 11), jpeg_subsampling::s420, 90)});
    }
    // Restart markers every MCU, every 3 MCUs, every 100 (the last interval cut short).
    for (int n : {1, 3, 100}) {
        out.push_back({"photo restarts " + std::to_string(n),
                       encode(".jpg", pic, {cv::IMWRITE_JPEG_RST_INTERVAL, n})});
    }
    out.push_back(
        {"noise restarts 2",
         encode(".jpg", hiss, {cv::IMWRITE_JPEG_QUALITY, 100, cv::IMWRITE_JPEG_RST_INTERVAL, 2})});
    // libjpeg's own decoder keeps this one.
    out.push_back({"photo progressive", encode(".jpg", pic, {cv::IMWRITE_JPEG_PROGRESSIVE, 1})});
    return out;
}

const std::vector<huffman_sample>& all_samples() {
    static const std::vector<huffman_sample> s = samples();
    return s;
}

std::vector<std::string> sample_names() {
    std::vector<std::string> names;
    for (const huffman_sample& s : all_samples()) names.push_back(s.name);
    return names;
}

const huffman_sample& huffman_sample_named(const std::string& name) {
    for (const huffman_sample& s : all_samples()) {
        if (s.name == name) return s;
    }
    throw std::logic_error("no sample " + name);
}

}  // namespace jpeg_huffman_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(jpeg_huffman)
using namespace jpeg_huffman_test;

// Every sample at every DCT scale, accurate and fast: exactly libjpeg's pixels, and no warning.
BOOST_DATA_TEST_CASE(decodes_exactly_as_libjpeg_does, bdata::make(sample_names()), name) {
    const huffman_sample& s = huffman_sample_named(name);
    for (int denom : {1, 2, 4, 8}) {
        for (bool fast : {false, true}) {
            int warnings = -1;
            const cv::Mat want = libjpeg_decode(s.file, denom, fast, &warnings);
            BOOST_TEST_REQUIRE(!want.empty(), name);
            BOOST_TEST(warnings == 0, name);
            const cv::Mat got = decode_scaled(s.file, denom, fast, true);
            BOOST_TEST(max_abs_diff(got, want) == 0.0,
                       name << " at 1/" << denom << (fast ? " fast" : ""));
        }
    }
}

// A region decode (libjpeg skips the rows above it, decoding only their Huffman data) and the
// whole decode cropped agree: the decoder's state carries over skipped rows.
BOOST_AUTO_TEST_CASE(a_region_below_skipped_rows_is_the_whole_decode_cropped) {
    for (const char* name : {"photo 4:2:0 q90", "noise 4:4:4 q100", "photo optimized"}) {
        const huffman_sample& s = huffman_sample_named(name);
        const cv::Mat whole = libjpeg_decode(s.file, 1, false);
        for (const ferry::crop_box& box :
             {ferry::crop_box{0, 40, 50, 20}, ferry::crop_box{30, 17, 40, 40},
              ferry::crop_box{60, 60, 37, 1}}) {
            const ferry::image region = ferry::ops::decode_image(as_span(s.file), {.crop = box});
            const cv::Mat want = whole(cv::Rect(box.x, box.y, box.width, box.height));
            BOOST_TEST(max_abs_diff(to_mat(region), want) == 0.0,
                       name << " box " << box.x << "," << box.y);
        }
    }
}

// Files cut short anywhere in their data, or with a byte changed (to 0xFF, 0x00, a marker or
// anything): decoded leniently, exactly what libjpeg makes of them; decoded strictly, an error
// wherever libjpeg warns.
BOOST_AUTO_TEST_CASE(damaged_files_decode_as_libjpeg_decodes_them) {
    int cases = 0;
    int warned = 0;
    for (const char* name : {"photo 4:2:0 q90", "noise 4:4:4 q100", "photo optimized",
                             "photo restarts 3", "noise restarts 2"}) {
        const file_bytes& good = huffman_sample_named(name).file;
        const auto damaged = damaged_jpegs(good, 16, 40, 17);
        for (const auto& [what, f] : damaged) {
            ++cases;
            int warnings = 0;
            const cv::Mat want = libjpeg_decode(f, 1, false, &warnings);
            if (want.empty()) {
                BOOST_CHECK_THROW(decode_scaled(f, 1, false, false), ferry::decode_error);
                continue;
            }
            const cv::Mat got = decode_scaled(f, 1, false, false);
            BOOST_TEST(max_abs_diff(got, want) == 0.0, name << ", " << what);
            if (warnings > 0) {
                ++warned;
                BOOST_CHECK_THROW(decode_scaled(f, 1, false, true), ferry::decode_error);
            }
        }
    }
    BOOST_TEST(warned > cases / 3);  // the damage reached the decoder in most cases
}

// A code that is in no Huffman table: libjpeg-turbo's fast path reads it as the symbol 0
// without a word; ferry's decoder warns, so a strict decode fails with libjpeg's message.
BOOST_AUTO_TEST_CASE(a_code_in_no_table_fails_a_strict_decode) {
    // Optimized tables leave most 16-bit codes unused: a run of 1 bits is in no table.
    file_bytes f = huffman_sample_named("photo optimized").file;
    const std::size_t at = jpeg_header_length(f) + 200;
    // Four stuffed 0xFF data bytes, 32 one bits: whatever value bits (15 at most) end in them,
    // the next code starts with 16 ones, and no code is all ones.
    for (std::size_t k = 0; k < 8; k += 2) {
        f[at + k] = 0xFF;
        f[at + k + 1] = 0x00;
    }
    const cv::Mat want = libjpeg_decode(f, 1, false);
    BOOST_TEST_REQUIRE(!want.empty());
    BOOST_TEST(max_abs_diff(decode_scaled(f, 1, false, false), want) == 0.0);
    try {
        (void)decode_scaled(f, 1, false, true);
        BOOST_FAIL("a strict decode of a bad code succeeded");
    } catch (const ferry::decode_error& e) {
        BOOST_TEST(std::string(e.what()).find("Huffman") != std::string::npos, e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
