// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's decoder of JPEG files of several scans (ops/image/jpeg_progressive.cpp): progressive
/// files and sequential files with components in scans of their own. Every decode must come out
/// as libjpeg's own decoder makes it, byte for byte, since only the entropy decoding changes; the
/// reference is libjpeg-turbo called directly, with the same settings.
///
/// Layouts: every kind of scan script cjpeg writes (-progressive, -scans): libjpeg's default
/// progression for gray, YCbCr at each sampling and YCCK; spectral selection alone; DC scans
/// interleaved or one component each; successive approximation three bits deep, in DC and AC;
/// one coefficient per scan; a progression that stops before its last refinement (libjpeg then
/// smooths the blocks); sequential scans of one and of two components; restart markers. Content:
/// photo-like (short codes, EOB runs) and noise (large values, long codes, stuffed 0xFF bytes).
/// Then damaged files: cut short anywhere, bytes changed, a scan header's band or bit position
/// changed (libjpeg's scan checks and bogus-progression warnings): lenient decodes equal
/// libjpeg's lenient decodes, and a strict decode fails wherever libjpeg warns.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "../support/skipped.hpp"
#include "libjpeg_reference.hpp"
#include "support.hpp"
#if FERRY_TEST_IMAGE_INTERNALS
#include "ops/image/jpeg_huffman.hpp"
#endif

namespace bdata = boost::unit_test::data;
using namespace ops_test;

