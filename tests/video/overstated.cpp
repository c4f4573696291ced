// SPDX-License-Identifier: Apache-2.0
/// \file
/// An AVI whose header claims 444 frames where its data holds 68, as cut or badly written AVIs
/// do: a clip chosen from the header's claim either comes back whole (the frames asked for, the
/// right ones) or fails naming the claim and what the data holds; never fewer frames than asked
/// for without a word.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ferry/error.hpp>
#include <ferry/video.hpp>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

using namespace video_test;

// Named, not anonymous: the unity build puts several test files in one translation unit.
namespace video_overstated_test {

constexpr int encoded = 68;   ///< frames the data holds
constexpr int claimed = 444;  ///< frames the header claims
constexpr int fps = 25;

/// 68 frames of MPEG-4 (B-frames, so AVI's packets carry no presentation times) at 25 fps, each
/// showing its index, in an AVI whose header claims 444.
std::filesystem::path overstating_avi() {
    const auto avi = video_file({.codec = "mpeg4", .ext = ".avi", .frames = encoded, .gop = 12});
    return with_claimed_frames(avi, claimed, "claims-444.avi");
}

/// The time of each frame the data holds, from decoding it all (ffprobe's
/// `best_effort_timestamp`s: tests/video/containers.cpp; with B-frames in AVI frame k shows at
/// (k + 1) / 25 s), and the claim a window's read names: the header's 444 frames, and where the
/// data ends, the last frame's time plus one frame.
struct whole_file {
    std::vector<double> times;
    std::string claim;
};

whole_file decoded_whole(const std::filesystem::path& path) {
    const auto all = ferry::ops::load_video(path);
    BOOST_TEST_REQUIRE(all.frames() == encoded);
    whole_file w{.times = all.timestamps(), .claim = {}};
    char text[160];
    std::snprintf(text, sizeof text,
                  "the input is cut short: the container declares 444 frames (17.760 s), the "
                  "data ends at %.3f s",
                  w.times.back() + 1.0 / fps);
    w.claim = text;
    return w;
}

/// The frames `select` picks from a window of `frames` frames, or none when it needs more.
std::vector<std::int64_t> picked(const std::string& kind, std::int64_t frames) {
    std::vector<std::int64_t> out;
    if (kind == "all") {
        for (std::int64_t k = 0; k < frames; ++k) out.push_back(k);
        return out;
    }
    if (kind == "uniform(8)") {
        if (frames == 0) return {};
        for (int k = 0; k < 8; ++k) out.push_back(std::llround(k * (frames - 1) / 7.0));
        return out;
    }
    const std::vector<std::int64_t> want =
        kind == "clip(8)"      ? std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}
        : kind == "clip(4, 3)" ? std::vector<std::int64_t>{0, 3, 6, 9}
                               : std::vector<std::int64_t>{5, 0};
    for (const std::int64_t k : want) {
        if (k >= frames) return {};
    }
    return want;
}

ferry::frame_selection selection(const std::string& kind) {
    if (kind == "all") return ferry::frame_selection::all();
    if (kind == "uniform(8)") return ferry::frame_selection::uniform(8);
    if (kind == "clip(8)") return ferry::frame_selection::clip(8);
    if (kind == "clip(4, 3)") return ferry::frame_selection::clip(4, 3);
    return ferry::frame_selection::indices({5, 0});
}

}  // namespace video_overstated_test

using namespace video_overstated_test;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(overstated)

