// SPDX-License-Identifier: Apache-2.0
/// \file
/// probe_video on files made by the ffmpeg CLI: duration, rate, estimated frames, codec, size
/// and pixel format for each container at 25 and 30000/1001 fps, audio streams, memory equal to
/// path, bad input (empty, not a container, audio only, cut), and reading only the head.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "../support/blocked_call.hpp"
#include "../support/expect.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace video_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_probe_test {

/// A container and codec ffmpeg writes, what probe_video must read back, and how far the
/// estimated frame count may be off (0: exact).
struct container_case {
    std::string ext;
    std::string encoder;
    std::string codec;  ///< FFmpeg's name, as probe_video reports it
    std::string pixel_format;
    ferry::frame_count_source frames_from;
    double frames_tolerance;  ///< fraction of the true count
};
std::ostream& operator<<(std::ostream& os, const container_case& c) {
    return os << c.ext << "/" << c.codec;
}

using fc = ferry::frame_count_source;
const std::vector<container_case> containers{
    {".mp4", "libx264", "h264", "yuv420p", fc::header, 0.0},
    {".mov", "mjpeg", "mjpeg", "yuvj420p", fc::header, 0.0},
    {".avi", "mpeg4", "mpeg4", "yuv420p", fc::header, 0.0},
    {".mkv", "libx264", "h264", "yuv420p", fc::duration, 0.0},
    {".webm", "libvpx-vp9", "vp9", "yuv420p", fc::duration, 0.0},
    {".ogv", "libtheora", "theora", "yuv420p", fc::duration, 0.0},
    {".ts", "mpeg2video", "mpeg2video", "yuv420p", fc::duration, 0.0},
    // MPEG-PS states no duration: probe_video counts the frames from their decode times at the
    // start and near the end (FFmpeg's own estimate falls short by the frames of the last pack).
    {".mpg", "mpeg2video", "mpeg2video", "yuv420p", fc::duration, 0.0},
};

struct rate {
    int num;
    int den;
    [[nodiscard]] double fps() const { return static_cast<double>(num) / den; }
    [[nodiscard]] std::string text() const {
        return std::to_string(num) + "/" + std::to_string(den);
    }
};

constexpr int test_frames = 60;

void run_ffmpeg(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    BOOST_TEST_REQUIRE(rc == 0, "command failed (" << rc << "): " << cmd);
}

/// `frames` frames of ffmpeg's test pattern `source` (testsrc, or testsrc2 which compresses less)
/// at `r`, encoded into `name`'s container, plus `extra` options.
std::filesystem::path pattern_file(const std::string& name, const std::string& source,
                                   const std::string& encoder, rate r, int frames, int width,
                                   int height, const std::string& extra) {
    const auto path = scratch(name);
    if (std::filesystem::exists(path)) return path;
    const std::string pix = encoder == "mjpeg" ? "yuvj420p" : "yuv420p";
    run_ffmpeg("ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i " + source +
               "=size=" + std::to_string(width) + "x" + std::to_string(height) +
               ":rate=" + r.text() + " -frames:v " + std::to_string(frames) + " -c:v " + encoder +
               " -pix_fmt " + pix + " " + extra + " " + path.string());
    return path;
}

std::filesystem::path container_file(const container_case& c, rate r) {
    return pattern_file("probe-" + std::to_string(r.num) + c.ext, "testsrc", c.encoder, r,
                        test_frames, 128, 72, "");
}

/// A 10 s 640x360 H.264 MP4 with its index first (`+faststart`), 250 frames at 25 fps.
std::filesystem::path long_faststart() {
    return pattern_file("probe-long.mp4", "testsrc2", "libx264", {25, 1}, 250, 640, 360,
                        "-preset veryfast -g 50 -movflags +faststart");
}

/// `bytes` as a file named `name`.
std::filesystem::path write_file(const std::string& name, std::span<const std::byte> bytes) {
    const auto path = scratch(name);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    BOOST_TEST_REQUIRE(static_cast<bool>(out));
    return path;
}

/// Every field of `a` and `b` equal.
void check_same(const ferry::video_info& a, const ferry::video_info& b) {
    BOOST_TEST(a.format == b.format);
    BOOST_TEST(a.stream == b.stream);
    BOOST_TEST(a.duration == b.duration);
    BOOST_TEST(a.start == b.start);
    BOOST_TEST(a.frame_rate == b.frame_rate);
    BOOST_TEST(a.frames == b.frames);
    BOOST_TEST((a.frames_from == b.frames_from));
    BOOST_TEST(a.codec == b.codec);
    BOOST_TEST(a.width == b.width);
    BOOST_TEST(a.height == b.height);
    BOOST_TEST(a.pixel_format == b.pixel_format);
    BOOST_TEST(a.bit_rate == b.bit_rate);
    BOOST_REQUIRE_EQUAL(a.streams.size(), b.streams.size());
    for (std::size_t i = 0; i < a.streams.size(); ++i) {
        const ferry::stream_info& s = a.streams[i];
        const ferry::stream_info& t = b.streams[i];
        BOOST_TEST(s.index == t.index);
        BOOST_TEST((s.type == t.type));
        BOOST_TEST(s.codec == t.codec);
        BOOST_TEST(s.start == t.start);
        BOOST_TEST(s.duration == t.duration);
        BOOST_TEST(s.frames == t.frames);
        BOOST_TEST(s.bit_rate == t.bit_rate);
        BOOST_TEST(s.width == t.width);
        BOOST_TEST(s.height == t.height);
        BOOST_TEST(s.frame_rate == t.frame_rate);
        BOOST_TEST(s.pixel_format == t.pixel_format);
        BOOST_TEST(s.sample_rate == t.sample_rate);
        BOOST_TEST(s.channels == t.channels);
    }
}

}  // namespace video_probe_test

using namespace video_probe_test;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(probe)

// Each container at 25 and 30000/1001 fps: the rate, the duration, the codec, the size and the
// pixel format as encoded; the frame count exact where the header states it, else within the
// estimate's documented tolerance; the one stream listed as video.
BOOST_DATA_TEST_CASE(reads_each_containers_duration_rate_and_frames,
                     bdata::make(containers) * bdata::make(std::vector<int>{25, 30000}), c,
                     rate_num) {
    const rate r = rate_num == 25 ? rate{25, 1} : rate{30000, 1001};
    const auto path = container_file(c, r);
    const ferry::video_info info = ferry::ops::probe_video(path);
    const double true_duration = test_frames / r.fps();

    BOOST_TEST(info.stream == 0);
    BOOST_TEST(info.codec == c.codec);
    BOOST_TEST(info.width == 128);
    BOOST_TEST(info.height == 72);
    BOOST_TEST(info.pixel_format == c.pixel_format);
    BOOST_TEST(std::abs(info.frame_rate - r.fps()) < 1e-6, info.frame_rate << " fps");
    BOOST_TEST((info.frames_from == c.frames_from), to_string(info.frames_from));
    BOOST_TEST(std::abs(info.frames - test_frames) <= c.frames_tolerance * test_frames,
               info.frames << " frames estimated, " << test_frames << " encoded");
    if (c.frames_tolerance == 0.0) {
        BOOST_TEST(std::abs(info.duration - true_duration) < 1e-3, info.duration << " s");
    } else {
        BOOST_TEST(std::abs(info.duration - true_duration) <= c.frames_tolerance * true_duration,
                   info.duration << " s");
    }
    BOOST_TEST(info.bit_rate > 0);
    BOOST_REQUIRE_EQUAL(info.streams.size(), 1U);
    BOOST_TEST((info.streams[0].type == ferry::stream_type::video));
    BOOST_TEST(info.streams[0].codec == c.codec);
    BOOST_TEST(info.streams[0].frame_rate == info.frame_rate);
    if (c.frames_from == fc::header) BOOST_TEST(info.streams[0].frames == test_frames);
}

// MPEG-TS starts its timestamps at an offset: start says where, as the time of the first
// frame that decodes (demux_options::start and end count in the same stream time).
BOOST_AUTO_TEST_CASE(start_is_the_first_frames_timestamp) {
    const auto path = container_file(containers[6], {25, 1});
    const ferry::video_info info = ferry::ops::probe_video(path);
    BOOST_TEST(info.start > 1.0, info.start << " s");
    const auto clip =
        ferry::ops::load_video(path, {.decode = {.select = ferry::frame_selection::indices({0})}});
    BOOST_REQUIRE_EQUAL(clip.timestamps().size(), 1U);
    BOOST_TEST(std::abs(clip.timestamps()[0] - info.start) < 1e-3, clip.timestamps()[0] << " s");
}

// A file with audio and video lists both, with the audio's rate and channels; the video
// fields are the video stream's.
BOOST_AUTO_TEST_CASE(lists_audio_and_video_streams_with_rate_and_channels) {
    const auto path = scratch("probe-av.mkv");
    run_ffmpeg(
        "ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i sine=frequency=440:"
        "sample_rate=48000:duration=2 -f lavfi -i testsrc=size=64x48:rate=25 -t 2 -map 0:a "
        "-map 1:v -c:a flac -ac 2 -c:v libx264 -pix_fmt yuv420p " +
        path.string());
    const ferry::video_info info = ferry::ops::probe_video(path);
    BOOST_REQUIRE_EQUAL(info.streams.size(), 2U);
    const ferry::stream_info& a = info.streams[0];
    const ferry::stream_info& v = info.streams[1];
    BOOST_TEST((a.type == ferry::stream_type::audio));
    BOOST_TEST(a.index == 0);
    BOOST_TEST(a.codec == "flac");
    BOOST_TEST(a.sample_rate == 48000);
    BOOST_TEST(a.channels == 2);
    BOOST_TEST(a.width == 0);
    BOOST_TEST((v.type == ferry::stream_type::video));
    BOOST_TEST(v.index == 1);
    BOOST_TEST(v.sample_rate == 0);
    BOOST_TEST(info.stream == 1);
    BOOST_TEST(info.codec == "h264");
    BOOST_TEST(info.width == 64);
    BOOST_TEST(info.height == 48);
    BOOST_TEST(info.frames == 50);
    BOOST_TEST(std::string(to_string(a.type)) == "audio");
}

// Bytes in memory probe exactly as the file they came from, for every container.
BOOST_DATA_TEST_CASE(memory_probes_as_the_path_does, bdata::make(containers), c) {
    const auto path = container_file(c, {30000, 1001});
    const ferry::bytes data = read_all(path);
    check_same(ferry::ops::probe_video(data), ferry::ops::probe_video(path));
}

// Zero bytes and bytes that are no container are decode_errors naming the item; a missing
// file is an io_error.
BOOST_AUTO_TEST_CASE(empty_and_garbage_input_are_decode_errors_naming_the_item) {
    const ferry::bytes none;
    BOOST_TEST(ferry_test::expect_throw<ferry::decode_error>([&] {
                   (void)ferry::ops::probe_video(none);
               }).what() == "probe_video: <memory>: empty input (0 bytes)");
    const auto empty = write_file("probe-empty.mp4", {});
    BOOST_TEST(ferry_test::expect_throw<ferry::decode_error>([&] {
                   (void)ferry::ops::probe_video(empty);
               }).what() == "probe_video: " + empty.string() + ": empty input (0 bytes)");

    std::vector<std::byte> junk(5000);
    for (std::size_t i = 0; i < junk.size(); ++i) junk[i] = std::byte((i * 7919 + 13) % 251);
    const auto junk_file = write_file("probe-junk.mp4", junk);
    const std::string file_error = ferry_test::expect_throw<ferry::decode_error>([&] {
                                       (void)ferry::ops::probe_video(junk_file);
                                   }).what();
    BOOST_TEST(file_error.starts_with("probe_video: " + junk_file.string() +
                                      ": cannot open the container: "),
               file_error);
    const std::string memory_error =
        ferry_test::expect_throw<ferry::decode_error>([&] {
            (void)ferry::ops::probe_video(std::span<const std::byte>(junk));
        }).what();
    BOOST_TEST(memory_error.starts_with("probe_video: <memory>: cannot open the container: "),
               memory_error);

    const auto missing = scratch("probe-missing.mp4");
    BOOST_TEST(ferry_test::expect_throw<ferry::io_error>([&] {
                   (void)ferry::ops::probe_video(missing);
               }).what() == "probe_video: " + missing.string() + ": No such file or directory");
}

// Audio alone is a decode_error that lists what the file holds; with require_video = false the
// streams come back with no video stream chosen.
BOOST_AUTO_TEST_CASE(audio_only_is_a_decode_error_unless_video_is_optional) {
    const auto path = tone_file({440, 660}, 22050, 0.5, "flac", ".flac");
    BOOST_TEST(ferry_test::expect_throw<ferry::decode_error>([&] {
                   (void)ferry::ops::probe_video(path);
               }).what() == "probe_video: " + path.string() + ": no video stream (audio flac)");
    const ferry::video_info info = ferry::ops::probe_video(path, {.require_video = false});
    BOOST_TEST(info.stream == -1);
    BOOST_TEST(info.codec.empty());
    BOOST_TEST(info.frames == 0);
    BOOST_TEST((info.frames_from == fc::unknown));
    BOOST_REQUIRE_EQUAL(info.streams.size(), 1U);
    BOOST_TEST((info.streams[0].type == ferry::stream_type::audio));
    BOOST_TEST(info.streams[0].sample_rate == 22050);
    BOOST_TEST(info.streams[0].channels == 2);
    BOOST_TEST(std::abs(info.streams[0].duration - 0.5) < 1e-3);
}

// The first half of each container either still probes, as the video it began as, or is a
// decode_error naming <memory>; an MP4 whose index is at the end is the latter.
BOOST_DATA_TEST_CASE(a_cut_file_probes_or_is_a_decode_error, bdata::make(containers), c) {
    const ferry::bytes whole = read_all(container_file(c, {25, 1}));
    const auto half = whole.span().first(whole.size() / 2);
    try {
        const ferry::video_info info = ferry::ops::probe_video(half);
        BOOST_TEST(c.ext != ".mp4", "an MP4 without its index probed");
        BOOST_TEST(info.codec == c.codec);
        BOOST_TEST(info.width == 128);
        BOOST_TEST(info.height == 72);
    } catch (const ferry::decode_error& e) {
        BOOST_TEST(std::string(e.what()).starts_with("probe_video: <memory>: "), e.what());
    }
}

// Probing reads the header and the first packets only: a FIFO that delivers the first 32 KiB
// of a 10 s MP4 (its index first) and then nothing probes in full; reading further would wait
// for the timeout and fail with io_error. And an MP4 whose data after the first third is zeroed
// probes as the intact file.
BOOST_AUTO_TEST_CASE(probing_reads_the_head_only) {
    const auto path = long_faststart();
    const ferry::bytes whole = read_all(path);
    constexpr std::size_t head = 32 * 1024;
    BOOST_TEST_REQUIRE(whole.size() > 8 * head);
    const ferry::video_info expected = ferry::ops::probe_video(path);
    BOOST_TEST(expected.frames == 250);
    BOOST_TEST((expected.frames_from == fc::header));
    BOOST_TEST(std::abs(expected.duration - 10.0) < 1e-3);

    const auto fifo = scratch("probe-head.fifo");
    std::filesystem::remove(fifo);
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // Read-write, so that this open does not wait for a reader; the head fits the pipe's buffer.
    const int writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    BOOST_TEST_REQUIRE(writer >= 0);
    BOOST_TEST_REQUIRE(::write(writer, whole.span().data(), head) == static_cast<ssize_t>(head));
    try {
        const ferry::video_info info =
            ferry::ops::probe_video(fifo, {.timeout = std::chrono::milliseconds(2000)});
        BOOST_TEST(info.frames == expected.frames);
        BOOST_TEST(info.duration == expected.duration);
        BOOST_TEST(info.frame_rate == expected.frame_rate);
        BOOST_TEST(info.codec == "h264");
        BOOST_TEST(info.width == 640);
    } catch (const ferry::error& e) {
        BOOST_ERROR("probing the FIFO's head failed: " << e.what());
    }
    ::close(writer);
    std::filesystem::remove(fifo);

    std::vector<std::byte> zeroed(whole.span().begin(), whole.span().end());
    std::fill(zeroed.begin() + static_cast<std::ptrdiff_t>(zeroed.size() / 3), zeroed.end(),
              std::byte{0});
    check_same(ferry::ops::probe_video(std::span<const std::byte>(zeroed)), expected);
}

// A FIFO that delivers nothing is an io_error after the timeout, naming the path.
BOOST_AUTO_TEST_CASE(a_silent_fifo_is_an_io_error_after_the_timeout) {
    const auto fifo = scratch("probe-silent.fifo");
    std::filesystem::remove(fifo);
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const int writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    BOOST_TEST_REQUIRE(writer >= 0);
    const std::string message =
        ferry_test::expect_throw<ferry::io_error>([&] {
            (void)ferry::ops::probe_video(fifo, {.timeout = std::chrono::milliseconds(100)});
        }).what();
    ::close(writer);
    std::filesystem::remove(fifo);
    BOOST_TEST(message.starts_with("probe_video: " + fifo.string() + ": read stalled"), message);
}

// A probe waiting on a FIFO that no writer opens ends within the bound of stop() or destruction,
// as errc::cancelled naming the op and the path, instead of waiting for its 10 s timeout.
BOOST_DATA_TEST_CASE(probing_a_silent_fifo_ends_promptly_on_stop_and_destruction,
                     bdata::make(std::vector<bool>{true, false}), stop) {
    const auto how = stop ? ops_test::ending::stop : ops_test::ending::destroy;
    const auto fifo = scratch("probe-cancel-" + std::to_string(static_cast<int>(how)) + ".fifo");
    std::filesystem::remove(fifo);
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const auto r = ops_test::end_blocked_call<ferry::video_info>(
        [](const std::filesystem::path& p) { return ferry::ops::probe_video(p); },
        container_file(containers[0], {25, 1}), fifo, how, std::chrono::milliseconds(200));
    std::filesystem::remove(fifo);
    ops_test::check_ended_cancelled(
        r, "probe_video: " + fifo.string() + ": cancelled: the pipeline is stopping");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