namespace jpeg_progressive_test {

/// libjpeg's scan script for `n` components of `bands` (each a band Ss..Se with its first Al
/// and refinements down to 0), after the DC scans.
struct script_builder {
    std::vector<jpeg_scan> scans;
    void dc(const std::vector<int>& comps, int al) { scans.push_back({comps, 0, 0, 0, al}); }
    void dc_refine(const std::vector<int>& comps, int ah) {
        scans.push_back({comps, 0, 0, ah, ah - 1});
    }
    void ac(int comp, int ss, int se, int ah, int al) { scans.push_back({{comp}, ss, se, ah, al}); }
};

/// The layouts (scan scripts) the tests write, for 3 components (1 for gray).
jpeg_layout layout_named(const std::string& name, int comps) {
    jpeg_layout l;
    script_builder s;
    std::vector<int> all;
    for (int c = 0; c < comps; ++c) all.push_back(c);
    if (name == "default progression") {
        l.progressive = true;
    } else if (name == "spectral selection") {
        // No successive approximation: DC interleaved, then AC in three bands per component.
        s.dc(all, 0);
        for (int c = 0; c < comps; ++c) {
            s.ac(c, 1, 5, 0, 0);
            s.ac(c, 6, 20, 0, 0);
            s.ac(c, 21, 63, 0, 0);
        }
    } else if (name == "dc per component") {
        for (int c = 0; c < comps; ++c) s.dc({c}, 1);
        for (int c = 0; c < comps; ++c) s.ac(c, 1, 63, 0, 1);
        s.dc_refine(all, 1);
        for (int c = 0; c < comps; ++c) s.ac(c, 1, 63, 1, 0);
    } else if (name == "three bits deep") {
        // Successive approximation: DC from bit 3, AC from bit 3, refined one bit at a time.
        s.dc(all, 3);
        for (int c = 0; c < comps; ++c) s.ac(c, 1, 63, 0, 3);
        for (int bit = 3; bit >= 1; --bit) {
            s.dc_refine(all, bit);
            for (int c = 0; c < comps; ++c) s.ac(c, 1, 63, bit, bit - 1);
        }
    } else if (name == "bands and refinements") {
        // Bands refined separately, the low one twice.
        s.dc(all, 1);
        for (int c = 0; c < comps; ++c) {
            s.ac(c, 1, 9, 0, 2);
            s.ac(c, 10, 63, 0, 1);
        }
        s.dc_refine(all, 1);
        for (int c = 0; c < comps; ++c) {
            s.ac(c, 1, 9, 2, 1);
            s.ac(c, 1, 9, 1, 0);
            s.ac(c, 10, 63, 1, 0);
        }
    } else if (name == "one coefficient per scan") {
        s.dc(all, 0);
        for (int k = 1; k < 64; ++k) s.ac(0, k, k, 0, 0);
        for (int c = 1; c < comps; ++c) s.ac(c, 1, 63, 0, 0);
    } else if (name == "unfinished refinement") {
        // A valid progression that never sends the last bit: libjpeg smooths the blocks.
        s.dc(all, 1);
        for (int c = 0; c < comps; ++c) s.ac(c, 1, 63, 0, 1);
    } else if (name == "sequential scans") {
        for (int c = 0; c < comps; ++c) s.scans.push_back({{c}, 0, 63, 0, 0});
    } else if (name == "sequential two and one") {
        s.scans.push_back({{0, 1}, 0, 63, 0, 0});
        s.scans.push_back({{2}, 0, 63, 0, 0});
    } else if (name == "progressive restarts 1") {
        l.progressive = true;
        l.restart_interval = 1;
    } else if (name == "progressive restarts 5") {
        l.progressive = true;
        l.restart_interval = 5;
    } else if (name == "three bits deep, restarts 3") {
        l = layout_named("three bits deep", comps);
        l.restart_interval = 3;
        return l;
    } else {
        throw std::logic_error("no layout " + name);
    }
    l.scans = s.scans;
    return l;
}

const std::vector<std::string>& layouts() {
    static const std::vector<std::string> names = {
        "default progression",    "spectral selection",     "dc per component",
        "three bits deep",        "bands and refinements",  "one coefficient per scan",
        "unfinished refinement",  "sequential scans",       "sequential two and one",
        "progressive restarts 1", "progressive restarts 5", "three bits deep, restarts 3"};
    return names;
}

/// The offsets of the SOS markers of `f`.
std::vector<std::size_t> scan_starts(const file_bytes& f) {
    std::vector<std::size_t> out;
    std::size_t at = 2;
    while (at + 4 <= f.size()) {
        if (f[at] != 0xFF) {
            ++at;
            continue;
        }
        const int m = f[at + 1];
        if (m == 0xDA) out.push_back(at);
        if (m == 0xD9) break;
        if (m == 0x00 || m == 0xFF || (m >= 0xD0 && m <= 0xD7)) {
            ++at;
            continue;
        }
        // A segment: skip it (entropy data after an SOS is walked byte by byte above).
        at += 2 + ((static_cast<std::size_t>(f[at + 2]) << 8) | f[at + 3]);
    }
    return out;
}

/// Where `f`, cut short, ends inside a marker segment (a table between two scans): that
/// segment's marker; 0 when it ends inside entropy-coded data or at a segment's end.
std::size_t cut_segment(const file_bytes& f) {
    std::size_t at = 2;
    while (at + 1 < f.size()) {
        const int m = f[at + 1];
        if (f[at] != 0xFF || m == 0x00 || m == 0xFF || (m >= 0xD0 && m <= 0xD7)) {
            ++at;
            continue;
        }
        if (m == 0xD9) return 0;
        if (at + 4 > f.size()) return at;
        const std::size_t end = at + 2 + ((static_cast<std::size_t>(f[at + 2]) << 8) | f[at + 3]);
        if (end > f.size()) return at;
        at = end;  // after an SOS, its data is walked byte by byte
    }
    return 0;
}

/// AC refinement has two ways to find a run's end: BMI2's PDEP where the CPU runs it fast, and a
/// select from counted bits elsewhere.
enum class refinement { select, pdep };

/// Runs `check` with refinement scans decoded `way` (where the test reaches the decoder's
/// internals: a static build; elsewhere with the decoder's own choice), and says which in its
/// argument. The PDEP cases run only where `pdep_runs_here` holds.
template <class Check>
void with_refinement(refinement way, Check check) {
#if FERRY_TEST_IMAGE_INTERNALS
    namespace jpeg = ferry::ops::codec::jpeg;
    struct restore {
        ~restore() { (void)jpeg::refine_with_pdep(true); }
    } restore_pdep;
    const bool pdep = jpeg::refine_with_pdep(way == refinement::pdep);
    BOOST_TEST_REQUIRE(pdep == (way == refinement::pdep));
    check(std::string(pdep ? " (PDEP)" : " (select)"));
#else
    (void)way;
    check(std::string(" (the decoder's choice)"));
#endif
}

/// The precondition of the PDEP cases: the test reaches the decoder's internals and this CPU
/// runs PDEP fast. Where not, the cases are reported skipped with the reason (also printed on
/// stdout, which ctest's output shows).
boost::test_tools::assertion_result pdep_runs_here(boost::unit_test::test_unit_id id) {
#if FERRY_TEST_IMAGE_INTERNALS
    const bool fast = ferry::ops::codec::jpeg::refine_with_pdep(true);
    const std::string why =
        "this CPU does not run BMI2's PDEP fast (refine_with_pdep(true) is false): AC refinement "
        "takes the select, which the other cases test";
#else
    const bool fast = false;
    const std::string why =
        "the decoder's internals are out of reach (a shared build): refine_with_pdep cannot "
        "choose the way";
#endif
    if (fast) return true;
    return ferry_test::skipped(id, why);
}

/// A file of a scan layout, by what it holds.
struct layout_sample {
    std::string what;
    file_bytes file;
};

/// Each of `files` at every scale, accurate and fast: ferry's decoder against libjpeg's under the
/// same calls, and that against libjpeg's own decode; every decode counted as ferry's.
void check_layout(const std::string& name, const std::vector<layout_sample>& files) {
    for (const layout_sample& s : files) {
        const auto before = ferry::ops::jpeg_huffman_use();
        int decodes = 0;
        for (int denom : {1, 2, 4, 8}) {
            for (bool fast : {false, true}) {
                // libjpeg's decode through ferry: the same calls, libjpeg's Huffman decoder.
                cv::Mat want;
                {
                    const huffman_switch off("libjpeg");
                    want = decode_scaled(s.file, denom, fast, true);
                }
                const std::string at =
                    name + ", " + s.what + " at 1/" + std::to_string(denom) + (fast ? " fast" : "");
                BOOST_TEST(max_abs_diff(decode_scaled(s.file, denom, fast, true), want) == 0.0, at);
                ++decodes;
                if (!fast && s.what.find("YCCK") == std::string::npos) {
                    // And that is libjpeg's own RGB decode, with no warning.
                    const reference direct = libjpeg_decode(s.file, denom, 0, false);
                    BOOST_TEST(direct.warnings == 0, at);
                    BOOST_TEST(max_abs_diff(want, direct.pixels) == 0.0, at);
                }
            }
        }
        const auto after = ferry::ops::jpeg_huffman_use();
        // Each reference decode was libjpeg's, switched off.
        BOOST_TEST(after.several_scans == before.several_scans + decodes, name << ", " << s.what);
        BOOST_TEST(after.libjpeg == before.libjpeg + decodes, name << ", " << s.what);
        BOOST_TEST(after.switched_off == before.switched_off + decodes, name << ", " << s.what);
    }
}

/// Lenient: libjpeg's pixels; strict: a decode_error wherever libjpeg warned. Counts the cases
/// libjpeg warned about into `warned`. A file cut inside a table between two scans makes
/// libjpeg fail (it reads its fake EOI marker as the table); ferry's lenient decode keeps the
/// scans before it, as libjpeg decodes the file cut at that table's marker.
void check_as_libjpeg(const file_bytes& f, const std::string& what, int& warned, bool cut) {
    reference want = libjpeg_decode(f, 1, 0, false);
    const std::size_t table_cut = cut && want.pixels.empty() ? cut_segment(f) : 0;
    if (table_cut > 0) {
        want = libjpeg_decode(file_bytes(f.begin(), f.begin() + static_cast<long>(table_cut)), 1, 0,
                              false);
        ++want.warnings;  // the whole file failed
    }
    if (want.pixels.empty()) {
        bool failed = false;
        try {
            (void)decode_scaled(f, 1, false, false);
        } catch (const ferry::decode_error&) {
            failed = true;
        }
        BOOST_TEST(failed, what << ": a decode passed where libjpeg failed");
        return;
    }
    cv::Mat got;
    try {
        got = decode_scaled(f, 1, false, false);
    } catch (const ferry::decode_error& e) {
        BOOST_TEST(false, what << ": lenient decode failed: " << e.what());
        return;
    }
    BOOST_TEST(max_abs_diff(got, want.pixels) == 0.0, what);
    if (want.warnings > 0) {
        ++warned;
        bool failed = false;
        try {
            (void)decode_scaled(f, 1, false, true);
        } catch (const ferry::decode_error&) {
            failed = true;
        }
        BOOST_TEST(failed, what << ": a strict decode passed where libjpeg warned (warning "
                                << want.first_warning << ")");
    }
}

/// `good` cut at each scan's start and evenly, and with bytes changed: each as libjpeg makes it.
void check_damaged(const std::string& name, const file_bytes& good, int& cases, int& warned) {
    std::vector<std::pair<std::string, file_bytes>> damaged;
    for (const std::size_t at : scan_starts(good)) {
        damaged.emplace_back("cut at the scan at " + std::to_string(at),
                             file_bytes(good.begin(), good.begin() + static_cast<long>(at)));
    }
    for (auto& d : damaged_jpegs(good, 16, 48, 23)) damaged.push_back(std::move(d));
    for (const auto& [what, f] : damaged) {
        ++cases;
        check_as_libjpeg(f, name + ", " + what, warned, what.starts_with("cut"));
    }
}

/// Layout `name` in colour (three samplings), gray and YCCK, photo and noise, its refinement
/// scans decoded `way`: every case of `check_layout`.
void decode_every_sample_of_layout(const std::string& name, refinement way) {
    const cv::Mat pic = photo(203, 150, 3, 5);
    const cv::Mat hiss = uniform_noise(61, 45, 9);
    std::vector<layout_sample> files;
    const jpeg_layout colour = layout_named(name, 3);
    files.push_back({"photo 4:2:0 q90", write_jpeg(pic, jpeg_subsampling::s420, 90, colour)});
    files.push_back({"photo 4:2:2 q75", write_jpeg(pic, jpeg_subsampling::s422, 75, colour)});
    files.push_back({"noise 4:4:4 q100", write_jpeg(hiss, jpeg_subsampling::s444, 100, colour)});
    files.push_back({"photo 17x9 4:2:0 q50",
                     write_jpeg(photo(17, 9, 3, 2), jpeg_subsampling::s420, 50, colour)});
    if (name.find("sequential") == std::string::npos) {  // one gray sequential scan: baseline
        files.push_back(
            {"photo gray q90", write_jpeg(pic, jpeg_subsampling::gray, 90, layout_named(name, 1))});
    }
    if (name == "default progression" || name == "progressive restarts 5") {
        files.push_back({"photo YCCK 4:2:0",
                         write_jpeg(photo(90, 70, 4, 4), jpeg_subsampling::s420, 85, colour)});
    }
    with_refinement(way, [&](const std::string& how) { check_layout(name + how, files); });
}

/// Damaged copies of four layouts, refinement scans decoded `way`: every case of
/// `check_damaged`, and the damage reaches the decoder in most of them.
void decode_damaged_files(refinement way) {
    const cv::Mat pic = photo(203, 150, 3, 5);
    const cv::Mat hiss = uniform_noise(61, 45, 9);
    struct sample {
        std::string what;
        file_bytes file;
    };
    const std::vector<sample> samples = {
        {"default progression",
         write_jpeg(pic, jpeg_subsampling::s420, 90, layout_named("default progression", 3))},
        {"three bits deep, restarts 3", write_jpeg(pic, jpeg_subsampling::s420, 90,
                                                   layout_named("three bits deep, restarts 3", 3))},
        {"bands and refinements, noise",
         write_jpeg(hiss, jpeg_subsampling::s444, 100, layout_named("bands and refinements", 3))},
        {"sequential scans",
         write_jpeg(pic, jpeg_subsampling::s422, 80, layout_named("sequential scans", 3))},
    };
    int cases = 0;
    int warned = 0;
    with_refinement(way, [&](const std::string& how) {
        for (const sample& s : samples) {
            check_damaged(s.what + how, s.file, cases, warned);
        }
    });
    BOOST_TEST(warned > cases / 3);  // the damage reached the decoder in most cases
}

}  // namespace jpeg_progressive_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(jpeg_progressive)
using namespace jpeg_progressive_test;

