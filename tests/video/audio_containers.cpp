// SPDX-License-Identifier: Apache-2.0
/// \file
/// decode_audio across containers, beside video and alone, intact and cut: windows and whole
/// streams of lossless audio are the ffmpeg CLI's samples bit for bit. decode_audio opens some
/// containers from their header alone (FLAC, MP4, Matroska, Ogg) and the others after
/// `avformat_find_stream_info` (WAV, AVI); both must give what the CLI gives.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <ferry/video.hpp>
#include <string>
#include <vector>

#include "video_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace video_test;

namespace audio_containers_test {

constexpr int rate = 44100;
constexpr int seconds = 4;

/// A lossless mono tone in a container, and how the ffmpeg CLI writes it.
struct container_case {
    std::string name;
    std::string ext;
    std::string args;  ///< output options; input 0 is the tone, input 1 a 64x48 test video
    /// Samples a window may start off the asked time: Matroska stores times in milliseconds,
    /// so a window lands within half a millisecond (22 samples at 44.1 kHz); others are exact.
    int slack = 0;
    friend std::ostream& operator<<(std::ostream& os, const container_case& c) {
        return os << c.name;
    }
};

const std::vector<container_case>& cases() {
    static const std::vector<container_case> all{
        {"flac", ".flac", "-map 0:a -c:a flac"},
        {"mkv_flac_with_video", ".mkv", "-map 1:v -map 0:a -c:v libx264 -c:a flac", rate / 2000},
        {"mp4_alac_with_video", ".mp4",
         "-map 1:v -map 0:a -c:v libx264 -c:a alac -movflags +faststart"},
        {"ogg_flac", ".ogg", "-map 0:a -c:a flac"},
        {"wav_s16", ".wav", "-map 0:a -c:a pcm_s16le"},
        {"avi_pcm_with_video", ".avi", "-map 1:v -map 0:a -c:v mpeg4 -c:a pcm_s16le"},
    };
    return all;
}

/// The file of `c` (and, when `cut`, its first 70%), and the CLI's samples of it as float32 in
/// `<file>.f32`: what the reference of every window is cut from.
std::filesystem::path make(const container_case& c, bool cut) {
    const auto whole = scratch("audio-container-" + c.name + c.ext);
    const auto path = cut ? scratch("audio-container-cut-" + c.name + c.ext) : whole;
    if (std::filesystem::exists(path.string() + ".f32")) return path;
    const std::string ff = "ffmpeg -hide_banner -loglevel error -nostdin -y ";
    if (!std::filesystem::exists(whole)) {
        run_all({ff + "-f lavfi -i sine=frequency=440:sample_rate=" + std::to_string(rate) +
                 ":duration=" + std::to_string(seconds) +
                 " -f lavfi -i testsrc2=size=64x48:rate=25:duration=" + std::to_string(seconds) +
                 " " + c.args + " " + whole.string()});
    }
    if (cut) {
        const auto size = std::filesystem::file_size(whole);
        run_all({"head -c " + std::to_string(size * 7 / 10) + " " + whole.string() + " > " +
                 path.string()});
    }
    // The CLI decodes every sample from the start (no seek), as float32 mono.
    run_all({ff + "-i " + path.string() + " -map 0:a:0 -f f32le -c:a pcm_f32le " + path.string() +
             ".f32"});
    return path;
}

/// The CLI's samples of `path`.
std::vector<float> cli_samples(const std::filesystem::path& path) {
    const auto bytes = bytes_of(path.string() + ".f32");
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return out;
}

/// Mismatched samples of `got` against `want` from `offset` (a length mismatch counts too).
std::size_t mismatches(std::span<const float> got, const std::vector<float>& want,
                       std::size_t offset) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        bad += offset + i >= want.size() || got[i] != want[offset + i];
    }
    return bad;
}

/// The fewest mismatches of `got` against `want` from `offset` moved by up to `slack` samples.
std::size_t mismatches_near(std::span<const float> got, const std::vector<float>& want,
                            std::size_t offset, int slack) {
    std::size_t best = got.size();
    for (int d = -slack; d <= slack; ++d) {
        best = std::min(best, mismatches(got, want, offset + static_cast<std::size_t>(d)));
    }
    return best;
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(audio)
BOOST_AUTO_TEST_SUITE(containers)

// The whole stream and windows at 0.5 s and 2.25 s (a seek each) hold the CLI's samples: the
// same count, the same bits.
BOOST_DATA_TEST_CASE(windows_are_the_clis_samples, bdata::make(cases()), c) {
    const auto path = make(c, false);
    const auto want = cli_samples(path);
    BOOST_TEST_REQUIRE(want.size() == static_cast<std::size_t>(rate * seconds));
    const auto all = ferry::ops::decode_audio(path);
    BOOST_TEST(all.channels() == 1);
    BOOST_TEST(all.samples() == static_cast<std::int64_t>(want.size()));
    BOOST_TEST(mismatches(all.channel(0), want, 0) == 0U);
    BOOST_TEST(!all.truncated());
    for (const double start : {0.5, 2.25}) {
        BOOST_TEST_CONTEXT("window from " << start << " s") {
            const auto w = ferry::ops::decode_audio(path, {.start = start, .end = start + 1.0});
            BOOST_TEST(w.samples() == rate);
            BOOST_TEST(mismatches_near(w.channel(0), want, static_cast<std::size_t>(start * rate),
                                       c.slack) == 0U);
        }
    }
}

// Cut to 70%: the windows inside what remains are still the CLI's samples (a container whose
// index was cut away must not seek elsewhere), the whole stream is what the CLI decodes of it.
BOOST_DATA_TEST_CASE(cut_files_keep_the_windows_that_remain, bdata::make(cases()), c) {
    const auto path = make(c, true);
    const auto want = cli_samples(path);
    BOOST_TEST_REQUIRE(want.size() > static_cast<std::size_t>(rate));
    const auto all = ferry::ops::decode_audio(path);
    BOOST_TEST(all.samples() == static_cast<std::int64_t>(want.size()));
    BOOST_TEST(mismatches(all.channel(0), want, 0) == 0U);
    const auto w = ferry::ops::decode_audio(path, {.start = 0.5, .end = 1.0});
    BOOST_TEST(w.samples() == rate / 2);
    BOOST_TEST(mismatches_near(w.channel(0), want, rate / 2, c.slack) == 0U);
}

// A WAV file whose 16-bit PCM is DTS in disguise (as CD rips of DTS discs are): FFmpeg's codec
// probe finds DTS (decode_audio gives it 32 KiB of the data, the CLI 128 KiB), and the samples
// are the CLI's DTS decode, not the PCM noise the bytes would be.
BOOST_AUTO_TEST_CASE(a_wav_file_holding_dts_decodes_as_dts) {
    const auto dts = scratch("audio-container-x.dts");
    const auto wav = scratch("audio-container-dts.wav");
    const std::string ff = "ffmpeg -hide_banner -loglevel error -nostdin -y ";
    run_all({ff + "-f lavfi -i sine=frequency=440:sample_rate=" + std::to_string(rate) +
             ":duration=2 -ac 2 -c:a dca -strict -2 " + dts.string()});
    run_all({ff + "-f s16le -ar " + std::to_string(rate) + " -ac 2 -i " + dts.string() +
             " -c:a copy " + wav.string()});
    run_all({ff + "-i " + wav.string() + " -f f32le -c:a pcm_f32le " + wav.string() + ".f32"});
    const auto interleaved = cli_samples(wav);  // left, right, left, ...
    BOOST_TEST_REQUIRE(interleaved.size() > static_cast<std::size_t>(2 * rate));
    const auto a = ferry::ops::decode_audio(wav);
    BOOST_TEST_REQUIRE(a.channels() == 2);
    BOOST_TEST_REQUIRE(2 * static_cast<std::size_t>(a.samples()) == interleaved.size());
    for (int c = 0; c < 2; ++c) {
        std::vector<float> want;
        for (std::size_t i = static_cast<std::size_t>(c); i < interleaved.size(); i += 2) {
            want.push_back(interleaved[i]);
        }
        BOOST_TEST(mismatches(a.channel(c), want, 0) == 0U, "channel " << c);
    }
    // The tone, not noise: DTS decoded, not its bytes read as PCM.
    BOOST_TEST(tone_frequency(a.channel(0), rate) == 440.0, boost::test_tools::tolerance(0.01));
}

BOOST_AUTO_TEST_SUITE_END()  // containers
BOOST_AUTO_TEST_SUITE_END()  // audio
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace audio_containers_test
