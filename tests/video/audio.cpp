// SPDX-License-Identifier: Apache-2.0
/// \file
/// decode_audio on tones made by the ffmpeg CLI (FLAC, AAC, Opus): sample counts and rates after
/// resampling, the tone's frequency preserved, channel mixing, time windows, tensors, and bad
/// input.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../support/damaged_copies.hpp"
#include "../support/expect.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace video_test;

namespace audio_ops_test {

/// Stereo, 2 s at 44.1 kHz: 440 Hz left, 1000 Hz right.
std::filesystem::path stereo(const std::string& codec, const std::string& ext) {
    return tone_file({440, 1000}, 44100, 2.0, codec, ext);
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(audio)

// Native rate and channels: every sample of a lossless file, each channel at its frequency.
BOOST_AUTO_TEST_CASE(decodes_a_lossless_tone_sample_exact) {
    const auto a = ferry::ops::decode_audio(stereo("flac", ".flac"));
    BOOST_TEST(a.channels() == 2);
    BOOST_TEST(a.sample_rate() == 44100);
    BOOST_TEST(a.samples() == 88200);
    BOOST_TEST(a.data().size() == 2U * 88200);
    BOOST_TEST(tone_frequency(a.channel(0), 44100) == 440.0, boost::test_tools::tolerance(0.002));
    BOOST_TEST(tone_frequency(a.channel(1), 44100) == 1000.0, boost::test_tools::tolerance(0.002));
    // lavfi's sine source has amplitude 1/8: RMS 0.125 / sqrt(2).
    BOOST_TEST(rms(a.channel(0)) == 0.0884, boost::test_tools::tolerance(0.02));
}

// Resampling to other rates keeps the sample count (rate x duration) and each tone's frequency,
// for lossless and lossy codecs.
BOOST_DATA_TEST_CASE(resamples_keeping_duration_and_frequency,
                     bdata::make(std::vector<int>{16000, 22050, 48000}) *
                         bdata::make(std::vector<std::string>{"flac", "aac", "libopus"}),
                     rate, codec) {
    const std::string ext = codec == "flac" ? ".flac" : codec == "aac" ? ".m4a" : ".ogg";
    const auto a = ferry::ops::decode_audio(stereo(codec, ext), {.sample_rate = rate});
    BOOST_TEST(a.sample_rate() == rate);
    BOOST_TEST(a.channels() == 2);
    // Lossless: exact. Lossy codecs pad the end to whole frames (AAC: 1024 samples at 44.1 kHz,
    // 1.2%): within 2%.
    if (codec == "flac") {
        BOOST_TEST(a.samples() == 2 * rate);
    } else {
        BOOST_TEST(static_cast<double>(a.samples()) == 2.0 * rate,
                   boost::test_tools::tolerance(0.02));
    }
    BOOST_TEST(tone_frequency(a.channel(0), rate) == 440.0, boost::test_tools::tolerance(0.005));
    BOOST_TEST(tone_frequency(a.channel(1), rate) == 1000.0, boost::test_tools::tolerance(0.005));
}

// Asking for one channel downmixes stereo (both tones in it); asking for two upmixes mono.
BOOST_AUTO_TEST_CASE(mixes_to_the_requested_channel_count) {
    const auto mono = ferry::ops::decode_audio(stereo("flac", ".flac"), {.channels = 1});
    BOOST_TEST(mono.channels() == 1);
    BOOST_TEST(mono.samples() == 88200);
    BOOST_TEST(rms(mono.channel(0)) > 0.05);
    const auto up = ferry::ops::decode_audio(tone_file({440}, 44100, 1.0, "flac", ".flac"),
                                             {.sample_rate = 16000, .channels = 2});
    BOOST_TEST(up.channels() == 2);
    BOOST_TEST(up.samples() == 16000);
    BOOST_TEST(tone_frequency(up.channel(1), 16000) == 440.0, boost::test_tools::tolerance(0.005));
}

// A window [start, end) returns exactly (end - start) x rate samples, also after resampling.
BOOST_AUTO_TEST_CASE(time_window_returns_exactly_its_samples) {
    const auto path = stereo("flac", ".flac");
    const auto a = ferry::ops::decode_audio(path, {.start = 0.5, .end = 1.25});
    BOOST_TEST(a.samples() == 33075);  // 0.75 s x 44100
    const auto full = ferry::ops::decode_audio(path);
    // The same samples as the whole file's, from 0.5 s on.
    for (int c = 0; c < 2; ++c) {
        BOOST_TEST(
            std::equal(a.channel(c).begin(), a.channel(c).end(), full.channel(c).begin() + 22050));
    }
    // A window that runs past the data holds the rest of the file, every channel.
    const auto tail = ferry::ops::decode_audio(path, {.start = 1.5, .end = 3.0});
    BOOST_TEST_REQUIRE(tail.samples() == 22050);
    for (int c = 0; c < 2; ++c) {
        BOOST_TEST(std::equal(tail.channel(c).begin(), tail.channel(c).end(),
                              full.channel(c).begin() + 66150));
    }
    // And, independently of ferry's whole decode, the tones lavfi wrote: sin(2 pi f n / 44100)
    // / 8 for sample n, within 16-bit rounding.
    const double pi = std::acos(-1.0);
    for (int c = 0; c < 2; ++c) {
        const double f = c == 0 ? 440.0 : 1000.0;
        double worst = 0;
        for (int k = 0; k < 22050; ++k) {
            const double want = std::sin(2 * pi * f * (66150 + k) / 44100.0) / 8;
            worst = std::max(worst, std::abs(tail.channel(c)[static_cast<std::size_t>(k)] - want));
        }
        BOOST_TEST(worst < 2.0 / 32768, "channel " << c << ": off by " << worst);
    }
    const auto r = ferry::ops::decode_audio(path, {.sample_rate = 16000, .start = 1.0, .end = 2.0});
    BOOST_TEST(r.samples() == 16000);
    BOOST_TEST(tone_frequency(r.channel(1), 16000) == 1000.0, boost::test_tools::tolerance(0.005));
}

// A window's start and end come from user code (a duration times a random number, which is NaN
// where the duration is unknown): NaN and infinities are invalid_arguments naming the value, and
// finite times however large are windows like any other (past the data: a decode_error; an end
// past the data: the rest of the stream), never a silently empty or whole result.
BOOST_AUTO_TEST_CASE(non_finite_and_huge_windows_are_named_or_clipped) {
    const auto path = stereo("flac", ".flac");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const auto bad = [&](double start, std::optional<double> end, const std::string& words) {
        ferry_test::expect_throw_saying<ferry::invalid_argument>(
            [&] { (void)ferry::ops::decode_audio(path, {.start = start, .end = end}); }, words);
    };
    bad(nan, {}, "decode_audio: start nan s is not a finite time");
    bad(inf, {}, "decode_audio: start inf s is not a finite time");
    bad(-inf, 1.0, "decode_audio: start -inf s is not a finite time");
    bad(0.0, nan, "decode_audio: end nan s is not a finite time; leave end unset");
    bad(0.5, inf, "decode_audio: end inf s is not a finite time; leave end unset");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::decode_audio(path, {.stream = -3}); },
        "decode_audio: stream -3 must be -1 (FFmpeg's best) or a stream's index");
    for (const auto& [rate, channels] :
         {std::pair{2'000'000'000, 1}, std::pair{16000, 65}, std::pair{-1, 0}}) {
        ferry_test::expect_throw_saying<ferry::invalid_argument>(
            [&] {
                (void)ferry::ops::decode_audio(path, {.sample_rate = rate, .channels = channels});
            },
            "must be 0 (the stream's) to 768000 Hz and 64");
    }
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::decode_audio(path, {.start = 1e300}); },
        "no audio in the window starting at 1e+300 s");
    // An end whose sample count overflows 64 bits at 48 kHz: the rest of the stream.
    const auto whole = ferry::ops::decode_audio(path, {.sample_rate = 48000});
    BOOST_TEST_REQUIRE(whole.samples() == 96000);  // the 2 s tone at 48 kHz
    for (const double end : {1e15, 1e300}) {
        const auto a = ferry::ops::decode_audio(path, {.sample_rate = 48000, .end = end});
        BOOST_TEST(a.samples() == whole.samples());
        BOOST_TEST(std::equal(a.data().begin(), a.data().end(), whole.data().begin()));
        BOOST_TEST(!a.truncated());
    }
}

// Windows are in the stream's timestamps: an MP3's first sample sits after the encoder's delay,
// which FFmpeg skips (its start time, 0.025-0.05 s), so a window from 0 holds the samples from
// there on, and one starting after it holds its full length.
BOOST_AUTO_TEST_CASE(windows_are_in_stream_time_from_the_first_sample) {
    const auto path = tone_file({440}, 22050, 3.0, "libmp3lame", ".mp3");
    const auto start_file = scratch("mp3-start.txt");
    run_all({"ffprobe -v error -show_entries stream=start_time -of csv=p=0 " + path.string() +
             " > " + start_file.string()});
    const auto starts = probed_times_in(start_file);
    BOOST_TEST_REQUIRE(starts.size() == 1U);
    const double first = starts[0];
    BOOST_TEST(first > 0.02);
    BOOST_TEST(first < 0.06);
    const auto from_zero = ferry::ops::decode_audio(path, {.sample_rate = 16000, .end = 2.0});
    BOOST_TEST(static_cast<double>(from_zero.samples()) == (2.0 - first) * 16000,
               boost::test_tools::tolerance(1.0 / 16000));
    BOOST_TEST(!from_zero.truncated());
    const auto inside =
        ferry::ops::decode_audio(path, {.sample_rate = 16000, .start = 0.5, .end = 2.5});
    BOOST_TEST(inside.samples() == 32000);
}

// The audio of a video file, from memory.
BOOST_AUTO_TEST_CASE(decodes_the_audio_of_a_video_file_from_memory) {
    const auto bytes = read_all(video_file({.frames = 25, .with_audio = true}));
    const auto a = ferry::ops::decode_audio(bytes, {.sample_rate = 16000, .channels = 1});
    BOOST_TEST(a.channels() == 1);
    // 1 s, plus AAC's padding to whole frames.
    BOOST_TEST(static_cast<double>(a.samples()) == 16000.0, boost::test_tools::tolerance(0.03));
    BOOST_TEST(tone_frequency(a.channel(0), 16000) == 440.0, boost::test_tools::tolerance(0.005));
}

// audio owns its samples: a copy has its own, a move hands them over and leaves empty audio
// (0 channels, 0 samples, rate 0).
BOOST_AUTO_TEST_CASE(audio_copies_are_deep_and_moves_leave_it_empty) {
    ferry::audio a(2, 100, 16000);
    for (std::size_t i = 0; i < a.data().size(); ++i) a.data()[i] = static_cast<float>(i);
    const ferry::audio copy = a;
    BOOST_TEST(copy.data().data() != a.data().data());
    BOOST_TEST((copy.channels() == 2 && copy.samples() == 100 && copy.sample_rate() == 16000));
    BOOST_TEST(std::memcmp(copy.data().data(), a.data().data(), a.data().size_bytes()) == 0);

    const float* samples = a.data().data();
    const ferry::audio moved = std::move(a);
    BOOST_TEST(moved.data().data() == samples);
    // NOLINTNEXTLINE(bugprone-use-after-move): what a move leaves is the point
    BOOST_TEST((a.empty() && a.channels() == 0 && a.samples() == 0 && a.sample_rate() == 0));
    BOOST_TEST(a.duration() == 0.0);
    const ferry::audio copy_of_empty = a;
    BOOST_TEST(copy_of_empty.empty());
}

// to_tensor gives f32 [channels, samples]; no copy from an rvalue.
BOOST_AUTO_TEST_CASE(to_tensor_is_channels_by_samples) {
    auto a =
        ferry::ops::decode_audio(tone_file({440}, 44100, 1.0, "flac", ".flac"), {.channels = 2});
    const void* samples = a.data().data();
    const ferry::tensor copy = a.to_tensor();
    BOOST_TEST(copy.data() != samples);
    const ferry::tensor t = std::move(a).to_tensor();
    BOOST_TEST(t.data() == samples);
    BOOST_TEST((t.dtype() == ferry::dtype::f32));
    BOOST_TEST(t.shape() == (std::vector<std::int64_t>{2, 44100}),
               boost::test_tools::per_element());
    BOOST_TEST(std::memcmp(t.data(), copy.data(), copy.nbytes()) == 0);
}

BOOST_AUTO_TEST_SUITE(bad_input)

// A video without audio, zero bytes and junk are decode_errors saying which.
BOOST_AUTO_TEST_CASE(no_audio_empty_and_junk_are_decode_errors) {
    const auto check = [](auto&& f, const std::string& word) {
        try {
            f();
            BOOST_ERROR("no exception; expected '" << word << "'");
        } catch (const ferry::decode_error& e) {
            BOOST_TEST(std::string(e.what()).find(word) != std::string::npos, e.what());
        }
    };
    check([] { (void)ferry::ops::decode_audio(video_file({.frames = 10})); }, "no audio stream");
    check([] { (void)ferry::ops::decode_audio(std::span<const std::byte>{}); }, "empty input");
    check([] { (void)ferry::ops::decode_audio(ferry::bytes::from_string(std::string(999, 'z'))); },
          "Invalid data found");
}

// Samples cost bytes by the channel: a small file of many channels is refused at the byte cap
// (4-byte float samples times channels) before it can take gigabytes, though it stays under the
// per-channel sample cap; the cap counts the channels asked for (an up-mix), and a decode of
// exactly the cap's size is whole.
BOOST_AUTO_TEST_CASE(many_channels_are_refused_at_the_byte_cap) {
    // 8 channels, 1 s at 48 kHz: 8 x 48000 x 4 = 1 536 000 bytes decoded.
    const auto eight =
        tone_file({200, 300, 400, 500, 600, 700, 800, 900}, 48000, 1.0, "flac", ".flac");
    try {
        (void)ferry::ops::decode_audio(eight, {.max_bytes = 1'000'000});
        BOOST_ERROR("8 channels of 48000 samples decoded within 1 000 000 bytes");
    } catch (const ferry::decode_error& e) {
        BOOST_TEST(std::string(e.what()).find("more than 1000000 bytes of samples (8 channels; "
                                              "audio_options::max_bytes)") != std::string::npos,
                   e.what());
    }
    const auto whole = ferry::ops::decode_audio(eight, {.max_bytes = 1'536'000});
    BOOST_TEST(whole.channels() == 8);
    BOOST_TEST(whole.samples() == 48000);
    const auto mono = tone_file({440}, 48000, 1.0, "flac", ".flac");
    BOOST_CHECK_THROW((void)ferry::ops::decode_audio(mono, {.channels = 8, .max_bytes = 1'000'000}),
                      ferry::decode_error);
    BOOST_TEST(ferry::ops::decode_audio(mono, {.max_bytes = 1'000'000}).samples() == 48000);
}

/// Codecs with their containers, to check that nothing intact reads as truncated.
const std::vector<std::string> codecs{"flac",      "aac",       "libopus",
                                      "libvorbis", "pcm_s16le", "libmp3lame"};
std::string container_of(const std::string& codec) {
    if (codec == "flac") return ".flac";
    if (codec == "aac") return ".m4a";
    if (codec == "libopus") return ".opus";
    if (codec == "libvorbis") return ".ogg";
    if (codec == "pcm_s16le") return ".wav";
    return ".mp3";
}

// An intact file is never marked truncated: whole, in a window, or resampled.
BOOST_DATA_TEST_CASE(intact_files_are_not_truncated, bdata::make(codecs), codec) {
    const auto path = tone_file({440}, 22050, 1.0, codec, container_of(codec));
    const auto whole = ferry::ops::decode_audio(path);
    BOOST_TEST(!whole.truncated(), codec);
    BOOST_TEST(whole.duration() > 0.95, codec);
    BOOST_TEST(!ferry::ops::decode_audio(path, {.sample_rate = 16000, .strict = true}).truncated());
    const auto window =
        ferry::ops::decode_audio(path, {.start = 0.25, .end = 0.75, .strict = true});
    BOOST_TEST(!window.truncated(), codec);
    BOOST_TEST(window.samples() == window.sample_rate() / 2);
    // A window past the stream's end asks for more than there is; that is not damage.
    BOOST_TEST(!ferry::ops::decode_audio(path, {.start = 0.5, .end = 9.0}).truncated(), codec);
}

// A raw ADTS stream (AAC without a container) states no length: FFmpeg guesses one from the bit
// rate, 3.157 s for this 3 s tone at 128 kb/s (3.042 s decode). A guess is no declaration, so the
// file is not marked truncated, and strict accepts it.
BOOST_AUTO_TEST_CASE(a_length_guessed_from_the_bit_rate_is_not_a_truncation) {
    // tone_file puts the codec string after -c:a: the bit rate rides along.
    const auto path = tone_file({440}, 44100, 3.0, "aac -b:a 128k", ".aac");
    const auto whole = ferry::ops::decode_audio(path, {.strict = true});
    BOOST_TEST(!whole.truncated());
    BOOST_TEST(whole.duration() == 3.0, boost::test_tools::tolerance(0.02));
    BOOST_TEST(!ferry::ops::decode_audio(path, {.start = 2.0, .end = 9.0}).truncated());
}

/// A cut of `good` (`n` bytes).
ferry::bytes prefix(const ferry::bytes& good, std::size_t n) {
    ferry::bytes cut(good);
    cut.truncate(n);
    return cut;
}

/// A 2 s FLAC tone (FLAC's header holds 8 KiB of padding: the audio is the rest).
ferry::bytes flac_tone() {
    return read_all(tone_file({440}, 22050, 2.0, "flac", ".flac"));
}

// A cut FLAC returns the samples before the cut, the file's own, marked truncated, more of them
// the more bytes are kept; strict makes it a decode_error that says so.
BOOST_AUTO_TEST_CASE(cut_flac_returns_what_decodes_marked_truncated) {
    const auto good = flac_tone();
    const auto full = ferry::ops::decode_audio(good);
    BOOST_TEST_REQUIRE(full.samples() == 44100);
    BOOST_TEST(!full.truncated());
    std::int64_t before = 0;
    for (const double keep : {0.6, 0.75, 0.9, 0.99}) {
        BOOST_TEST_CONTEXT("cut at " << keep) {
            const auto cut = prefix(good, static_cast<std::size_t>(good.size() * keep));
            const auto a = ferry::ops::decode_audio(cut);
            BOOST_TEST(a.truncated());
            BOOST_TEST(a.samples() > before);
            BOOST_TEST(a.samples() < 44100);
            before = a.samples();
            for (std::int64_t i = 0; i < a.samples(); ++i) {
                if (a.channel(0)[static_cast<std::size_t>(i)] !=
                    full.channel(0)[static_cast<std::size_t>(i)]) {
                    BOOST_ERROR("sample " << i << " differs from the intact file's");
                    break;
                }
            }
            try {
                (void)ferry::ops::decode_audio(cut, {.strict = true});
                BOOST_ERROR("strict: no exception");
            } catch (const ferry::decode_error& e) {
                BOOST_TEST(std::string(e.what()).find("truncated: the stream declares 2.000 s") !=
                               std::string::npos,
                           e.what());
                BOOST_TEST(std::string(e.what()).find("audio_options::strict") !=
                           std::string::npos);
            }
        }
    }
}

// In a pipeline, the truncated results are delivered and counted in the stage's stats.
BOOST_AUTO_TEST_CASE(truncated_results_are_counted_in_stats) {
    const auto good = flac_tone();
    std::vector<ferry::bytes> files{good, prefix(good, good.size() * 3 / 4), good,
                                    prefix(good, good.size() * 9 / 10)};
    auto pipe = ferry::from(files)
                    .map([](const ferry::bytes& b) { return ferry::ops::decode_audio(b); },
                         {.name = "decode"})
                    .build();
    int truncated = 0;
    for (const ferry::audio& a : pipe) truncated += a.truncated() ? 1 : 0;
    BOOST_TEST(truncated == 2);
    const auto stats = pipe.stats();
    BOOST_TEST(stats.stages.at(1).name == "decode");
    BOOST_TEST(stats.stages.at(1).truncated == 2u);
    BOOST_TEST(stats.delivered == 4u);
}

// Damaged audio files: every cut is audio marked truncated or a decode_error, and strict makes
// every cut a decode_error (except WAV's, which FFmpeg cannot tell from an intact file: a cut
// WAV gives the samples before the cut); a flipped byte gives audio or a decode_error.
BOOST_DATA_TEST_CASE(corruption_matrix_gives_typed_errors_or_audio,
                     bdata::make(std::vector<std::string>{"flac", "aac", "wav"}), codec) {
    const auto path = codec == "flac"  ? tone_file({440}, 22050, 0.5, "flac", ".flac")
                      : codec == "aac" ? tone_file({440}, 22050, 0.5, "aac", ".m4a")
                                       : tone_file({440}, 22050, 0.5, "pcm_s16le", ".wav");
    const auto good = read_all(path);
    const std::int64_t whole = ferry::ops::decode_audio(good, {.sample_rate = 16000}).samples();
    int errors = 0;
    int truncated = 0;
    for (const auto& copy : ferry_test::damaged_copies(good.span())) {
        BOOST_TEST_CONTEXT(codec << ": " << copy.how) {
            // A cut that kept every sample (only trailing metadata went) is intact audio.
            bool complete = false;
            try {
                const auto a =
                    ferry::ops::decode_audio(ferry_test::bytes_of(copy), {.sample_rate = 16000});
                // A flipped header bit may change the channel count; the rest must hold.
                BOOST_TEST(a.channels() >= 1);
                BOOST_TEST(a.sample_rate() == 16000);
                BOOST_TEST(a.samples() <= whole);
                complete = a.samples() == whole && !a.truncated();
                if (copy.cut && codec != "wav") BOOST_TEST((a.truncated() || complete));
                if (copy.cut && codec == "wav") BOOST_TEST(a.samples() < whole);
                truncated += a.truncated() ? 1 : 0;
            } catch (const ferry::decode_error&) {
                ++errors;
            }
            if (copy.cut && codec != "wav" && !complete) {
                BOOST_CHECK_THROW(
                    (void)ferry::ops::decode_audio(ferry_test::bytes_of(copy), {.strict = true}),
                    ferry::decode_error);
            }
        }
    }
    BOOST_TEST_MESSAGE(codec << ": " << errors << " decode_errors, " << truncated
                             << " truncated of 20 damaged copies");
}

BOOST_AUTO_TEST_SUITE_END()  // bad_input
BOOST_AUTO_TEST_SUITE_END()  // audio
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace audio_ops_test
