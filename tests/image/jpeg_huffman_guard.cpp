// SPDX-License-Identifier: Apache-2.0
/// \file
/// What guards ferry's Huffman decoder (ops/image/jpeg_huffman.*, jpeg_abi.*): the tables it
/// refuses by itself, the bytes between the data and the EOI marker a strict decode fails on,
/// the counts of which decoder each decode used (process-wide and in a stage's stats), the
/// `FERRY_JPEG_HUFFMAN` switch, the check of the loaded libjpeg's layout, and restart-marker and
/// damaged files at every DCT scale and below skipped rows, byte for byte against libjpeg's own
/// slow path (fed a few bytes at a time, so that its fast path never runs).
#include <boost/test/unit_test.hpp>

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <string>
#include <vector>

#include "ferry/ferry.hpp"
#include "libjpeg_reference.hpp"
#include "ops/image/jpeg_abi.hpp"
#include "ops/image/jpeg_huffman.hpp"
#include "support.hpp"

using namespace ops_test;

namespace jpeg_huffman_guard_test {

/// ferry's RGB decode of `f` at 1/`denom`.
cv::Mat ferry_decode(const file_bytes& f, int denom, bool strict) {
    const ferry::image_info info = ferry::ops::probe_image(as_span(f));
    return to_mat(ferry::ops::decode_image(
        as_span(f),
        {.reduce_to = {(info.width + denom - 1) / denom, (info.height + denom - 1) / denom},
         .strict = strict}));
}

/// `box` at 1/`denom`, rounded outward (decode_options::crop with reduce_to).
cv::Rect scaled(const ferry::crop_box& box, int denom) {
    const int x0 = box.x / denom;
    const int y0 = box.y / denom;
    const int x1 = (box.x + box.width + denom - 1) / denom;
    const int y1 = (box.y + box.height + denom - 1) / denom;
    return {x0, y0, x1 - x0, y1 - y0};
}

/// ferry's RGB decode of the region `box` at 1/`denom` (rows above it skipped).
cv::Mat ferry_region(const file_bytes& f, const ferry::crop_box& box, int denom, bool strict) {
    const cv::Rect r = scaled(box, denom);
    return to_mat(ferry::ops::decode_image(
        as_span(f), {.reduce_to = {r.width, r.height}, .strict = strict, .crop = box}));
}

/// A DHT table from its counts by code length (1 to 16) and its symbols.
JHUFF_TBL table(const std::vector<int>& counts, const std::vector<int>& symbols) {
    JHUFF_TBL t{};
    for (std::size_t l = 0; l < counts.size(); ++l) t.bits[l + 1] = static_cast<UINT8>(counts[l]);
    for (std::size_t i = 0; i < symbols.size(); ++i) t.huffval[i] = static_cast<UINT8>(symbols[i]);
    return t;
}

/// `good` with `junk` inserted before its final EOI marker.
file_bytes with_bytes_before_eoi(const file_bytes& good, const std::vector<std::uint8_t>& junk) {
    file_bytes f(good.begin(), good.end() - 2);
    f.insert(f.end(), junk.begin(), junk.end());
    f.push_back(0xFF);
    f.push_back(JPEG_EOI);
    return f;
}

file_bytes baseline_photo() {
    return write_jpeg(photo(333, 222, 3, 7), jpeg_subsampling::s420, 90);
}

}  // namespace jpeg_huffman_guard_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(jpeg_huffman_guard)
using namespace jpeg_huffman_guard_test;