// A clip from a window that holds 11 frames (from frame 57's time) but needs 12 fails naming the
// header's claim and where the data ends, not only the window's count; from the start, a clip of
// 69 frames names the 444 claimed and the 68 the data holds.
BOOST_AUTO_TEST_CASE(a_clip_past_what_decodes_names_the_headers_claim) {
    const auto path = overstating_avi();
    const ferry::video_info info = ferry::ops::probe_video(path);
    BOOST_TEST_REQUIRE(info.frames == claimed);  // what a user picks clip starts from
    BOOST_TEST(info.duration == 17.76, info.duration << " s");
    const whole_file whole = decoded_whole(path);

    const auto late = ferry_test::expect_throw<ferry::decode_error>([&] {
        (void)ferry::ops::load_video(path,
                                     {.demux = {.start = whole.times[57]},
                                      .decode = {.select = ferry::frame_selection::clip(12)}});
    });
    BOOST_TEST(late.what() == "decode_video: " + path.string() +
                                  ": frame 11 is selected but the window has 11 frames that "
                                  "decode; " +
                                  whole.claim);

    const auto from_start = ferry_test::expect_throw<ferry::decode_error>([&] {
        (void)ferry::ops::load_video(path,
                                     {.decode = {.select = ferry::frame_selection::clip(69)}});
    });
    BOOST_TEST(from_start.what() == "decode_video: " + path.string() +
                                        ": frame 68 is selected but the window has 68 frames "
                                        "that decode; the input is cut short: the container "
                                        "declares 444 frames, the data holds 68");
}

// A window the header promises but the data never reaches (from 10 s of a claimed 17.76 s) is a
// decode_error naming the claim and where the data ends.
BOOST_AUTO_TEST_CASE(a_window_past_the_data_names_the_headers_claim) {
    const auto path = overstating_avi();
    const whole_file whole = decoded_whole(path);
    const auto e = ferry_test::expect_throw<ferry::decode_error>([&] {
        (void)ferry::ops::load_video(path, {.demux = {.start = 10.0},
                                            .decode = {.select = ferry::frame_selection::clip(8)}});
    });
    BOOST_TEST(e.what() == "demux_video: " + path.string() +
                               ": no decodable video frames in the window [10.000 s, end); " +
                               whole.claim);
}

// Clip starts every half second over the claimed 17.76 s, five selections each: every result
// holds exactly the frames selected, the right ones (read from the frames' drawn indices), and
// all() of a window that ends with the data is marked truncated; or it is a decode_error naming
// the header's claim. Never fewer frames than asked for without a word.
BOOST_AUTO_TEST_CASE(never_fewer_frames_than_selected_without_a_word) {
    const auto path = overstating_avi();
    const whole_file file = decoded_whole(path);
    int whole = 0;
    int refused = 0;
    for (int half_seconds = 0; half_seconds < 36; ++half_seconds) {
        const double start = half_seconds * 0.5;
        // The first frame at or after `start`, and the frames from it to the data's end.
        const auto first =
            static_cast<int>(std::lower_bound(file.times.begin(), file.times.end(), start - 1e-6) -
                             file.times.begin());
        const std::int64_t window = encoded - first;
        for (const std::string kind : {"all", "uniform(8)", "clip(8)", "clip(4, 3)", "indices"}) {
            BOOST_TEST_CONTEXT("from " << start << " s, " << kind) {
                const auto want = picked(kind, window);
                try {
                    const auto clip = ferry::ops::load_video(
                        path, {.demux = {.start = start}, .decode = {.select = selection(kind)}});
                    BOOST_TEST_REQUIRE(clip.frames() == static_cast<int>(want.size()));
                    for (int t = 0; t < clip.frames(); ++t) {
                        BOOST_TEST(frame_index(clip, t) ==
                                   first + want[static_cast<std::size_t>(t)]);
                    }
                    if (kind == "all") BOOST_TEST(clip.truncated());
                    ++whole;
                } catch (const ferry::decode_error& e) {
                    BOOST_TEST(want.empty(), e.what());
                    BOOST_TEST(std::string(e.what()).find(
                                   "the input is cut short: the container declares 444 frames") !=
                                   std::string::npos,
                               e.what());
                    ++refused;
                }
            }
        }
    }
    // Both outcomes occur: the data holds 2.72 s of the 17.76 claimed.
    BOOST_TEST(whole > 10);
    BOOST_TEST(refused > 100);
}

BOOST_AUTO_TEST_SUITE_END()  // overstated
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops
