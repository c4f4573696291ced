// SPDX-License-Identifier: Apache-2.0
/// \file
/// The one rule for video: what the ffmpeg CLI decodes, ferry decodes, the same frames. A matrix
/// of containers x the codecs Debian's FFmpeg encodes for them (B-frames where the codec has
/// them), plus damaged files ffmpeg still decodes (an AVI header that overstates or understates
/// its frames, an MP4 with its moov first cut short, an edit list that discards frames, packets
/// without presentation timestamps), each made by the ffmpeg CLI in the test: the frame count and
/// the frames of `all()`, `uniform(8)` and `clip(8, 2)` equal, byte for byte, to `ffmpeg -vsync
/// passthrough -sws_flags bilinear -pix_fmt rgb24` decoding the same file, and each frame's
/// timestamp equal to ffprobe's `best_effort_timestamp_time`.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ferry/error.hpp>
#include <ferry/video.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace video_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_containers_test {

constexpr int width = 64;
constexpr int height = 48;
constexpr int frames = 24;
constexpr std::size_t frame_bytes = std::size_t{width} * height * 3;

/// How a file of the matrix is damaged after encoding.
enum class damage { none, avi_frames_444, avi_frames_5, cut_at_70_percent, edit_list, head_cut };

struct sample {
    std::string name;   ///< the case's name, e.g. "mpg/mpeg2video"
    std::string ext;    ///< container, by extension
    std::string codec;  ///< ffmpeg's output options for the video
    damage harm = damage::none;
    /// The file is cut or its header overstates its frames: ferry marks it truncated, and
    /// strict makes it an error.
    [[nodiscard]] bool truncated() const {
        return harm == damage::avi_frames_444 || harm == damage::cut_at_70_percent ||
               harm == damage::head_cut;
    }
};

const std::string x264 = "-c:v libx264 -preset veryfast -bf 2 -g 12 -pix_fmt yuv420p";
const std::string mpeg4 = "-c:v mpeg4 -q:v 4 -bf 2 -g 12";
const std::string mpeg1 = "-c:v mpeg1video -q:v 4 -bf 2 -g 12";
const std::string mpeg2 = "-c:v mpeg2video -q:v 4 -bf 2 -g 12";
const std::string mjpeg = "-c:v mjpeg -q:v 4 -pix_fmt yuvj420p";
const std::string vp8 = "-c:v libvpx -deadline realtime -cpu-used 8 -b:v 300k -g 12";
const std::string vp9 = "-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -b:v 300k -g 12";
const std::string theora = "-c:v libtheora -q:v 6 -g 12";
const std::string flv1 = "-c:v flv -q:v 4 -g 12";

const std::vector<sample> samples{
    {"mp4/h264", ".mp4", x264},
    {"mp4/mpeg4", ".mp4", mpeg4},
    {"mp4/mjpeg", ".mp4", mjpeg},
    {"mov/h264", ".mov", x264},
    {"mov/mpeg4", ".mov", mpeg4},
    {"mkv/h264", ".mkv", x264},
    {"mkv/mpeg4", ".mkv", mpeg4},
    {"mkv/vp9", ".mkv", vp9},
    {"mkv/theora", ".mkv", theora},
    {"webm/vp8", ".webm", vp8},
    {"webm/vp9", ".webm", vp9},
    {"avi/mpeg4 (dts only)", ".avi", mpeg4},
    {"avi/h264 (dts only)", ".avi", x264},
    {"avi/mjpeg", ".avi", mjpeg},
    {"avi/mpeg2video", ".avi", mpeg2},
    {"mpg/mpeg1video", ".mpg", mpeg1},
    {"mpg/mpeg2video", ".mpg", mpeg2},
    {"ts/mpeg2video", ".ts", mpeg2},
    {"ts/h264", ".ts", x264},
    {"ogv/theora", ".ogv", theora},
    {"flv/flv1", ".flv", flv1},
    {"flv/h264", ".flv", x264},
    {"m1v/mpeg1video", ".m1v", mpeg1},
    {"m2v/mpeg2video", ".m2v", mpeg2},
    {"h264/h264", ".h264", x264},
    {"avi/mpeg4, header declares 444 frames", ".avi", mpeg4, damage::avi_frames_444},
    {"avi/mjpeg, header declares 5 frames", ".avi", mjpeg, damage::avi_frames_5},
    {"mp4/h264 moov first, cut at 70%", ".mp4", x264 + " -movflags +faststart",
     damage::cut_at_70_percent},
    {"mp4/h264, an edit list discards 5 frames", ".mp4", x264, damage::edit_list},
    {"ts/h264, the first 30% cut off (mid-GOP)", ".ts", x264, damage::head_cut},
    {"ts/mpeg2video, the first 30% cut off (mid-GOP)", ".ts", mpeg2, damage::head_cut},
    {"ts/h264 with open GOPs, the first 30% cut off (mid-GOP)", ".ts",
     x264 + " -x264-params open-gop=1", damage::head_cut},
};

void write(const std::filesystem::path& path, const std::vector<std::uint8_t>& data) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(data.data()),
               static_cast<std::streamsize>(data.size()));
}

/// Sets the little-endian 32-bit field `offset` bytes after the first `chunk` tag.
void patch_u32(std::vector<std::uint8_t>& data, const std::string& chunk, std::size_t offset,
               std::uint32_t value) {
    const auto at = std::search(data.begin(), data.end(), chunk.begin(), chunk.end());
    BOOST_TEST_REQUIRE((at != data.end()), "no " << chunk << " chunk");
    const auto pos = static_cast<std::size_t>(at - data.begin()) + offset;
    BOOST_TEST_REQUIRE(pos + 4 <= data.size());
    for (int i = 0; i < 4; ++i) data[pos + static_cast<std::size_t>(i)] = (value >> (8 * i)) & 0xff;
}

std::filesystem::path file_of(std::size_t i) {
    return scratch("matrix" + std::to_string(i) + samples[i].ext);
}

/// Makes every file of the matrix once per run: 24 frames of `testsrc2` at 64x48, 25 fps,
/// encoded and then damaged; and ffmpeg's frames of each (`matrixN.rgb`).
void make_all() {
    static bool done = false;
    if (done) return;
    done = true;
    const std::string ffmpeg = "ffmpeg -hide_banner -loglevel error -nostdin -y ";
    const std::string source = "-f lavfi -i testsrc2=size=" + std::to_string(width) + "x" +
                               std::to_string(height) + ":rate=25 -frames:v " +
                               std::to_string(frames) + " ";
    std::vector<std::string> encode;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const sample& s = samples[i];
        const auto path = file_of(i).string();
        if (s.harm == damage::edit_list) {
            // Stream copy from 0.2 s: the packets from the keyframe before it stay (later frames
            // need them) and the edit list marks the five before 0.2 s as discarded.
            const auto whole = scratch("matrix" + std::to_string(i) + "-whole" + s.ext).string();
            encode.push_back(ffmpeg + source + s.codec + " " + whole + " && " + ffmpeg +
                             "-ss 0.2 -i " + whole + " -c copy " + path);
        } else {
            encode.push_back(ffmpeg + source + s.codec + " " + path);
        }
    }
    run_all(encode);
    std::vector<std::string> decode;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const sample& s = samples[i];
        auto data = bytes_of(file_of(i));
        if (s.harm == damage::avi_frames_444 || s.harm == damage::avi_frames_5) {
            const std::uint32_t n = s.harm == damage::avi_frames_444 ? 444 : 5;
            patch_u32(data, "avih", 8 + 16, n);  // dwTotalFrames
            patch_u32(data, "strh", 8 + 32, n);  // the video stream's dwLength
            write(file_of(i), data);
        } else if (s.harm == damage::cut_at_70_percent) {
            data.resize(data.size() * 7 / 10);
            write(file_of(i), data);
        } else if (s.harm == damage::head_cut) {
            // At a transport packet's boundary (188 bytes), inside the first GOP: the stream
            // starts with frames whose references, and a packet whose start, are gone, as a
            // capture or segment cut at a byte offset does.
            const std::size_t cut = data.size() * 3 / 10 / 188 * 188;
            data.erase(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(cut));
            write(file_of(i), data);
        }
        decode.push_back("ffmpeg -hide_banner -loglevel quiet -nostdin -i " + file_of(i).string() +
                         " -map 0:v:0 -vsync passthrough -sws_flags bilinear -f rawvideo "
                         "-pix_fmt rgb24 -y " +
                         scratch("matrix" + std::to_string(i) + ".rgb").string());
        // And ffprobe's timestamp of each frame it decodes, one a line.
        decode.push_back(
            "ffprobe -v quiet -select_streams v:0 -show_entries "
            "frame=best_effort_timestamp_time -of csv=p=0 " +
            file_of(i).string() + " > " + scratch("matrix" + std::to_string(i) + ".pts").string());
    }
    run_all(decode);
}

/// Sample `i`'s file.
std::filesystem::path make(std::size_t i) {
    make_all();
    return file_of(i);
}

/// ffmpeg's frames of sample `i`, rgb24, as the CLI writes them.
std::vector<std::uint8_t> reference(std::size_t i) {
    make_all();
    return bytes_of(scratch("matrix" + std::to_string(i) + ".rgb"));
}

/// ffprobe's timestamp of each frame of sample `i`, in seconds ("N/A" lines as NaN).
std::vector<double> reference_timestamps(std::size_t i) {
    make_all();
    return probed_times_in(scratch("matrix" + std::to_string(i) + ".pts"));
}

/// The samples ffmpeg's header, cut and edit-list damage leaves alone.
std::vector<std::size_t> intact_samples() {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        if (samples[i].harm == damage::none) out.push_back(i);
    }
    return out;
}

/// Checks that each frame of `clip` is frame `want[t]` of the reference.
void same_frames(const ferry::video_clip& clip, const std::vector<std::uint8_t>& ref,
                 const std::vector<std::int64_t>& want, const std::string& what) {
    BOOST_TEST_REQUIRE(clip.frames() == static_cast<int>(want.size()), what);
    BOOST_TEST(clip.indices() == want, what << ": " << boost::test_tools::per_element());
    BOOST_TEST_REQUIRE((clip.width() == width && clip.height() == height), what);
    for (int t = 0; t < clip.frames(); ++t) {
        const auto at = static_cast<std::size_t>(want[static_cast<std::size_t>(t)]) * frame_bytes;
        BOOST_TEST_REQUIRE(at + frame_bytes <= ref.size());
        const bool same = std::memcmp(clip.frame(t).data(), ref.data() + at, frame_bytes) == 0;
        BOOST_TEST(same, what << ": frame " << t << " (ffmpeg's frame " << want[t]
                              << ") differs from ffmpeg's");
    }
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(containers)

// Every file of the matrix: as many frames as ffmpeg decodes, and the same frames for all(),
// uniform(8) and clip(8, 2); truncated exactly where the file is cut or overstates its frames.
BOOST_DATA_TEST_CASE(decodes_what_ffmpeg_decodes, bdata::xrange(samples.size()), i) {
    const sample& s = samples[i];
    BOOST_TEST_CONTEXT(s.name) {
        const auto path = make(i);
        const auto ref = reference(i);
        BOOST_TEST_REQUIRE(ref.size() % frame_bytes == 0U);
        const auto n = static_cast<std::int64_t>(ref.size() / frame_bytes);

        const auto pkts = ferry::ops::demux_video(path);
        BOOST_TEST(pkts.frames() == n);
        BOOST_TEST(pkts.truncated() == s.truncated(), pkts.truncation());

        std::vector<std::int64_t> every;
        for (std::int64_t k = 0; k < n; ++k) every.push_back(k);
        const auto all = ferry::ops::decode_video(pkts);
        same_frames(all, ref, every, "all()");
        BOOST_TEST(all.truncated() == s.truncated());
        // Each frame's time is the one ffprobe gives it (ffprobe prints microseconds).
        const auto probed = reference_timestamps(i);
        BOOST_TEST_REQUIRE(probed.size() == static_cast<std::size_t>(n));
        BOOST_TEST_REQUIRE(all.timestamps().size() == probed.size());
        for (std::size_t t = 0; t < probed.size(); ++t) {
            if (std::isnan(probed[t])) continue;  // ffprobe has none: see the order check
            BOOST_TEST(std::abs(all.timestamps()[t] - probed[t]) < 1e-6,
                       "frame " << t << ": ferry " << all.timestamps()[t] << " s, ffprobe "
                                << probed[t] << " s");
        }
        // Where ffprobe has no time for a frame (raw streams, AVI's and MPEG's last frame),
        // ferry's still comes in presentation order.
        for (std::size_t t = 1; t < probed.size(); ++t) {
            BOOST_TEST(all.timestamps()[t] > all.timestamps()[t - 1], "frame " << t);
        }

        std::vector<std::int64_t> spread;
        for (int k = 0; k < 8; ++k) spread.push_back(std::llround(k * (n - 1) / 7.0));
        // Strict where the file is intact: keyframe jumps must not read as damage.
        const auto uniform = ferry::ops::load_video(
            path,
            {.decode = {.select = ferry::frame_selection::uniform(8), .strict = !s.truncated()}});
        same_frames(uniform, ref, spread, "uniform(8)");

        const ferry::video_options two{.decode = {.select = ferry::frame_selection::clip(8, 2)}};
        if (n >= 15) {
            same_frames(ferry::ops::load_video(path, two), ref, {0, 2, 4, 6, 8, 10, 12, 14},
                        "clip(8, 2)");
        } else {
            // Fewer frames decode than the clip needs (libtheora drops repeated frames, a cut
            // file holds fewer): a decode_error that says how many decode.
            const auto e = ferry_test::expect_throw<ferry::decode_error>(
                [&] { (void)ferry::ops::load_video(path, two); });
            const std::string first_missing = "frame " + std::to_string((n + 1) / 2 * 2);
            BOOST_TEST(e.what().find(first_missing + " is selected") != std::string::npos,
                       e.what());
        }

        // One frame past the end is a decode_error that says how many frames decode.
        const auto e = ferry_test::expect_throw<ferry::decode_error>([&] {
            (void)ferry::ops::decode_video(pkts, {.select = ferry::frame_selection::indices({n})});
        });
        BOOST_TEST(
            e.what().find("the window has " + std::to_string(n) + " frames") != std::string::npos,
            e.what());

        if (s.truncated()) {
            const auto strict = ferry_test::expect_throw<ferry::decode_error>(
                [&] { (void)ferry::ops::load_video(path, {.demux = {.strict = true}}); });
            BOOST_TEST(strict.what().find("truncated: ") != std::string::npos, strict.what());
        } else {
            BOOST_TEST(!ferry::ops::load_video(path, {.decode = {.strict = true}}).truncated());
        }
    }
}

// A window from 0.4 s to 0.8 s after the first frame holds the frames ffmpeg shows in it,
// whichever way the container times its packets: its count and frames agree with the whole
// file's.
BOOST_DATA_TEST_CASE(windows_agree_with_the_whole_file, bdata::make(intact_samples()), i) {
    const sample& s = samples[i];
    BOOST_TEST_CONTEXT(s.name) {
        const auto path = make(i);
        const auto ref = reference(i);
        const auto whole = ferry::ops::decode_video(ferry::ops::demux_video(path));
        // Stream timestamps: MPEG-TS starts at 1.4 s, B-frames in MP4 shift the first.
        const double start = whole.timestamps().front() + 0.4;
        const double end = whole.timestamps().front() + 0.8;
        const auto pkts = ferry::ops::demux_video(path, {.start = start, .end = end});
        // The whole file's frames whose timestamps are in [start, end).
        std::vector<std::int64_t> inside;
        for (int t = 0; t < whole.frames(); ++t) {
            const double at = whole.timestamps()[static_cast<std::size_t>(t)];
            if (at >= start - 1e-6 && at < end - 1e-6) inside.push_back(t);
        }
        // libtheora drops repeated frames: fewer of them in the window.
        BOOST_TEST(inside.size() >= (s.codec == theora ? 6U : 10U));
        BOOST_TEST(pkts.frames() == static_cast<std::int64_t>(inside.size()));
        const auto window = ferry::ops::decode_video(pkts);
        std::vector<std::int64_t> own;
        for (std::size_t k = 0; k < inside.size(); ++k) own.push_back(static_cast<std::int64_t>(k));
        BOOST_TEST_REQUIRE(window.frames() == static_cast<int>(inside.size()));
        BOOST_TEST(window.indices() == own, boost::test_tools::per_element());
        for (int t = 0; t < window.frames(); ++t) {
            const auto at =
                static_cast<std::size_t>(inside[static_cast<std::size_t>(t)]) * frame_bytes;
            BOOST_TEST(std::memcmp(window.frame(t).data(), ref.data() + at, frame_bytes) == 0,
                       "window frame " << t << " differs from ffmpeg's frame " << inside[t]);
        }
    }
}

/// The samples cut at the front, mid-GOP.
std::vector<std::size_t> head_cut_samples() {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        if (samples[i].harm == damage::head_cut) out.push_back(i);
    }
    return out;
}