// Every layout, in colour (three samplings), gray and YCCK, photo and noise: at every DCT scale,
// accurate and fast, exactly libjpeg's pixels with no warning, and every decode by ferry's
// decoder (AC refinement by the select; the pdep suite below runs it with PDEP).
BOOST_DATA_TEST_CASE(every_scan_layout_decodes_exactly_as_libjpeg_does, bdata::make(layouts()),
                     name) {
    decode_every_sample_of_layout(name, refinement::select);
}

// Files cut short anywhere (at each scan's start, as a download cut between scans leaves them,
// and inside scans) or with bytes changed in their data: lenient decodes equal libjpeg's (grey,
// or what the earlier scans made of the blocks, smoothed as libjpeg smooths unfinished
// progressions), and a strict decode fails wherever libjpeg warns.
BOOST_AUTO_TEST_CASE(damaged_files_decode_as_libjpeg_decodes_them) {
    decode_damaged_files(refinement::select);
}

// The same two with AC refinement by BMI2's PDEP: reported skipped, with the reason, on a CPU
// that does not run it fast or where the decoder's internals are out of reach.
BOOST_AUTO_TEST_SUITE(pdep, *boost::unit_test::precondition(pdep_runs_here))

// Every layout and sample as above, exactly libjpeg's pixels, refinement scans by PDEP.
BOOST_DATA_TEST_CASE(every_scan_layout_decodes_exactly_as_libjpeg_does, bdata::make(layouts()),
                     name) {
    decode_every_sample_of_layout(name, refinement::pdep);
}

// The damaged files as above, decoded as libjpeg decodes them, refinement scans by PDEP.
BOOST_AUTO_TEST_CASE(damaged_files_decode_as_libjpeg_decodes_them) {
    decode_damaged_files(refinement::pdep);
}

BOOST_AUTO_TEST_SUITE_END()

// A scan header changed: its band (Ss, Se) or its bit positions (Ah, Al). Each scan is started by
// libjpeg's own decoder first, so libjpeg's checks run on it: a band or bit position libjpeg
// refuses fails the decode, a scan out of order warns (bogus progression) and the file decodes
// as libjpeg decodes it, refinements applied to whatever the earlier scans left.
BOOST_AUTO_TEST_CASE(changed_scan_headers_are_checked_as_libjpeg_checks_them) {
    const file_bytes good = write_jpeg(photo(120, 90, 3, 8), jpeg_subsampling::s420, 85,
                                       layout_named("three bits deep", 3));
    int cases = 0;
    int warned = 0;
    int refused = 0;
    std::mt19937 rng(5);
    for (const std::size_t sos : scan_starts(good)) {
        const std::size_t ns = good[sos + 4];
        const std::size_t ss = sos + 5 + 2 * ns;  // then Se, then Ah:Al
        std::vector<std::pair<std::string, file_bytes>> changed;
        const auto edit = [&](const std::string& what, std::size_t at, std::uint8_t v) {
            file_bytes f = good;
            f[at] = v;
            changed.emplace_back(what, std::move(f));
        };
        edit("Ss + 1", ss, static_cast<std::uint8_t>(good[ss] + 1));
        edit("Se - 1", ss + 1, static_cast<std::uint8_t>(good[ss + 1] - 1));
        edit("Se 63", ss + 1, 63);
        edit("Ah + 1", ss + 2, static_cast<std::uint8_t>(good[ss + 2] + 0x10));
        edit("Al + 1", ss + 2, static_cast<std::uint8_t>(good[ss + 2] + 1));
        edit("Ah, Al + 1", ss + 2, static_cast<std::uint8_t>(good[ss + 2] + 0x11));
        edit("Ah:Al 0", ss + 2, 0);
        edit("Ah:Al random", ss + 2, static_cast<std::uint8_t>(rng()));
        for (const auto& [what, f] : changed) {
            ++cases;
            const std::string where = "scan at " + std::to_string(sos) + ", " + what;
            if (libjpeg_decode(f, 1, 0, false).pixels.empty()) ++refused;
            check_as_libjpeg(f, where, warned, false);
        }
    }
    BOOST_TEST(refused > 0);
    BOOST_TEST(warned > cases / 3);
}

// Arithmetic-coded files (progressive or not) keep libjpeg's decoder: the same pixels, counted
// as not covered.
BOOST_AUTO_TEST_CASE(arithmetic_coded_files_keep_libjpegs_decoder) {
    for (const bool progressive : {false, true}) {
        const file_bytes f = write_jpeg(photo(90, 60, 3, 1), jpeg_subsampling::s420, 90,
                                        {.progressive = progressive, .arithmetic = true});
        const auto before = ferry::ops::jpeg_huffman_use();
        BOOST_TEST(max_abs_diff(decode_scaled(f, 1, false, true),
                                libjpeg_decode(f, 1, 0, false).pixels) == 0.0);
        const auto after = ferry::ops::jpeg_huffman_use();
        BOOST_TEST(after.not_baseline == before.not_baseline + 1);
        BOOST_TEST(after.ferry == before.ferry);
    }
}

// A region of a progressive file (the rows above it skipped, columns cropped where exact) is the
// whole decode cropped.
BOOST_AUTO_TEST_CASE(a_region_is_the_whole_decode_cropped) {
    const file_bytes f = write_jpeg(photo(203, 150, 3, 5), jpeg_subsampling::s420, 90,
                                    layout_named("bands and refinements", 3));
    const cv::Mat whole = libjpeg_decode(f, 1, 0, false).pixels;
    for (const ferry::crop_box& box :
         {ferry::crop_box{0, 40, 50, 20}, ferry::crop_box{30, 17, 40, 40},
          ferry::crop_box{120, 100, 83, 50}}) {
        const ferry::image region = ferry::ops::decode_image(as_span(f), {.crop = box});
        const cv::Mat want = whole(cv::Rect(box.x, box.y, box.width, box.height));
        BOOST_TEST(max_abs_diff(to_mat(region), want) == 0.0, "box " << box.x << "," << box.y);
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
