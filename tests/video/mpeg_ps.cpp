// SPDX-License-Identifier: Apache-2.0
/// \file
/// probe_video on MPEG program streams, which state no duration: from a file or memory the
/// duration and frame count match the frames ffprobe decodes (within one frame), and a clip
/// chosen from them ends at the file's last frame; from a FIFO, and where the timestamps go
/// back, the duration is unknown, said so, and clips still load or fail naming the cause.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ferry/error.hpp>
#include <ferry/video.hpp>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace video_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_mpeg_ps_test {

/// An MPEG program stream the ffmpeg CLI writes: its name, rate and output options.
struct ps_case {
    std::string name;
    int rate_num;
    int rate_den;
    std::string options;  ///< after the input; the output path follows
    [[nodiscard]] double fps() const { return static_cast<double>(rate_num) / rate_den; }
};
std::ostream& operator<<(std::ostream& os, const ps_case& c) {
    return os << c.name;
}

// Small frames (testsrc at 128x72), several to a pack, where FFmpeg's own estimate falls short
// (by 3, 7, 0 and 18 frames), and a DVD's layout at 320x240 (2 frames short).
const std::vector<ps_case> cases{
    // ffmpeg's defaults: MPEG-2, no B-frames.
    {"mpeg2.mpg", 25, 1, "-frames:v 60 -c:v mpeg2video -f mpeg"},
    {"mpeg2-bframes.mpg", 30000, 1001, "-frames:v 47 -c:v mpeg2video -q:v 4 -bf 2 -g 12 -f mpeg"},
    {"mpeg1.mpg", 25, 1, "-frames:v 50 -c:v mpeg1video -f mpeg"},
    {"h264.mpg", 25, 1, "-frames:v 75 -c:v libx264 -preset veryfast -pix_fmt yuv420p -f mpeg"},
    // A DVD's layout with an AC-3 audio stream, 10 s: a tail of packs of both streams.
    {"dvd.vob", 25, 1, "-t 10 -c:v mpeg2video -b:v 1M -c:a ac3 -f vob"},
};

void run_command(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    BOOST_TEST_REQUIRE(rc == 0, "command failed (" << rc << "): " << cmd);
}

/// The case's file, made once per run: testsrc at 128x72, or for the VOB testsrc2 at 320x240
/// and a tone.
std::filesystem::path ps_file(const ps_case& c) {
    const auto path = scratch("ps-" + c.name);
    if (std::filesystem::exists(path)) return path;
    const bool vob = c.name.ends_with(".vob");
    std::string input = "-f lavfi -i " +
                        std::string(vob ? "testsrc2=size=320x240" : "testsrc=size=128x72") +
                        ":rate=" + std::to_string(c.rate_num) + "/" + std::to_string(c.rate_den);
    if (vob) input += " -f lavfi -i sine=frequency=440:sample_rate=48000";
    run_command("ffmpeg -hide_banner -loglevel error -nostdin -y " + input + " " + c.options + " " +
                path.string());
    return path;
}

/// What ffprobe says of a file's video stream: its first frame's time and the frames it decodes.
struct probed {
    double start = 0;
    long frames = 0;
};

probed ffprobe(const std::filesystem::path& path) {
    const auto out = scratch(path.filename().string() + ".ffprobe");
    run_command(
        "ffprobe -v error -count_frames -select_streams v:0 -show_entries "
        "stream=start_time,nb_read_frames -of default=noprint_wrappers=1 " +
        path.string() + " > " + out.string());
    std::ifstream in(out);
    probed p;
    for (std::string line; std::getline(in, line);) {
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = line.substr(0, eq);
        const std::string value = line.substr(eq + 1);
        if (key == "start_time") p.start = std::stod(value);
        if (key == "nb_read_frames") p.frames = std::stol(value);
    }
    BOOST_TEST_REQUIRE(p.frames > 0, "ffprobe counted no frames in " << path);
    return p;
}

}  // namespace video_mpeg_ps_test

using namespace video_mpeg_ps_test;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(mpeg_ps)

// Each program stream: the duration is the frames ffprobe decodes times one frame (within one
// frame), the estimated frame count within one of ffprobe's, both said to come from timestamps;
// the start is ffprobe's; bytes in memory probe alike.
BOOST_DATA_TEST_CASE(duration_and_frames_match_what_ffprobe_decodes, bdata::make(cases), c) {
    const auto path = ps_file(c);
    const probed want = ffprobe(path);
    const ferry::video_info info = ferry::ops::probe_video(path);
    const double frame = 1.0 / c.fps();
    BOOST_TEST(std::abs(info.duration - static_cast<double>(want.frames) * frame) <= frame,
               info.duration << " s for " << want.frames << " frames");
    BOOST_TEST(std::abs(info.frames - want.frames) <= 1,
               info.frames << " frames estimated, ffprobe decodes " << want.frames);
    BOOST_TEST(std::string(to_string(info.duration_from)) == "timestamps");
    BOOST_TEST((info.frames_from == ferry::frame_count_source::duration));
    BOOST_TEST(std::abs(info.start - want.start) < 1e-3, info.start << " s");
    BOOST_TEST(info.streams[static_cast<std::size_t>(info.stream)].duration == info.duration);

    const ferry::video_info memory = ferry::ops::probe_video(read_all(path));
    BOOST_TEST(memory.duration == info.duration);
    BOOST_TEST(memory.frames == info.frames);
    BOOST_TEST((memory.duration_from == info.duration_from));
}

