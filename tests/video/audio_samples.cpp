// SPDX-License-Identifier: Apache-2.0
/// \file
/// decode_audio with a fixed length (`audio_options::samples`): windows cut to it or followed by
/// silence up to it, the silence counted, windows of one length collated into one tensor, and
/// lengths that are refused.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

using namespace video_test;

namespace audio_samples_test {

/// Stereo, 2 s at 44.1 kHz: 440 Hz left, 1000 Hz right.
std::filesystem::path stereo_flac() {
    return tone_file({440, 1000}, 44100, 2.0, "flac", ".flac");
}

/// True when every sample of `s` is exactly 0.
bool silent(std::span<const float> s) {
    return std::all_of(s.begin(), s.end(), [](float x) { return x == 0.0F; });
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(audio)
BOOST_AUTO_TEST_SUITE(fixed_length)

// A window that runs past the stream's end: its samples, then silence up to the length, the
// silence said by padded(). The samples are the tones lavfi wrote, independently of ferry.
BOOST_AUTO_TEST_CASE(a_window_past_the_end_is_followed_by_silence) {
    const auto path = stereo_flac();
    const auto a = ferry::ops::decode_audio(path, {.start = 1.5, .end = 2.5, .samples = 44100});
    BOOST_TEST_REQUIRE(a.samples() == 44100);
    BOOST_TEST(a.padded() == 22050);  // the file ends at 2 s: half the window
    BOOST_TEST(!a.truncated());
    const double pi = std::acos(-1.0);
    for (int c = 0; c < 2; ++c) {
        const auto ch = a.channel(c);
        const double f = c == 0 ? 440.0 : 1000.0;
        double worst = 0;
        for (int k = 0; k < 22050; ++k) {
            const double want = std::sin(2 * pi * f * (66150 + k) / 44100.0) / 8;
            worst = std::max(worst, std::abs(ch[static_cast<std::size_t>(k)] - want));
        }
        BOOST_TEST(worst < 2.0 / 32768, "channel " << c << ": off by " << worst);
        BOOST_TEST(silent(ch.subspan(22050)));
    }
    // Past the end by more than the window, resampled: still the length.
    const auto r = ferry::ops::decode_audio(
        path, {.sample_rate = 16000, .channels = 1, .start = 1.75, .samples = 16000});
    BOOST_TEST(r.samples() == 16000);
    BOOST_TEST(r.padded() == 12000);
    BOOST_TEST(rms(r.channel(0).first(4000)) > 0.05);
    BOOST_TEST(silent(r.channel(0).subspan(4000)));
}

// A length shorter than the window (or the whole stream) cuts it: the first samples, bit for bit
// those of the window decoded in full, nothing padded.
BOOST_AUTO_TEST_CASE(a_longer_window_is_cut_to_the_length) {
    const auto path = stereo_flac();
    const auto full = ferry::ops::decode_audio(path);
    BOOST_TEST_REQUIRE(full.samples() == 88200);
    const auto w = ferry::ops::decode_audio(path, {.start = 0.5, .end = 1.5, .samples = 1000});
    BOOST_TEST_REQUIRE(w.samples() == 1000);
    BOOST_TEST(w.padded() == 0);
    const auto head = ferry::ops::decode_audio(path, {.samples = 30000});
    BOOST_TEST_REQUIRE(head.samples() == 30000);
    for (int c = 0; c < 2; ++c) {
        BOOST_TEST(
            std::equal(w.channel(c).begin(), w.channel(c).end(), full.channel(c).begin() + 22050));
        BOOST_TEST(
            std::equal(head.channel(c).begin(), head.channel(c).end(), full.channel(c).begin()));
    }
    // Exactly the stream's length: nothing cut, nothing added.
    const auto all = ferry::ops::decode_audio(path, {.samples = 88200});
    BOOST_TEST(all.padded() == 0);
    BOOST_TEST(std::equal(all.data().begin(), all.data().end(), full.data().begin()));
}

// An MP3's first sample sits after the encoder's delay (ffprobe's start_time): a window from 0
// holds that much less, and the length adds it back as silence at the end.
BOOST_AUTO_TEST_CASE(an_mp3_window_from_zero_gets_its_full_length) {
    const auto path = tone_file({440}, 22050, 3.0, "libmp3lame", ".mp3");
    const auto start_file = scratch("mp3-samples-start.txt");
    run_all({"ffprobe -v error -show_entries stream=start_time -of csv=p=0 " + path.string() +
             " > " + start_file.string()});
    const auto starts = probed_times_in(start_file);
    BOOST_TEST_REQUIRE(starts.size() == 1U);
    const auto plain = ferry::ops::decode_audio(path, {.sample_rate = 16000, .end = 2.0});
    const auto fixed =
        ferry::ops::decode_audio(path, {.sample_rate = 16000, .end = 2.0, .samples = 32000});
    BOOST_TEST_REQUIRE(fixed.samples() == 32000);
    BOOST_TEST(std::abs(static_cast<double>(fixed.padded()) - starts[0] * 16000) <= 1.0,
               "padded " << fixed.padded() << ", start time " << starts[0] << " s");
    BOOST_TEST_REQUIRE(fixed.padded() == 32000 - plain.samples());
    const auto decoded = static_cast<std::size_t>(plain.samples());
    BOOST_TEST(std::equal(plain.data().begin(), plain.data().end(), fixed.data().begin()));
    BOOST_TEST(silent(fixed.channel(0).subspan(decoded)));
}

// Windows of one file from starts near its beginning and end differ in length as decoded, and
// collate refuses them; with a length they collate into one tensor, the stage counting the
// silence the windows needed.
BOOST_AUTO_TEST_CASE(windows_of_one_length_collate_into_one_tensor) {
    const auto path = tone_file({440}, 22050, 2.0, "libmp3lame", ".mp3");
    const std::vector<double> starts{0.0, 0.5, 1.2, 1.6};
    const auto window = [&](double s, std::int64_t samples) {
        return ferry::ops::decode_audio(
            path,
            {.sample_rate = 16000, .channels = 1, .start = s, .end = s + 1.0, .samples = samples});
    };
    std::vector<ferry::tensor> plain;
    std::uint64_t short_by = 0;
    for (const double s : starts) {
        auto a = window(s, 0);
        short_by += static_cast<std::uint64_t>(16000 - a.samples());
        plain.push_back(std::move(a).to_tensor());
    }
    BOOST_TEST(short_by > 0U);
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::collate(std::move(plain)); }, "collate: tensor ");

    auto pipe =
        ferry::from(starts)
            .map([&](double s) { return window(s, 16000).to_tensor(); }, {.name = "decode"})
            .batch(4)
            .map([](std::vector<ferry::tensor> b) { return ferry::ops::collate(std::move(b)); })
            .build();
    int batches = 0;
    for (const ferry::tensor& t : pipe) {
        ++batches;
        BOOST_TEST((t.shape() == std::vector<std::int64_t>{4, 1, 16000}));
    }
    BOOST_TEST(batches == 1);
    BOOST_TEST(stage_counter(pipe.stats(), "decode", "padded samples") == short_by);
}

BOOST_AUTO_TEST_SUITE(bad_input)

// Lengths that cannot be honoured are refused before anything decodes; a window with no audio
// is an error, never a window of made-up silence.
BOOST_AUTO_TEST_CASE(lengths_that_cannot_be_honoured_are_refused) {
    const auto path = stereo_flac();
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::decode_audio(path, {.samples = -1}); },
        "decode_audio: samples -1 must be 0 (as many as decode) to 172800000 (max_samples)");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::decode_audio(path, {.samples = 1001, .max_samples = 1000}); },
        "decode_audio: samples 1001 must be 0 (as many as decode) to 1000 (max_samples)");
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::decode_audio(path, {.samples = 1000, .max_bytes = 7999}); },
        "1000 samples of 2 channels take more than 7999 bytes (audio_options::samples, "
        "max_bytes)");
    // Within the byte cap with one channel.
    BOOST_TEST(ferry::ops::decode_audio(path, {.channels = 1, .samples = 1000, .max_bytes = 7999})
                   .samples() == 1000);
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::decode_audio(path, {.start = 5.0, .samples = 1000}); },
        "no audio in the window starting at 5.000 s");
    // Before an MP3's first sample: nothing decoded in [0, 0.01 s).
    const auto mp3 = tone_file({440}, 22050, 1.0, "libmp3lame", ".mp3");
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::decode_audio(mp3, {.end = 0.01, .samples = 220}); },
        "no audio in the window starting at 0.000 s");
}

BOOST_AUTO_TEST_SUITE_END()  // bad_input
BOOST_AUTO_TEST_SUITE_END()  // fixed_length
BOOST_AUTO_TEST_SUITE_END()  // audio
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace audio_samples_test
