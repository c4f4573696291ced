// SPDX-License-Identifier: Apache-2.0
/// \file
/// Frames nobody selected and nobody references are not decoded
/// (`video_decode_options::skip_nonref`), and the selected frames stay the ones the ffmpeg CLI
/// gives: selections with gaps (stride 2, 4 and 8, uniform, scattered indices, windows that start
/// mid-GOP) over H.264 with a B-pyramid and with open GOPs, HEVC, MPEG-4 Part 2 and MPEG-2 with
/// B-frames, VP8 with alt-ref frames, VP9, a variable frame rate, and the containers whose
/// frames are counted by decoding (AVI, MPEG-PS, raw H.264), each byte for byte against
/// `ffmpeg -vsync passthrough -sws_flags bilinear -pix_fmt rgb24` decoding the whole file; and
/// the stage counters `frames decoded` and `frames kept`, with the switch on and off.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_skipping_test {

constexpr int width = 64;
constexpr int height = 48;
constexpr int frames = 60;
constexpr std::size_t frame_bytes = std::size_t{width} * height * 3;

struct coded {
    std::string name;   ///< the case's name
    std::string ext;    ///< container, by extension
    std::string codec;  ///< ffmpeg's output options for the video
    /// The codec has frames nothing references that FFmpeg's decoder can skip (libvpx's VP8 and
    /// VP9 here have none it skips).
    bool skips = true;
    std::string filter{};
};

// A keyframe every 30 frames: windows that start mid-GOP decode from the keyframe before them.
const std::string x264_pyramid =
    "-c:v libx264 -preset veryfast -bf 3 -x264-params b-pyramid=2 -g 30 -pix_fmt yuv420p";
// Fixed B-frame runs (b-adapt=0): x264 makes open GOPs only then, the B-frames before each
// keyframe coded after it and referencing it.
const std::string x264_open_gop =
    "-c:v libx264 -preset veryfast -bf 3 -x264-params "
    "b-pyramid=2:open-gop=1:keyint=30:scenecut=0:b-adapt=0 -pix_fmt yuv420p";
const std::string x265 =
    "-c:v libx265 -preset veryfast -x265-params log-level=none:bframes=3:b-pyramid=1 -g 30 "
    "-pix_fmt yuv420p";
const std::string mpeg4_b = "-c:v mpeg4 -q:v 4 -bf 2 -g 30";
const std::string mpeg2_b = "-c:v mpeg2video -q:v 4 -bf 2 -g 30";
const std::string vp8_altref =
    "-c:v libvpx -b:v 300k -g 30 -auto-alt-ref 1 -lag-in-frames 16 -deadline good";
const std::string vp9_altref =
    "-c:v libvpx-vp9 -b:v 300k -g 30 -auto-alt-ref 1 -lag-in-frames 16 -deadline good "
    "-cpu-used 4";

const std::vector<coded> files{
    {"mp4/h264, B-pyramid", ".mp4", x264_pyramid},
    {"mkv/h264, open GOPs", ".mkv", x264_open_gop},
    {"mp4/hevc, B-pyramid", ".mp4", x265},
    {"mkv/hevc", ".mkv", x265},
    {"mp4/mpeg4, B-frames", ".mp4", mpeg4_b},
    {"ts/mpeg2video, B-frames", ".ts", mpeg2_b},
    {"webm/vp8, alt-ref frames", ".webm", vp8_altref, false},
    {"webm/vp9, alt-ref frames", ".webm", vp9_altref, false},
    // Every seventh frame dropped: timestamps with gaps.
    {"mp4/h264, variable frame rate", ".mp4", x264_pyramid + " -fps_mode vfr", true,
     "select=not(eq(mod(n\\,7)\\,3))"},
    // Frames counted by decoding (no presentation timestamps): the verified order.
    {"avi/mpeg4, B-frames (dts only)", ".avi", mpeg4_b},
    {"avi/h264, B-pyramid (dts only)", ".avi", x264_pyramid},
    {"mpg/mpeg2video, B-frames", ".mpg", mpeg2_b},
    {"h264/h264, B-pyramid", ".h264", x264_pyramid},
};

std::filesystem::path file_of(std::size_t i) {
    return video_test::scratch("skipping" + std::to_string(i) + files[i].ext);
}

std::filesystem::path rgb_of(std::size_t i) {
    return video_test::scratch("skipping" + std::to_string(i) + ".rgb");
}

std::filesystem::path pts_of(std::size_t i) {
    return video_test::scratch("skipping" + std::to_string(i) + ".pts");
}

/// Makes every file once per run (60 frames of `testsrc2` at 64x48, 25 fps), with ffmpeg's
/// frames of each and ffprobe's timestamp of each frame.
void make_all() {
    static bool done = false;
    if (done) return;
    done = true;
    const std::string ffmpeg = "ffmpeg -hide_banner -loglevel error -nostdin -y ";
    std::vector<std::string> encode;
    for (std::size_t i = 0; i < files.size(); ++i) {
        const coded& f = files[i];
        encode.push_back(ffmpeg + "-f lavfi -i testsrc2=size=" + std::to_string(width) + "x" +
                         std::to_string(height) + ":rate=25 -frames:v " + std::to_string(frames) +
                         (f.filter.empty() ? "" : " -vf \"" + f.filter + "\"") + " " + f.codec +
                         " " + file_of(i).string());
    }
    video_test::run_all(encode);
    std::vector<std::string> decode;
    for (std::size_t i = 0; i < files.size(); ++i) {
        decode.push_back("ffmpeg -hide_banner -loglevel quiet -nostdin -i " + file_of(i).string() +
                         " -map 0:v:0 -vsync passthrough -sws_flags bilinear -f rawvideo "
                         "-pix_fmt rgb24 -y " +
                         rgb_of(i).string());
        decode.push_back(
            "ffprobe -v quiet -select_streams v:0 -show_entries "
            "frame=best_effort_timestamp_time -of csv=p=0 " +
            file_of(i).string() + " > " + pts_of(i).string());
    }
    video_test::run_all(decode);
}

/// ffprobe's timestamp of each frame of file `i` (NaN where it has none).
std::vector<double> probed_times(std::size_t i) {
    return video_test::probed_times_in(pts_of(i));
}

/// A selection, where the window starts (a frame of the whole file; 0: the file's start, no
/// window), and the frames of the whole file it must give.
struct pick {
    std::string name;
    ferry::frame_selection select;
    std::int64_t from = 0;
};

std::vector<std::int64_t> range(std::int64_t from, int count, int step) {
    std::vector<std::int64_t> v;
    for (int k = 0; k < count; ++k) v.push_back(from + static_cast<std::int64_t>(k) * step);
    return v;
}

/// The whole file's frames that `p` selects, for a file of `n` frames.
std::vector<std::int64_t> expected(const pick& p, std::int64_t n) {
    std::vector<std::int64_t> in_window;
    switch (p.select.mode()) {
        case ferry::frame_selection::kind::clip:
            return range(p.from, p.select.count(), p.select.stride());
        case ferry::frame_selection::kind::uniform: {
            const std::int64_t last = n - 1 - p.from;
            for (int k = 0; k < p.select.count(); ++k) {
                in_window.push_back(
                    p.from + std::llround(static_cast<double>(k) * last / (p.select.count() - 1)));
            }
            return in_window;
        }
        case ferry::frame_selection::kind::indices:
            for (std::int64_t k : p.select.frames()) in_window.push_back(p.from + k);
            return in_window;
        case ferry::frame_selection::kind::all:
            return range(p.from, static_cast<int>(n - p.from), 1);
        case ferry::frame_selection::kind::clips:  // clips.cpp's
        case ferry::frame_selection::kind::clips_at:
            break;
    }
    return in_window;
}

std::vector<pick> picks() {
    return {
        {"clip(16, 2)", ferry::frame_selection::clip(16, 2)},
        {"clip(8, 4)", ferry::frame_selection::clip(8, 4)},
        {"clip(6, 8)", ferry::frame_selection::clip(6, 8)},
        {"uniform(7)", ferry::frame_selection::uniform(7)},
        {"indices({5, 17, 18, 40, 41, 2})",
         ferry::frame_selection::indices({5, 17, 18, 40, 41, 2})},
        // Mid-GOP starts: the frames before the window are decoded only where referenced.
        {"clip(8, 2) from frame 35", ferry::frame_selection::clip(8, 2), 35},
        {"clip(16, 2) from frame 13, across a keyframe", ferry::frame_selection::clip(16, 2), 13},
        {"uniform(5) from frame 21", ferry::frame_selection::uniform(5), 21},
    };
}

/// What a stage named "decode" running `load_video(path, options)` on `path` `times` times
/// delivered (the last clip) and counted, and the stats report's text.
struct counted {
    ferry::video_clip clip;
    std::uint64_t decoded = 0;
    std::uint64_t kept = 0;
    std::string report;
};

counted load_counted(const std::filesystem::path& path, const ferry::video_options& options,
                     int times = 1, int threads = 1) {
    const std::vector<std::filesystem::path> paths(static_cast<std::size_t>(times), path);
    auto pipe =
        ferry::from(paths)
            .map([options](
                     const std::filesystem::path& p) { return ferry::ops::load_video(p, options); },
                 {.name = "decode"})
            .build({.threads = threads});
    counted out;
    int delivered = 0;
    for (const ferry::video_clip& clip : pipe) {
        out.clip = clip;
        ++delivered;
    }
    BOOST_TEST_REQUIRE(delivered == times);
    const auto stats = pipe.stats();
    BOOST_TEST_REQUIRE(stats.stages.size() >= 2U);
    BOOST_TEST(stats.stages.at(1).name == "decode");
    for (const auto& [name, count] : stats.stages.at(1).counters) {
        if (name == "frames decoded") out.decoded = count;
        if (name == "frames kept") out.kept = count;
    }
    std::ostringstream text;
    text << stats;
    out.report = text.str();
    return out;
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(skipping)

// Selections with gaps give ffmpeg's frames, byte for byte, whether frames nobody needs are
// skipped or not, for every codec with frames a decoder can skip and every way frames are
// counted; and skipping decodes fewer frames over the selections where the codec has frames to
// skip, as many where it has none.
BOOST_DATA_TEST_CASE(selected_frames_are_ffmpegs_with_gaps, bdata::xrange(files.size()), i) {
    BOOST_TEST_CONTEXT(files[i].name) {
        make_all();
        const auto path = file_of(i);
        const auto ref = video_test::bytes_of(rgb_of(i));
        BOOST_TEST_REQUIRE(ref.size() % frame_bytes == 0U);
        const auto n = static_cast<std::int64_t>(ref.size() / frame_bytes);
        // The variable-rate file loses every seventh frame.
        BOOST_TEST_REQUIRE(n >= 51);
        const auto times = probed_times(i);
        BOOST_TEST_REQUIRE(times.size() == static_cast<std::size_t>(n));
        // Decoding every frame, skipping, and skipping with frame threads (packets go in before
        // frames come out): 2, 3, and as many as ferry chooses for a stage of concurrency 1 on 2
        // pipeline threads (2).
        struct way {
            const char* name;
            bool skip;
            int threads;
            int pipeline_threads = 1;
        };
        const way ways[] = {{"every frame decoded", false, 1},
                            {"skip_nonref", true, 1},
                            {"skip_nonref, 2 frame threads", true, 2},
                            {"skip_nonref, 3 frame threads", true, 3},
                            {"skip_nonref, threads chosen (2)", true, 0, 2}};
        std::uint64_t decoded[std::size(ways)] = {};
        for (const pick& p : picks()) {
            const auto want = expected(p, n);
            for (std::size_t w = 0; w < std::size(ways); ++w) {
                BOOST_TEST_CONTEXT(p.name << ", " << ways[w].name) {
                    ferry::video_options o{.decode = {.select = p.select,
                                                      .threads = ways[w].threads,
                                                      .skip_nonref = ways[w].skip}};
                    if (p.from > 0) {
                        const double at = times[static_cast<std::size_t>(p.from)];
                        // A frame ffprobe cannot time (raw streams) has no start to ask for.
                        if (std::isnan(at)) continue;
                        o.demux.start = at;
                    }
                    const counted loaded = load_counted(path, o, 1, ways[w].pipeline_threads);
                    const ferry::video_clip& clip = loaded.clip;
                    decoded[w] += loaded.decoded;
                    BOOST_TEST_MESSAGE(files[i].name << ", " << p.name << ", " << ways[w].name
                                                     << ": " << loaded.decoded
                                                     << " frames decoded");
                    BOOST_TEST(loaded.kept == want.size());
                    BOOST_TEST_REQUIRE(clip.frames() == static_cast<int>(want.size()));
                    BOOST_TEST(!clip.truncated());
                    BOOST_TEST_REQUIRE((clip.width() == width && clip.height() == height));
                    for (int t = 0; t < clip.frames(); ++t) {
                        const auto at =
                            static_cast<std::size_t>(want[static_cast<std::size_t>(t)]) *
                            frame_bytes;
                        BOOST_TEST_REQUIRE(at + frame_bytes <= ref.size());
                        BOOST_TEST(
                            std::memcmp(clip.frame(t).data(), ref.data() + at, frame_bytes) == 0,
                            "frame " << t << " differs from ffmpeg's frame " << want[t]);
                    }
                }
            }
        }
        if (files[i].skips) {
            BOOST_TEST(decoded[1] < decoded[0]);
        } else {
            BOOST_TEST(decoded[1] == decoded[0]);
        }
    }
}

/// A 60-frame file from the ffmpeg CLI with `codec`'s options (cached per run).
std::filesystem::path counted_file(const std::string& codec, const std::string& ext) {
    static int made = 0;
    const auto path = video_test::scratch("counted" + std::to_string(made++) + ext);
    video_test::run_all(
        {"ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i "
         "testsrc2=size=64x48:rate=25 -frames:v 60 " +
         codec + " " + path.string()});
    return path;
}

// clip(16, 2) from the start of a 60-frame H.264 with B-frames: 16 frames kept per call, and
// fewer decoded than the 31 frames from the first to the last selected one that decoding every
// frame takes; the counters show on the stage's line of the report.
BOOST_AUTO_TEST_CASE(counts_frames_decoded_and_kept_per_call) {
    const auto path = counted_file(x264_pyramid, ".mp4");
    const auto select = ferry::frame_selection::clip(16, 2);
    const counted every =
        load_counted(path, {.decode = {.select = select, .skip_nonref = false}}, 2);
    const counted skipped = load_counted(path, {.decode = {.select = select}}, 2);
    BOOST_TEST(every.kept == 32U);
    BOOST_TEST(every.decoded == 62U);
    BOOST_TEST(skipped.kept == 32U);
    BOOST_TEST(skipped.decoded < every.decoded);
    BOOST_TEST(skipped.decoded >= skipped.kept);
    BOOST_TEST(
        skipped.report.find("stage 'decode': frames decoded " + std::to_string(skipped.decoded) +
                            ", frames kept 32") != std::string::npos,
        skipped.report);
}

// Where frames are counted by decoding (an AVI of MPEG-4 with B-frames) the counting pass is
// decoding too and is counted; skipping still decodes fewer.
BOOST_AUTO_TEST_CASE(counts_the_frames_a_counting_pass_decodes) {
    const auto path = counted_file(mpeg4_b, ".avi");
    const auto select = ferry::frame_selection::clip(16, 2);
    const counted every =
        load_counted(path, {.decode = {.select = select, .skip_nonref = false}}, 2);
    const counted skipped = load_counted(path, {.decode = {.select = select}}, 2);
    BOOST_TEST(every.kept == 32U);
    BOOST_TEST(skipped.kept == 32U);
    // Two passes over the 31 frames at least: the demuxer's count and the decode.
    BOOST_TEST(every.decoded >= 2U * 62U);
    BOOST_TEST(skipped.decoded < every.decoded);
}

// Where every frame is a reference (H.264 without B-frames) or an intra picture (MJPEG),
// skipping finds nothing to skip: as many frames are decoded as without it. (Keyframe jumps
// still save: frames 0-28 and the keyframe 30 without B-frames, the 16 selected in MJPEG.)
BOOST_AUTO_TEST_CASE(decodes_as_many_frames_where_none_can_be_skipped) {
    const auto select = ferry::frame_selection::clip(16, 2);
    for (const auto& [codec, ext, per_call] :
         std::vector<std::tuple<std::string, std::string, int>>{
             {"-c:v libx264 -preset veryfast -bf 0 -g 30 -pix_fmt yuv420p", ".mp4", 30},
             {"-c:v mjpeg -q:v 4 -pix_fmt yuvj420p", ".mkv", 16}}) {
        BOOST_TEST_CONTEXT(codec) {
            const auto path = counted_file(codec, ext);
            const counted every =
                load_counted(path, {.decode = {.select = select, .skip_nonref = false}}, 2);
            const counted skipped = load_counted(path, {.decode = {.select = select}}, 2);
            BOOST_TEST(every.decoded == 2U * static_cast<unsigned>(per_call));
            BOOST_TEST(skipped.decoded == every.decoded);
            BOOST_TEST(skipped.kept == 32U);
        }
    }
}

// threads = 0 (the default) lets a stage that runs fewer calls at once than its pipeline has
// threads decode with the rest: concurrency 1 on 2 threads opens the decoder with 2 threads
// (frame threads, for H.264), concurrency 2 on 2 threads with 1; a number is used as given, and
// the frames are the same.
BOOST_AUTO_TEST_CASE(chooses_decoder_threads_from_the_stages_share) {
    const auto path = counted_file(x264_pyramid, ".mp4");
    const auto select = ferry::frame_selection::clip(16, 2);
    const auto threads_per_call = [&](int pipeline_threads, int concurrency, int threads) {
        const std::vector<std::filesystem::path> paths(2, path);
        auto pipe = ferry::from(paths)
                        .map(
                            [select, threads](const std::filesystem::path& p) {
                                return ferry::ops::load_video(
                                    p, {.decode = {.select = select, .threads = threads}});
                            },
                            {.concurrency = concurrency, .name = "decode"})
                        .build({.threads = pipeline_threads});
        std::vector<ferry::video_clip> clips;
        for (ferry::video_clip& c : pipe) clips.push_back(std::move(c));
        BOOST_TEST_REQUIRE(clips.size() == 2U);
        std::uint64_t n = 0;
        const auto stats = pipe.stats();
        for (const auto& [name, count] : stats.stages.at(1).counters) {
            if (name == "decoder threads") n = count;
        }
        return std::make_pair(n / 2, std::move(clips.front()));
    };
    const auto [shared, threaded] = threads_per_call(2, 1, 0);
    BOOST_TEST(shared == 2U);
    BOOST_TEST(threads_per_call(2, 2, 0).first == 1U);
    BOOST_TEST(threads_per_call(1, 1, 0).first == 1U);
    const auto [given, one] = threads_per_call(2, 1, 1);
    BOOST_TEST(given == 1U);
    BOOST_TEST(threads_per_call(1, 1, 3).first == 3U);
    BOOST_TEST_REQUIRE(threaded.data().size() == one.data().size());
    BOOST_TEST(std::equal(threaded.data().begin(), threaded.data().end(), one.data().begin()));
    // Outside a stage call the default is one thread, and a negative count is refused.
    BOOST_TEST(ferry::this_call::cpu_share() == 0);
    try {
        (void)ferry::ops::load_video(path, {.decode = {.select = select, .threads = -1}});
        BOOST_FAIL("threads -1 was accepted");
    } catch (const ferry::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()) ==
                   "decode_video: threads -1 must be 0 (ferry chooses) to 64");
    }
    // Nor is a count FFmpeg would start thread by thread until the process may start no more.
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::load_video(path, {.decode = {.select = select, .threads = 65}}); },
        "decode_video: threads 65 must be 0 (ferry chooses) to 64");
}

BOOST_AUTO_TEST_SUITE_END()  // skipping
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace video_skipping_test