// A file cut at the front, mid-GOP (H.264 and MPEG-2 with open GOPs, whose first keyframe is
// followed by B-frames that show before it and need the GOP cut away): a window that starts
// before the first keyframe holds what ffmpeg decodes from there, not the packets' count, and
// says why it is short.
BOOST_DATA_TEST_CASE(a_window_before_the_first_keyframe_of_a_cut_file,
                     bdata::make(head_cut_samples()), i) {
    const sample& s = samples[i];
    BOOST_TEST_CONTEXT(s.name) {
        const auto path = make(i);
        const auto ref = reference(i);
        const auto n = static_cast<int>(ref.size() / frame_bytes);
        const auto whole = ferry::ops::decode_video(ferry::ops::demux_video(path));
        BOOST_TEST_REQUIRE(whole.frames() == n);
        BOOST_TEST(whole.truncated());
        const double start = std::max(0.01, whole.timestamps().front() - 0.2);
        const double end = whole.timestamps().front() + 0.3;
        const auto pkts = ferry::ops::demux_video(path, {.start = start, .end = end});
        std::vector<std::int64_t> inside;
        for (int t = 0; t < n; ++t) {
            const double at = whole.timestamps()[static_cast<std::size_t>(t)];
            if (at >= start - 1e-6 && at < end - 1e-6) inside.push_back(t);
        }
        BOOST_TEST_REQUIRE(inside.size() >= 7U);
        BOOST_TEST(inside.front() == 0);
        BOOST_TEST(pkts.frames() == static_cast<std::int64_t>(inside.size()));
        const auto window = ferry::ops::decode_video(pkts);
        BOOST_TEST_REQUIRE(window.frames() == static_cast<int>(inside.size()));
        for (int t = 0; t < window.frames(); ++t) {
            const auto at =
                static_cast<std::size_t>(inside[static_cast<std::size_t>(t)]) * frame_bytes;
            BOOST_TEST(std::memcmp(window.frame(t).data(), ref.data() + at, frame_bytes) == 0,
                       "window frame " << t << " differs from ffmpeg's frame " << inside[t]);
        }
        // From the start of the file: the packets before the keyframe are named.
        const auto e = ferry_test::expect_throw<ferry::decode_error>(
            [&] { (void)ferry::ops::demux_video(path, {.strict = true}); });
        BOOST_TEST(e.what().find("packets before its first keyframe, and their frames cannot be "
                                 "decoded") != std::string::npos,
                   e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()  // containers
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace video_containers_test
