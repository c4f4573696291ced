// SPDX-License-Identifier: Apache-2.0
/// \file
/// demux_video, decode_video and load_video on bad input: empty, missing, not a container, no
/// video stream, absurd sizes, a stalled FIFO, a corruption matrix of cut and flipped copies of
/// clips made by the ffmpeg CLI, and truncated clips counted in a pipeline's stats.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "../support/damaged_copies.hpp"
#include "../support/expect.hpp"
#include "video_support.hpp"

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_bad_input_test {

namespace bdata = boost::unit_test::data;
using namespace video_test;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(bad_input)

// Zero bytes, in memory or in a file, is a decode_error that says so.
BOOST_AUTO_TEST_CASE(zero_bytes_is_a_decode_error) {
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [] { (void)ferry::ops::demux_video(std::span<const std::byte>{}); }, "empty input");
    const auto path = scratch("empty.mp4");
    { std::ofstream(path, std::ios::binary); }
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::load_video(path); }, "empty input");
}

// A missing file is an io_error naming the path and the system's reason.
BOOST_AUTO_TEST_CASE(missing_file_is_an_io_error) {
    ferry_test::expect_throw_saying<ferry::io_error>(
        [] { (void)ferry::ops::demux_video("/nonexistent/x.mp4"); }, "No such file");
}

// Bytes that are no container are a decode_error with FFmpeg's reason.
BOOST_AUTO_TEST_CASE(not_a_container_is_a_decode_error_with_ffmpegs_reason) {
    const auto junk = ferry::bytes::from_string(std::string(4000, 'x'));
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::demux_video(junk); }, "Invalid data found");
}

// An audio-only file has no video stream.
BOOST_AUTO_TEST_CASE(audio_only_file_has_no_video_stream) {
    const auto path = tone_file({440}, 44100, 0.5, "flac", ".flac");
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::load_video(path); }, "no video stream");
}

// Headers declaring 60000x60000 or 12000x12000 are refused before anything that size is
// allocated: the first by FFmpeg itself (its reason is passed on), the second by max_pixels.
BOOST_AUTO_TEST_CASE(absurd_declared_resolution_is_refused) {
    const auto y4m = [](int side) {
        const std::string s = std::to_string(side);
        return ferry::bytes::from_string("YUV4MPEG2 W" + s + " H" + s +
                                         " F25:1 Ip A1:1 C420jpeg\nFRAME\n" +
                                         std::string(1000, '\x80'));
    };
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::load_video(y4m(60000)); }, "60000x60000 is invalid");
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::load_video(y4m(12000)); }, "(max_pixels)");
    // And a small limit refuses an ordinary clip.
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [] {
            (void)ferry::ops::load_video(video_file({.codec = "libx264", .ext = ".mp4"}),
                                         {.demux = {.max_pixels = 1000}});
        },
        "over the limit");
}

// A FIFO that delivers part of a file and then nothing fails with an io_error once the timeout
// passes, promptly.
BOOST_AUTO_TEST_CASE(stalled_read_times_out_with_an_io_error) {
    const auto fifo = scratch("stall.fifo");
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // Held open for writing (and reading, so that open does not block): no EOF ever comes.
    const int fd = ::open(fifo.c_str(), O_RDWR);
    BOOST_TEST_REQUIRE(fd >= 0);
    const auto bytes = read_all(video_file({.codec = "libvpx-vp9", .ext = ".webm"}));
    BOOST_TEST_REQUIRE(::write(fd, bytes.data(), 3000) == 3000);
    const auto t0 = std::chrono::steady_clock::now();
    ferry_test::expect_throw_saying<ferry::io_error>(
        [&] {
            (void)ferry::ops::load_video(fifo,
                                         {.demux = {.timeout = std::chrono::milliseconds(300)}});
        },
        "stalled");
    const auto took = std::chrono::steady_clock::now() - t0;
    BOOST_TEST(took < std::chrono::seconds(5));
    ::close(fd);
    std::filesystem::remove(fifo);
}

// Damaged copies (tests/support/damaged_copies.hpp): every cut copy is a clip marked truncated
// whose frames are the file's first ones, or a decode_error (too little left to decode), or,
// where the cut kept every frame, the whole clip; strict makes every cut that is not whole a
// decode_error. A flipped byte gives frames or a decode_error, never a crash.
BOOST_DATA_TEST_CASE(corruption_matrix_gives_truncated_clips_or_typed_errors,
                     bdata::make(std::vector<std::string>{"h264", "vp9", "mpeg4",
                                                          "h264-faststart"}),
                     name) {
    video_spec spec{.frames = 12, .width = 64, .height = 48, .gop = 6};
    if (name == "vp9") {
        spec.codec = "libvpx-vp9";
        spec.ext = ".webm";
    } else if (name == "mpeg4") {
        spec.codec = "mpeg4";
    } else if (name == "h264-faststart") {
        spec.extra = "-movflags +faststart";
    }
    const auto good = read_all(video_file(spec));
    const auto whole = ferry::ops::load_video(good);
    BOOST_TEST_REQUIRE(frame_indices(whole) == iota(0, 12), boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(!whole.truncated());
    int truncated = 0;
    int errors = 0;
    for (const auto& copy : ferry_test::damaged_copies(good.span())) {
        BOOST_TEST_CONTEXT(name << ": " << copy.how) {
            const auto bytes = ferry_test::bytes_of(copy);
            std::optional<ferry::video_clip> clip;
            try {
                clip = ferry::ops::load_video(bytes);
            } catch (const ferry::decode_error& e) {
                const std::string what = e.what();
                BOOST_TEST((what.starts_with("demux_video: <memory>: ") ||
                            what.starts_with("decode_video: <memory>: ")),
                           what);
                ++errors;
            }
            if (clip) {
                BOOST_TEST(clip->frames() > 0);
                BOOST_TEST(clip->data().size() ==
                           static_cast<std::size_t>(clip->frames()) * clip->frame_bytes());
            }
            if (!copy.cut) continue;
            const bool complete = clip && !clip->truncated() && clip->frames() == 12 &&
                                  std::equal(clip->data().begin(), clip->data().end(),
                                             whole.data().begin(), whole.data().end());
            if (clip) {
                BOOST_TEST((clip->truncated() || complete));
                // The frames before the cut are the file's first ones (the last may be a
                // partly decoded one).
                const auto got = frame_indices(*clip);
                BOOST_TEST(
                    std::vector<int>(got.begin(), got.end() - 1) == iota(0, clip->frames() - 1),
                    boost::test_tools::per_element());
                truncated += clip->truncated() ? 1 : 0;
            }
            if (!complete) {
                const auto e = ferry_test::expect_throw<ferry::decode_error>(
                    [&] { (void)ferry::ops::load_video(bytes, {.demux = {.strict = true}}); });
                if (clip) {
                    BOOST_TEST(e.what().find("truncated: ") != std::string::npos, e.what());
                }
            }
        }
    }
    BOOST_TEST_MESSAGE(name << ": " << errors << " decode_errors, " << truncated
                            << " truncated clips of 20 damaged copies");
}

// In a pipeline, truncated clips are delivered and counted once per call in the stage's stats.
BOOST_AUTO_TEST_CASE(truncated_clips_are_counted_in_stats) {
    const auto good = read_all(video_file(
        {.frames = 24, .width = 64, .height = 48, .gop = 6, .extra = "-movflags +faststart"}));
    ferry::bytes cut(good);
    cut.truncate(good.size() * 3 / 4);
    std::vector<ferry::bytes> files{good, cut, good, cut};
    auto pipe = ferry::from(files)
                    .map([](const ferry::bytes& b) { return ferry::ops::load_video(b); },
                         {.name = "decode"})
                    .build({.threads = 1});
    int truncated = 0;
    for (const ferry::video_clip& clip : pipe) truncated += clip.truncated() ? 1 : 0;
    BOOST_TEST(truncated == 2);
    const auto stats = pipe.stats();
    BOOST_TEST(stats.stages.at(1).name == "decode");
    BOOST_TEST(stats.stages.at(1).truncated == 2U);
}

BOOST_AUTO_TEST_SUITE_END()  // bad_input
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace video_bad_input_test