// ferry's table builder refuses a DC symbol above 15 wherever its code lies (a category above
// 15 would shift past the bit buffer), not only because libjpeg happens to check first.
BOOST_AUTO_TEST_CASE(the_table_builder_refuses_dc_symbols_above_15) {
    using ferry::ops::codec::jpeg::build_table;
    ferry::ops::codec::jpeg::huffman_table out;
    // One code of each length 1 to 11: 0, 10, 110, ..., 11111111110 (none all ones).
    const std::vector<int> counts{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    std::vector<int> symbols{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    BOOST_TEST(build_table(table(counts, symbols), true, out));
    for (const std::size_t at : {std::size_t{0}, std::size_t{9}, std::size_t{10}}) {
        std::vector<int> bad = symbols;
        bad[at] = 16;  // a code of length at + 1: within the look-ahead, or past it
        out = {};
        BOOST_TEST(!build_table(table(counts, bad), true, out), "symbol 16 at length " << at + 1);
        // The same symbol is an AC run/size pair (run 1, size 0): fine there.
        out = {};
        BOOST_TEST(build_table(table(counts, bad), false, out), "AC, length " << at + 1);
    }
}

// ferry's table builder refuses a code made of 1 bits only (T.81 C: no code is all ones; libjpeg
// refuses such a table, and so does ferry by itself).
BOOST_AUTO_TEST_CASE(the_table_builder_refuses_all_ones_codes) {
    using ferry::ops::codec::jpeg::build_table;
    ferry::ops::codec::jpeg::huffman_table out;
    BOOST_TEST(build_table(table({0, 3}, {0, 1, 2}), true, out));  // 00, 01, 10
    out = {};
    BOOST_TEST(!build_table(table({2}, {0, 1}), true, out));  // 0, 1
    out = {};
    BOOST_TEST(!build_table(table({0, 4}, {0, 1, 2, 3}), true, out));  // 00 .. 11
    // 0, 10, 110, ..., then all 16 ones as the last 16-bit code.
    out = {};
    BOOST_TEST(!build_table(
        table({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2},
              {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17}),
        false, out));
    out = {};
    BOOST_TEST(
        build_table(table({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                          {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16}),
                    false, out));
    // A table whose counts do not fit their lengths at all (three 1-bit codes).
    out = {};
    BOOST_TEST(!build_table(table({3}, {0, 1, 2}), true, out));
}

// Bytes between the last block's data and the EOI marker are damage libjpeg warns about
// ("extraneous bytes before marker 0xd9"); ferry's look-ahead must not swallow them: a strict
// decode fails, a lenient one gives libjpeg's pixels.
BOOST_AUTO_TEST_CASE(a_strict_decode_fails_on_bytes_before_the_eoi_marker) {
    const std::vector<std::pair<std::string, file_bytes>> goods{
        {"photo 4:2:0", baseline_photo()},
        {"photo restarts 3",
         encode(".jpg", photo(333, 222, 3, 7), {cv::IMWRITE_JPEG_RST_INTERVAL, 3})},
        {"gray", write_jpeg(photo(61, 45, 3, 5), jpeg_subsampling::gray, 75)}};
    int libjpeg_warned = 0;
    for (const auto& [name, good] : goods) {
        BOOST_TEST_REQUIRE(libjpeg_decode(good, 1, 0, true).warnings == 0, name);
        BOOST_TEST(max_abs_diff(ferry_decode(good, 1, true),
                                libjpeg_decode(good, 1, 0, true).pixels) == 0.0);
        for (int n = 1; n <= 8; ++n) {
            std::vector<std::uint8_t> junk;
            for (int k = 0; k < n; ++k) junk.push_back(static_cast<std::uint8_t>(0x11 * (k + 1)));
            const file_bytes f = with_bytes_before_eoi(good, junk);
            const std::string what = name + ", " + std::to_string(n) + " bytes before EOI";
            const reference want = libjpeg_decode(f, 1, 0, true);
            BOOST_TEST_REQUIRE(!want.pixels.empty(), what);
            if (want.warnings > 0) {
                ++libjpeg_warned;
                BOOST_TEST(want.first_warning == JWRN_EXTRANEOUS_DATA, what);
            }
            BOOST_TEST_MESSAGE(what << ": libjpeg " << (want.warnings > 0 ? "warns" : "is silent"));
            {
                // libjpeg's own decoder under ferry: a strict decode fails where libjpeg warns.
                const huffman_switch off("libjpeg");
                bool threw = false;
                try {
                    (void)ferry_decode(f, 1, true);
                } catch (const ferry::decode_error&) {
                    threw = true;
                }
                BOOST_TEST(threw == (want.warnings > 0), what << ", libjpeg's decoder");
            }
            BOOST_TEST(max_abs_diff(ferry_decode(f, 1, false), want.pixels) == 0.0, what);
            try {
                (void)ferry_decode(f, 1, true);
                BOOST_ERROR(what << ": a strict decode succeeded");
            } catch (const ferry::decode_error& e) {
                BOOST_TEST(std::string(e.what()).find("extraneous bytes before marker 0xd9") !=
                               std::string::npos,
                           what << ": " << e.what());
            }
        }
    }
    BOOST_TEST(libjpeg_warned > 0);  // the damage is one libjpeg itself reports
}

// Each decode is counted once, by the decoder that read its entropy data: ferry's for a
// baseline file and for a progressive one (of several scans), libjpeg's for an arithmetic-coded
// one (reason: not baseline) and for every file while FERRY_JPEG_HUFFMAN=libjpeg (reason:
// switched off), with the same pixels.
BOOST_AUTO_TEST_CASE(each_decode_is_counted_by_decoder_and_the_switch_changes_it) {
    const file_bytes baseline = baseline_photo();
    const file_bytes progressive =
        encode(".jpg", photo(120, 80, 3, 3), {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
    const file_bytes arithmetic =
        write_jpeg(photo(120, 80, 3, 3), jpeg_subsampling::s420, 90, {.arithmetic = true});
    const cv::Mat want = libjpeg_decode(baseline, 1, 0, true).pixels;

    auto before = ferry::ops::jpeg_huffman_use();
    BOOST_TEST(max_abs_diff(ferry_decode(baseline, 1, true), want) == 0.0);
    auto after = ferry::ops::jpeg_huffman_use();
    BOOST_TEST(after.ferry == before.ferry + 1);
    BOOST_TEST(after.several_scans == before.several_scans);
    BOOST_TEST(after.libjpeg == before.libjpeg);

    BOOST_TEST(max_abs_diff(ferry_decode(progressive, 2, true),
                            libjpeg_decode(progressive, 2, 0, true).pixels) == 0.0);
    before = after;
    after = ferry::ops::jpeg_huffman_use();
    BOOST_TEST(after.ferry == before.ferry + 1);
    BOOST_TEST(after.several_scans == before.several_scans + 1);
    BOOST_TEST(after.libjpeg == before.libjpeg);

    BOOST_TEST(max_abs_diff(ferry_decode(arithmetic, 1, true),
                            libjpeg_decode(arithmetic, 1, 0, true).pixels) == 0.0);
    before = after;
    after = ferry::ops::jpeg_huffman_use();
    BOOST_TEST(after.ferry == before.ferry);
    BOOST_TEST(after.libjpeg == before.libjpeg + 1);
    BOOST_TEST(after.not_baseline == before.not_baseline + 1);

    // A probe reads no image data: not counted.
    (void)ferry::ops::probe_image(as_span(baseline));
    BOOST_TEST(ferry::ops::jpeg_huffman_use().ferry == after.ferry);

    {
        const huffman_switch off("libjpeg");
        before = ferry::ops::jpeg_huffman_use();
        BOOST_TEST(max_abs_diff(ferry_decode(baseline, 1, true), want) == 0.0);
        BOOST_TEST(max_abs_diff(ferry_decode(baseline, 4, true),
                                libjpeg_decode(baseline, 4, 0, true).pixels) == 0.0);
        after = ferry::ops::jpeg_huffman_use();
        BOOST_TEST(after.ferry == before.ferry);
        BOOST_TEST(after.switched_off == before.switched_off + 2);
        BOOST_TEST(after.libjpeg == before.libjpeg + 2);
    }
    {
        const huffman_switch other("ferry");  // anything but "libjpeg" keeps ferry's
        before = ferry::ops::jpeg_huffman_use();
        (void)ferry_decode(baseline, 1, true);
        after = ferry::ops::jpeg_huffman_use();
        BOOST_TEST(after.ferry == before.ferry + 1);
    }
}

// A pipeline's decode stage shows which decoder its calls used in stage_stats::counters.
BOOST_AUTO_TEST_CASE(a_decode_stage_counts_the_decoders_in_its_stats) {
    const file_bytes baseline = baseline_photo();
    const file_bytes progressive =
        encode(".jpg", photo(120, 80, 3, 3), {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
    const file_bytes arithmetic = write_jpeg(photo(120, 80, 3, 3), jpeg_subsampling::s420, 90,
                                             {.progressive = true, .arithmetic = true});
    std::vector<ferry::bytes> files;
    for (const file_bytes* f : {&baseline, &progressive, &arithmetic, &baseline}) {
        files.emplace_back(as_span(*f));
    }
    auto p = ferry::from(files)
                 .map([](const ferry::bytes& b) { return ferry::ops::decode_image(b.span()); },
                      {.name = "decode"})
                 .build({.threads = 1});
    std::size_t decoded = 0;
    for (const ferry::image& img : p) decoded += img.width() > 0 ? 1 : 0;
    BOOST_TEST(decoded == 4U);
    auto c = p.stats().stages.at(1).counters;
    std::sort(c.begin(), c.end());
    using counts = std::vector<std::pair<std::string, std::uint64_t>>;
    BOOST_TEST((c == counts{{"jpeg huffman: ferry", 3},
                            {"jpeg huffman: ferry, several scans", 1},
                            {"jpeg huffman: libjpeg", 1},
                            {"jpeg huffman: libjpeg, not baseline", 1}}));
}

// The libjpeg this process loaded has the layout ferry was built for (here, where both are
// Debian's libjpeg-turbo), found from the library itself.
BOOST_AUTO_TEST_CASE(the_loaded_libjpeg_has_the_layout_built_for) {
    namespace jpeg = ferry::ops::codec::jpeg;
    BOOST_TEST(jpeg::built_layout == (LIBJPEG_TURBO_VERSION_NUMBER < 3000000 ? 2 : 3));
    BOOST_TEST(jpeg::loaded_layout() == jpeg::built_layout);
    BOOST_TEST(jpeg::loaded_layout_matches());
}

#if FERRY_TEST_IMAGE_INTERNALS
// Where the loaded libjpeg lays its entropy decoder out otherwise (a build on 2.x running with
// 3.x: both are libjpeg.so.62), every decode keeps libjpeg's decoder, counted, same pixels.
BOOST_AUTO_TEST_CASE(another_library_layout_keeps_libjpegs_decoder) {
    namespace jpeg = ferry::ops::codec::jpeg;
    const file_bytes baseline = baseline_photo();
    const cv::Mat want = libjpeg_decode(baseline, 2, 0, true).pixels;
    jpeg::pretend_loaded_layout(jpeg::built_layout == 2 ? 3 : 2);
    const auto before = ferry::ops::jpeg_huffman_use();
    cv::Mat got;
    try {
        got = ferry_decode(baseline, 2, true);
    } catch (...) {
        jpeg::pretend_loaded_layout(0);
        throw;
    }
    jpeg::pretend_loaded_layout(0);
    const auto after = ferry::ops::jpeg_huffman_use();
    BOOST_TEST(max_abs_diff(got, want) == 0.0);
    BOOST_TEST(after.ferry == before.ferry);
    BOOST_TEST(after.library_mismatch == before.library_mismatch + 1);
    BOOST_TEST(after.libjpeg == before.libjpeg + 1);
    (void)ferry_decode(baseline, 2, true);
    BOOST_TEST(ferry::ops::jpeg_huffman_use().ferry == after.ferry + 1);
}
#endif

// Restart-marker files, whole and damaged (cut short, bytes changed, restart markers lost or
// out of order), at every DCT scale and as regions below skipped rows: ferry's lenient decode
// is libjpeg's slow path's, byte for byte; where libjpeg warns, a strict decode fails; and
// ferry's decoder did the decoding (counted).
BOOST_AUTO_TEST_CASE(damaged_and_restart_files_match_libjpegs_slow_path_at_every_scale) {
    const cv::Mat pic = photo(333, 222, 3, 7);
    std::mt19937 noise_rng(3);
    cv::Mat hiss(61, 97, CV_8UC3);
    for (auto it = hiss.begin<cv::Vec3b>(); it != hiss.end<cv::Vec3b>(); ++it) {
        const auto v = static_cast<std::uint32_t>(noise_rng());
        *it = cv::Vec3b(static_cast<uchar>(v), static_cast<uchar>(v >> 8),
                        static_cast<uchar>(v >> 16));
    }
    const std::vector<std::pair<std::string, file_bytes>> goods{
        {"photo restarts 1", encode(".jpg", pic, {cv::IMWRITE_JPEG_RST_INTERVAL, 1})},
        {"photo restarts 3", encode(".jpg", pic, {cv::IMWRITE_JPEG_RST_INTERVAL, 3})},
        {"noise restarts 2",
         encode(".jpg", hiss, {cv::IMWRITE_JPEG_QUALITY, 100, cv::IMWRITE_JPEG_RST_INTERVAL, 2})},
        {"photo 4:2:0", baseline_photo()}};
    int cases = 0;
    int warned = 0;
    const auto ferry_before = ferry::ops::jpeg_huffman_use().ferry;
    int ferry_decodes = 0;
    for (const auto& [name, good] : goods) {
        const std::size_t from = jpeg_header_length(good);
        const std::size_t to = good.size() - 2;
        std::mt19937 rng(29);
        std::vector<std::pair<std::string, file_bytes>> files{{"whole", good}};
        for (int i = 1; i <= 6; ++i) {
            const std::size_t at = from + (to - from) * static_cast<std::size_t>(i) / 7;
            files.emplace_back("cut at " + std::to_string(at),
                               file_bytes(good.begin(), good.begin() + static_cast<long>(at)));
        }
        for (int i = 0; i < 16; ++i) {
            file_bytes f = good;
            const std::size_t at = from + rng() % (to - from - 1);
            const int pick = i % 4;
            f[at] = pick == 0 ? 0xFF : pick == 1 ? 0x00 : static_cast<std::uint8_t>(rng());
            if (pick == 3) {
                f[at] = 0xFF;
                f[at + 1] = static_cast<std::uint8_t>(0xD0 + rng() % 8);  // a restart marker
            }
            files.emplace_back("byte " + std::to_string(at) + " changed", std::move(f));
        }
        for (const auto& [what, f] : files) {
            for (int denom : {1, 2, 4, 8}) {
                ++cases;
                const std::string label = name + ", " + what + " at 1/" + std::to_string(denom);
                const reference want = libjpeg_decode(f, denom, 5, false);
                if (want.pixels.empty()) {
                    BOOST_CHECK_THROW(ferry_decode(f, denom, false), ferry::decode_error);
                    continue;
                }
                BOOST_TEST(max_abs_diff(ferry_decode(f, denom, false), want.pixels) == 0.0, label);
                ++ferry_decodes;
                if (want.warnings > 0) {
                    ++warned;
                    BOOST_CHECK_THROW(ferry_decode(f, denom, true), ferry::decode_error);
                    ++ferry_decodes;
                }
                if (denom > 2) continue;
                const ferry::image_info info = ferry::ops::probe_image(as_span(f));
                const int w = info.width;
                const int h = info.height;
                // Below rows the decoder skips: one box inside, one the full width to the end.
                const std::vector<ferry::crop_box> boxes{{w / 8, h / 2, w / 2, h / 4},
                                                         {0, h * 2 / 3, w, h - h * 2 / 3}};
                for (const ferry::crop_box& box : boxes) {
                    const cv::Rect r = scaled(box, denom);
                    BOOST_TEST(
                        max_abs_diff(ferry_region(f, box, denom, false), want.pixels(r)) == 0.0,
                        label << ", region at row " << r.y);
                    ++ferry_decodes;
                }
            }
        }
    }
    BOOST_TEST(warned > cases / 2);  // the damage reached the decoder in most cases
    // Every decode above reached the data with ferry's decoder (failed starts are not counted).
    BOOST_TEST(ferry::ops::jpeg_huffman_use().ferry - ferry_before >=
               static_cast<std::uint64_t>(ferry_decodes));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