// A clip of 8 frames started 8 frames before the probed end holds the file's last 8 frames
// (its last timestamp is the last frame's); a start past the probed end is a decode_error
// naming the window.
BOOST_DATA_TEST_CASE(a_clip_at_the_probed_end_is_the_files_last_frames, bdata::make(cases), c) {
    const auto path = ps_file(c);
    const probed want = ffprobe(path);
    const ferry::video_info info = ferry::ops::probe_video(path);
    const double frame = 1.0 / c.fps();
    const auto clip =
        ferry::ops::load_video(path, {.demux = {.start = info.start + info.duration - 8.5 * frame},
                                      .decode = {.select = ferry::frame_selection::clip(8)}});
    BOOST_TEST_REQUIRE(clip.frames() == 8);
    const double last = want.start + static_cast<double>(want.frames - 1) * frame;
    BOOST_TEST(std::abs(clip.timestamps().back() - last) < frame / 2,
               clip.timestamps().back() << " s, the last frame at " << last << " s");

    const double past = info.start + info.duration + 1.0;
    const auto e = ferry_test::expect_throw<ferry::decode_error>([&] {
        (void)ferry::ops::load_video(path, {.demux = {.start = past},
                                            .decode = {.select = ferry::frame_selection::clip(8)}});
    });
    char window[64];
    std::snprintf(window, sizeof window, "no decodable video frames in the window [%.3f s, end)",
                  past);
    BOOST_TEST(std::string(e.what()).find(window) != std::string::npos, e.what());
}

// Through a FIFO the end cannot be read ahead: the duration and the frame count are unknown,
// said so (0 and `unknown`), while the codec, size and rate are read; a clip from the start of
// the same stream through a FIFO still loads.
BOOST_AUTO_TEST_CASE(through_a_fifo_the_duration_is_unknown) {
    const auto path = ps_file(cases[0]);
    const auto fifo = scratch("ps-probe.fifo");
    video_test::fifo_feed writer(path, fifo);
    const ferry::video_info info = ferry::ops::probe_video(fifo);
    writer.finish();
    BOOST_TEST(info.duration == 0.0);
    BOOST_TEST(std::string(to_string(info.duration_from)) == "unknown");
    BOOST_TEST(info.frames == 0);
    BOOST_TEST((info.frames_from == ferry::frame_count_source::unknown));
    BOOST_TEST(info.codec == "mpeg2video");
    BOOST_TEST(info.width == 128);
    BOOST_TEST(info.frame_rate == 25.0);

    video_test::fifo_feed again(path, fifo);
    const auto clip =
        ferry::ops::load_video(fifo, {.decode = {.select = ferry::frame_selection::clip(8)}});
    again.finish();
    BOOST_TEST(clip.frames() == 8);
}

// Two program streams joined, the second's timestamps before the first's (files cut from
// different recordings): the length cannot be read from the ends, so it is unknown (FFmpeg's
// own estimate reads the drop as a timestamp wrap, some 26 hours), never a made-up duration.
BOOST_AUTO_TEST_CASE(timestamps_that_go_back_give_an_unknown_duration) {
    const auto later = scratch("ps-later.mpg");
    run_command(
        "ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i "
        "testsrc2=size=320x240:rate=25 -frames:v 60 -c:v mpeg2video -output_ts_offset 100 "
        "-f mpeg " +
        later.string());
    const auto joined = scratch("ps-joined.mpg");
    run_command("cat " + later.string() + " " + ps_file(cases[0]).string() + " > " +
                joined.string());
    const ferry::video_info info = ferry::ops::probe_video(joined);
    BOOST_TEST(info.duration == 0.0, info.duration << " s");
    BOOST_TEST(std::string(to_string(info.duration_from)) == "unknown");
    BOOST_TEST(info.frames == 0);
    BOOST_TEST((info.frames_from == ferry::frame_count_source::unknown));
    // Loading is unaffected: the first clip is the first part's first frames.
    const auto clip =
        ferry::ops::load_video(joined, {.decode = {.select = ferry::frame_selection::clip(8)}});
    BOOST_TEST(clip.frames() == 8);
}

BOOST_AUTO_TEST_SUITE_END()  // mpeg_ps
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops
