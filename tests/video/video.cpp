// SPDX-License-Identifier: Apache-2.0
/// \file
/// demux_video, decode_video and load_video on clips made by the ffmpeg CLI (H.264, VP9, MPEG-4
/// part 2) whose frames show their own index: counts, the right frames for every selection
/// mode, sizes and pixel formats, memory and path sources, tensors. Bad input: bad_input.cpp.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace video_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_ops_test {

/// A 10 s H.264 clip (250 frames, a keyframe every 25).
video_spec long_h264() {
    return {.frames = 250, .width = 64, .height = 48};
}

const std::vector<video_spec> codecs{
    {.codec = "libx264", .ext = ".mp4"},
    {.codec = "libvpx-vp9", .ext = ".webm"},
    {.codec = "mpeg4", .ext = ".mp4"},
    {.codec = "libx264", .ext = ".mkv"},
};
const std::vector<std::string> codec_names{"h264/mp4", "vp9/webm", "mpeg4/mp4", "h264/mkv"};

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)

// Every frame comes back once, in order, at the stored size, for each codec and container.
BOOST_DATA_TEST_CASE(decodes_every_frame_in_order_for_each_codec, bdata::xrange(codecs.size()), i) {
    BOOST_TEST_CONTEXT(codec_names[i]) {
        const auto clip = ferry::ops::load_video(video_file(codecs[i]));
        BOOST_TEST(clip.frames() == 50);
        BOOST_TEST(clip.width() == 96);
        BOOST_TEST(clip.height() == 64);
        BOOST_TEST(clip.channels() == 3);
        BOOST_TEST(clip.data().size() == 50U * 64 * 96 * 3);
        BOOST_TEST(frame_indices(clip) == iota(0, 50), boost::test_tools::per_element());
        BOOST_TEST(clip.frame_rate() == 25.0, boost::test_tools::tolerance(1e-6));
        BOOST_TEST(clip.timestamps().size() == 50U);
        BOOST_TEST(clip.timestamps()[25] == 1.0, boost::test_tools::tolerance(1e-3));
    }
}

// Specific indices come back in the order asked, repeats included, for each codec.
BOOST_DATA_TEST_CASE(selects_specific_frames_in_the_requested_order, bdata::xrange(codecs.size()),
                     i) {
    BOOST_TEST_CONTEXT(codec_names[i]) {
        const std::vector<std::int64_t> want{40, 3, 3, 26, 0, 49};
        const auto clip = ferry::ops::load_video(
            video_file(codecs[i]), {.decode = {.select = ferry::frame_selection::indices(want)}});
        BOOST_TEST(frame_indices(clip) == (std::vector<int>{40, 3, 3, 26, 0, 49}),
                   boost::test_tools::per_element());
        BOOST_TEST(clip.indices() == want, boost::test_tools::per_element());
    }
}

// uniform(n) spreads n frames from the first to the last, like linspace.
BOOST_AUTO_TEST_CASE(selects_n_frames_uniformly_from_first_to_last) {
    const auto clip = ferry::ops::load_video(
        video_file(long_h264()), {.decode = {.select = ferry::frame_selection::uniform(8)}});
    // round(i * 249 / 7)
    BOOST_TEST(frame_indices(clip) == (std::vector<int>{0, 36, 71, 107, 142, 178, 213, 249}),
               boost::test_tools::per_element());
}

// A clip of N frames at stride S from a timestamp starts at the frame shown at that time.
BOOST_AUTO_TEST_CASE(clip_at_a_timestamp_starts_at_that_frame_with_the_stride) {
    const auto path = video_file(long_h264());
    const auto clip = ferry::ops::load_video(
        path, {.demux = {.start = 4.0}, .decode = {.select = ferry::frame_selection::clip(8, 4)}});
    BOOST_TEST(frame_indices(clip) == iota(100, 8, 4), boost::test_tools::per_element());
    BOOST_TEST(clip.indices() == (std::vector<std::int64_t>{0, 4, 8, 12, 16, 20, 24, 28}),
               boost::test_tools::per_element());
    BOOST_TEST(clip.timestamps().front() == 4.0, boost::test_tools::tolerance(1e-3));
    BOOST_TEST(clip.timestamps().back() == 4.0 + 28 / 25.0, boost::test_tools::tolerance(1e-3));
}

// Sampling a clip reads only the packets from the keyframe before it to its last frame, not
// the whole file.
BOOST_AUTO_TEST_CASE(clip_sampling_reads_only_the_packets_it_needs) {
    const auto path = video_file(long_h264());
    const auto all = ferry::ops::demux_video(path);
    BOOST_TEST(all.frames() == 250);
    const auto some = ferry::ops::demux_video(path, {.start = 4.0, .max_frames = 29});
    // From the keyframe at or before 4 s (frame 100 at the latest, 75 at the earliest with
    // x264's scene cuts) through frame 128, plus B-frame reordering slack.
    BOOST_TEST(some.size() >= 29U);
    BOOST_TEST(some.size() <= 60U);
    BOOST_TEST(some.bytes() < all.bytes() / 3);
}

// load_video derives the demuxer's max_frames from the selection only when it is left at 0: set,
// it is used as given (here: the first 10 frames of a 250-frame file, not all of them).
BOOST_AUTO_TEST_CASE(load_video_uses_an_explicit_max_frames) {
    const auto clip =
        ferry::ops::load_video(video_file(long_h264()), {.demux = {.max_frames = 10}});
    BOOST_TEST(frame_indices(clip) == iota(0, 10), boost::test_tools::per_element());
    BOOST_TEST(!clip.truncated());
}

// A time window [start, end) holds exactly the frames shown in it; indices count from its start.
BOOST_AUTO_TEST_CASE(time_window_holds_the_frames_shown_in_it) {
    const auto pkts = ferry::ops::demux_video(video_file(long_h264()), {.start = 1.0, .end = 2.0});
    BOOST_TEST(pkts.frames() == 25);
    const auto clip = ferry::ops::decode_video(pkts);
    BOOST_TEST(frame_indices(clip) == iota(25, 25), boost::test_tools::per_element());
    const auto two =
        ferry::ops::decode_video(pkts, {.select = ferry::frame_selection::indices({24, 0})});
    BOOST_TEST(frame_indices(two) == (std::vector<int>{49, 25}), boost::test_tools::per_element());
}

// Packets describe their stream: codec, declared size, rate, frame count, source.
BOOST_AUTO_TEST_CASE(packets_describe_their_stream) {
    const auto path = video_file(codecs[1]);
    const auto pkts = ferry::ops::demux_video(path);
    BOOST_TEST(pkts.codec() == "vp9");
    BOOST_TEST(pkts.width() == 96);
    BOOST_TEST(pkts.height() == 64);
    BOOST_TEST(pkts.frame_rate() == 25.0, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(pkts.frames() == 50);
    BOOST_TEST(pkts.size() == 50U);
    BOOST_TEST(pkts.source() == path.string());
    const ferry::packets copy = pkts;  // shares the packets
    BOOST_TEST(copy.bytes() == pkts.bytes());
    // What a memory budget counts them at (ferry::byte_size): their compressed bytes.
    BOOST_TEST(ferry::byte_size(pkts) == sizeof(ferry::packets) + pkts.bytes());
    BOOST_TEST(pkts.bytes() > 1000U);
}

// Resizing and format conversion happen in the decode step: sizes, channels and colours.
BOOST_AUTO_TEST_CASE(resizes_and_converts_pixel_formats_while_decoding) {
    const auto path = video_file(codecs[0]);
    const auto sel = ferry::frame_selection::indices({7});
    const auto rgb = ferry::ops::load_video(path, {.decode = {.select = sel, .resize = {48, 40}}});
    BOOST_TEST(rgb.width() == 48);
    BOOST_TEST(rgb.height() == 40);
    BOOST_TEST(rgb.data().size() == 48U * 40 * 3);
    BOOST_TEST(frame_index(rgb, 0) == 7);
    // The red strip at the bottom: R high, B low in RGB; swapped in BGR.
    BOOST_TEST(rgb.at(0, 24, 36, 0) > 170);
    BOOST_TEST(rgb.at(0, 24, 36, 2) < 60);
    const auto bgr = ferry::ops::load_video(
        path, {.decode = {.select = sel, .format = ferry::frame_format::bgr, .resize = {48, 40}}});
    BOOST_TEST(bgr.at(0, 24, 36, 2) > 170);
    BOOST_TEST(bgr.at(0, 24, 36, 0) < 60);
    const auto gray =
        ferry::ops::load_video(path, {.decode = {.select = sel,
                                                 .format = ferry::frame_format::gray,
                                                 .filter = ferry::scale_filter::area}});
    BOOST_TEST(gray.channels() == 1);
    BOOST_TEST(gray.width() == 96);
    BOOST_TEST(gray.data().size() == 96U * 64);
    BOOST_TEST(frame_index(gray, 0) == 7);
}

// pixel_format is shared with images, whose rgba video does not make: asking a clip or a decode
// for it is an invalid_argument that names the formats video has, before anything is decoded.
BOOST_AUTO_TEST_CASE(rgba_is_refused_by_name) {
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [] { ferry::video_clip clip(1, 4, 4, ferry::frame_format::rgba); },
        "format rgba is not one of video's (rgb, bgr, gray)");
    const auto path = video_file(codecs[0]);
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::ops::load_video(path,
                                         {.decode = {.select = ferry::frame_selection::uniform(2),
                                                     .format = ferry::frame_format::rgba}});
        },
        "format rgba is not one of video's (rgb, bgr, gray)");
}

// The same bytes from memory and from a path give the same pixels.
BOOST_AUTO_TEST_CASE(memory_and_path_sources_decode_alike) {
    const auto path = video_file(codecs[2]);
    const auto bytes = read_all(path);
    const auto a =
        ferry::ops::load_video(path, {.decode = {.select = ferry::frame_selection::uniform(5)}});
    const auto b =
        ferry::ops::load_video(bytes, {.decode = {.select = ferry::frame_selection::uniform(5)}});
    BOOST_TEST(a.frames() == 5);
    BOOST_TEST(std::equal(a.data().begin(), a.data().end(), b.data().begin(), b.data().end()));
    BOOST_TEST(ferry::ops::demux_video(bytes).source() == "<memory>");
}

// Decoder threads change nothing in the result.
BOOST_AUTO_TEST_CASE(decoder_threads_give_the_same_frames) {
    const auto path = video_file(long_h264());
    const auto sel = ferry::frame_selection::indices({3, 60, 61, 200, 10});
    const auto one = ferry::ops::load_video(path, {.decode = {.select = sel, .threads = 1}});
    const auto three = ferry::ops::load_video(path, {.decode = {.select = sel, .threads = 3}});
    BOOST_TEST(frame_indices(three) == (std::vector<int>{3, 60, 61, 200, 10}),
               boost::test_tools::per_element());
    BOOST_TEST(
        std::equal(one.data().begin(), one.data().end(), three.data().begin(), three.data().end()));
}

// The video stream is found in a file that also has audio; asking for the audio stream as video
// is a decode_error.
BOOST_AUTO_TEST_CASE(finds_the_video_stream_beside_audio) {
    const auto path = video_file({.frames = 25, .with_audio = true});
    const auto clip = ferry::ops::load_video(path);
    BOOST_TEST(clip.frames() == 25);
    BOOST_TEST(frame_indices(clip) == iota(0, 25), boost::test_tools::per_element());
    const int audio_stream = ferry::ops::demux_video(path).stream() == 0 ? 1 : 0;
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::demux_video(path, {.stream = audio_stream}); }, "not a video");
}

// A clip owns its pixels: a copy has its own and the same frame indices, timestamps and rate; a
// move hands them over and leaves an empty clip with no frames.
BOOST_AUTO_TEST_CASE(clip_copies_are_deep_and_moves_leave_it_empty) {
    ferry::video_clip clip(3, 8, 6, ferry::frame_format::gray);
    for (std::size_t i = 0; i < clip.data().size(); ++i) {
        clip.data()[i] = static_cast<std::uint8_t>(i);
    }
    clip.set_frame_info({0, 4, 8}, {0.0, 0.16, 0.32}, 25.0);
    const ferry::video_clip copy = clip;
    BOOST_TEST(copy.data().data() != clip.data().data());
    BOOST_TEST((copy.frames() == 3 && copy.width() == 8 && copy.height() == 6 &&
                copy.format() == ferry::frame_format::gray && copy.frame_rate() == 25.0));
    BOOST_TEST(copy.indices() == clip.indices(), boost::test_tools::per_element());
    BOOST_TEST(copy.timestamps() == clip.timestamps(), boost::test_tools::per_element());
    BOOST_TEST(std::memcmp(copy.data().data(), clip.data().data(), clip.data().size()) == 0);

    const std::uint8_t* pixels = clip.data().data();
    ferry::video_clip moved;
    moved = std::move(clip);
    BOOST_TEST(moved.data().data() == pixels);
    BOOST_TEST(moved.indices() == copy.indices(), boost::test_tools::per_element());
    // NOLINTNEXTLINE(bugprone-use-after-move): what a move leaves is the point
    BOOST_TEST((clip.empty() && clip.frames() == 0 && clip.width() == 0 && clip.height() == 0));
    BOOST_TEST(clip.indices().empty());
    const ferry::video_clip copy_of_empty = clip;
    BOOST_TEST(copy_of_empty.empty());
}

// to_tensor moves the pixels from an rvalue (same storage) and copies from an lvalue.
BOOST_AUTO_TEST_CASE(to_tensor_moves_pixels_from_an_rvalue) {
    auto clip = ferry::ops::load_video(video_file(codecs[0]),
                                       {.decode = {.select = ferry::frame_selection::clip(4, 2)}});
    const ferry::tensor copy = clip.to_tensor();
    BOOST_TEST(copy.data() != static_cast<const void*>(clip.data().data()));
    const void* pixels = clip.data().data();
    const ferry::tensor t = std::move(clip).to_tensor();
    BOOST_TEST(t.data() == pixels);
    BOOST_TEST((t.dtype() == ferry::dtype::u8));
    BOOST_TEST(t.shape() == (std::vector<std::int64_t>{4, 64, 96, 3}),
               boost::test_tools::per_element());
    BOOST_TEST(std::memcmp(t.data(), copy.data(), copy.nbytes()) == 0);
}

// A selection past the frames that decode is a decode_error naming the frame and the count.
BOOST_AUTO_TEST_CASE(selection_past_the_end_is_a_decode_error) {
    const auto pkts = ferry::ops::demux_video(video_file(codecs[0]));
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] {
            (void)ferry::ops::decode_video(pkts, {.select = ferry::frame_selection::indices({50})});
        },
        "frame 50");
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] {
            (void)ferry::ops::decode_video(pkts, {.select = ferry::frame_selection::clip(10, 6)});
        },
        "window has 50 frames that decode");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [] { (void)ferry::frame_selection::uniform(0); }, "positive");
}

// A window's start and end come from user code: NaN and infinities are invalid_arguments naming
// the value; a start of 1e300 s is a window past the data (a decode_error saying so, not the
// file's first frames), and an end of 1e300 s reads to the stream's end.
BOOST_AUTO_TEST_CASE(non_finite_and_huge_windows_are_named_or_clipped) {
    const auto path = video_file(codecs[0]);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const auto load = [&](double start, std::optional<double> end) {
        return ferry::ops::load_video(path,
                                      {.demux = {.start = start, .end = end},
                                       .decode = {.select = ferry::frame_selection::clip(4, 2)}});
    };
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)load(nan, {}); }, "demux_video: start nan s is not a finite time");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)load(inf, {}); }, "demux_video: start inf s is not a finite time");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)load(0.0, nan); }, "demux_video: end nan s is not a finite time");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)load(0.0, inf); },
        "demux_video: end inf s is not a finite time; leave end unset for the stream's end");
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)load(1e300, {}); }, "no decodable video frames in the window [1e+300 s, end)");
    BOOST_TEST(ferry::ops::demux_video(path, {.end = 1e300}).frames() == 50);
    BOOST_TEST(frame_indices(load(1.0, 1e300)) == (std::vector<int>{25, 27, 29, 31}));
}

// Options that cannot mean anything are invalid_arguments naming them, before a byte is read;
// a selection whose clip cannot fit max_bytes is refused before its slots are made (uniform of a
// billion frames would take 8 GB for the slots alone).
BOOST_AUTO_TEST_CASE(meaningless_options_are_refused_by_name) {
    const auto path = video_file(codecs[0]);
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::demux_video(path, {.stream = -7}); },
        "demux_video: stream -7 must be -1 (FFmpeg's best) or a stream's index");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::demux_video(path, {.max_frames = -1}); },
        "demux_video: max_frames -1 must be 0 (no limit) or more");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::ops::load_video(
                path, {.decode = {.select = ferry::frame_selection::uniform(1'000'000'000)}});
        },
        "decode_video: " + path.string() +
            ": 1000000000 frames of 96x64 need 18432000000000 bytes, over max_bytes (4294967296)");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::ops::load_video(
                path, {.decode = {.select = ferry::frame_selection::clips_at(
                                      std::vector<std::int64_t>(1000, 0), 1'000'000, 1),
                                  .resize = {8, 8}}});
        },
        "1000000000 frames of 8x8 need 192000000000 bytes, over max_bytes");
    // Within the cap, a uniform selection longer than the window repeats frames as linspace does.
    const auto repeated =
        ferry::ops::load_video(path, {.decode = {.select = ferry::frame_selection::uniform(99)}});
    BOOST_TEST(repeated.frames() == 99);
    BOOST_TEST(frame_index(repeated, 98) == 49);
}

// load_video in a pipeline: paths in, one clip per path out, in order; a bad file is skipped
// and recorded.
BOOST_AUTO_TEST_CASE(loads_clips_in_a_pipeline_and_skips_bad_files) {
    std::vector<std::filesystem::path> paths{video_file(codecs[0]), video_file(codecs[1]),
                                             scratch("missing.mp4"), video_file(codecs[2])};
    auto pipe = ferry::from(paths)
                    .map(
                        [](const std::filesystem::path& p) {
                            return ferry::ops::load_video(
                                p, {.decode = {.select = ferry::frame_selection::clip(4, 3),
                                               .resize = {32, 32}}});
                        },
                        {.concurrency = 2, .name = "video", .on_error = ferry::skip})
                    .build({.threads = 2, .logger = [](ferry::log_level, std::string_view) {}});
    std::vector<int> firsts;
    for (const ferry::video_clip& clip : pipe) {
        BOOST_TEST(clip.frames() == 4);
        BOOST_TEST(clip.width() == 32);
        firsts.push_back(frame_index(clip, 3));
    }
    BOOST_TEST(firsts == (std::vector<int>{9, 9, 9}), boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(pipe.failures().size() == 1U);
    BOOST_TEST(pipe.failures()[0].item == 2U);
}

BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace video_ops_test
