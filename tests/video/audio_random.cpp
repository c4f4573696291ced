// SPDX-License-Identifier: Apache-2.0
/// \file
/// decode_audio's random windows (`audio_options::random_window`): drawn for each item from its
/// numbers, the same on every run and at every concurrency, spread over the stream or the span
/// `start` and `end` give, holding the samples the tone has there; a stream shorter than the
/// window, and uses that cannot draw one.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

using namespace video_test;

namespace audio_random_test {

constexpr int rate = 22050;
constexpr double seconds = 4.0;

/// 4 s of a 440 Hz mono tone in FLAC, as lavfi writes it: sample n is sin(2 pi 440 n / rate) / 8.
std::filesystem::path tone() {
    return tone_file({440}, rate, seconds, "flac", ".flac");
}

/// The largest difference between `a` and the tone from `a.start()` on.
double off_the_tone(const ferry::audio& a) {
    const double pi = std::acos(-1.0);
    const auto first = std::llround(a.start() * rate);
    double worst = 0;
    for (std::int64_t k = 0; k < a.samples(); ++k) {
        const double want = std::sin(2 * pi * 440.0 * static_cast<double>(first + k) / rate) / 8;
        worst = std::max(worst, std::abs(a.channel(0)[static_cast<std::size_t>(k)] - want));
    }
    return worst;
}

/// Each of `items` items' window of `length` seconds from the tone, loaded by a pipeline of
/// `threads` threads at that concurrency: (item index, audio), in item order.
std::vector<std::pair<std::uint64_t, ferry::audio>> windows(int items, int threads, double length) {
    const std::vector<std::filesystem::path> paths(static_cast<std::size_t>(items), tone());
    auto pipe = ferry::from(paths)
                    .map(
                        [length](const std::filesystem::path& p, const ferry::item_info& info) {
                            return std::pair{
                                info.index, ferry::ops::decode_audio(p, {.random_window = length})};
                        },
                        {.concurrency = threads})
                    .build({.threads = threads});
    std::vector<std::pair<std::uint64_t, ferry::audio>> out;
    for (auto& w : pipe) out.push_back(std::move(w));
    return out;
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(audio)
BOOST_AUTO_TEST_SUITE(random_window)

// 64 items: each a 1 s window whose start lies in [0, 3 s], whose samples are the tone's from
// there; the starts differ from item to item and cover the range.
BOOST_AUTO_TEST_CASE(windows_are_drawn_per_item_and_hold_the_tone_there) {
    const auto got = windows(64, 1, 1.0);
    BOOST_TEST_REQUIRE(got.size() == 64U);
    std::set<std::int64_t> starts;
    double lowest = seconds;
    double highest = 0;
    for (const auto& [index, a] : got) {
        BOOST_TEST_CONTEXT("item " << index << ", start " << a.start()) {
            BOOST_TEST(a.samples() == rate);
            BOOST_TEST(a.padded() == 0);
            BOOST_TEST(a.start() >= 0.0);
            BOOST_TEST(a.start() <= seconds - 1.0);
            BOOST_TEST(off_the_tone(a) < 2.0 / 32768);
        }
        starts.insert(std::llround(a.start() * rate));
        lowest = std::min(lowest, a.start());
        highest = std::max(highest, a.start());
    }
    BOOST_TEST(starts.size() >= 60U);
    BOOST_TEST(lowest < 0.4);
    BOOST_TEST(highest > 2.6);
}

// The same item gets the same window on another run, at another concurrency, and outside a
// pipeline with its item_info given; another epoch draws another window.
BOOST_AUTO_TEST_CASE(the_same_item_gets_the_same_window_anywhere) {
    const auto one = windows(16, 1, 1.0);
    const auto two = windows(16, 2, 1.0);
    BOOST_TEST_REQUIRE(one.size() == 16U);
    BOOST_TEST_REQUIRE(two.size() == 16U);
    for (std::size_t i = 0; i < one.size(); ++i) {
        BOOST_TEST(one[i].first == two[i].first);
        BOOST_TEST(one[i].second.start() == two[i].second.start());
        BOOST_TEST(std::equal(one[i].second.data().begin(), one[i].second.data().end(),
                              two[i].second.data().begin()));
    }
    const ferry::item_info fifth{.epoch = 0, .index = 5, .position = 5, .seed = 0};
    const auto alone = ferry::ops::decode_audio(tone(), {.random_window = 1.0, .item = fifth});
    BOOST_TEST(alone.start() == one[5].second.start());
    ferry::item_info next_epoch = fifth;
    next_epoch.epoch = 1;
    BOOST_TEST(
        ferry::ops::decode_audio(tone(), {.random_window = 1.0, .item = next_epoch}).start() !=
        alone.start());
}

// A stream shorter than the window is all of it, from its first sample; with `samples`, padded.
BOOST_AUTO_TEST_CASE(a_stream_shorter_than_the_window_is_all_of_it) {
    const ferry::item_info item{.index = 3, .position = 3};
    const auto a = ferry::ops::decode_audio(tone(), {.random_window = 10.0, .item = item});
    BOOST_TEST(a.start() == 0.0);
    BOOST_TEST(a.samples() == static_cast<std::int64_t>(seconds * rate));
    const auto padded = ferry::ops::decode_audio(
        tone(), {.samples = 10 * rate, .random_window = 10.0, .item = item});
    BOOST_TEST(padded.samples() == 10 * rate);
    BOOST_TEST(padded.padded() == 6 * rate);
}

// With `start` and `end`, the window is drawn inside that span (an utterance's segment of a
// long recording) and does not leave it: 48 items' 0.5 s windows start in [1, 2] s, hold the tone
// there and spread over the span; a span shorter than the window is all of it (padded with
// `samples`); `end` alone bounds the span's end, `start` alone its start.
BOOST_AUTO_TEST_CASE(windows_are_drawn_inside_start_and_end) {
    std::vector<double> starts;
    for (std::uint64_t i = 0; i < 48; ++i) {
        const ferry::item_info item{.index = i, .position = i};
        const auto a = ferry::ops::decode_audio(
            tone(), {.start = 1.0, .end = 2.5, .random_window = 0.5, .item = item});
        BOOST_TEST_CONTEXT("item " << i << ", start " << a.start()) {
            BOOST_TEST(a.start() >= 1.0);
            BOOST_TEST(a.start() <= 2.0);
            BOOST_TEST(a.samples() == rate / 2);
            BOOST_TEST(off_the_tone(a) < 2.0 / 32768);
        }
        starts.push_back(a.start());
    }
    BOOST_TEST(*std::min_element(starts.begin(), starts.end()) < 1.2);
    BOOST_TEST(*std::max_element(starts.begin(), starts.end()) > 1.8);
    const ferry::item_info item{.index = 7, .position = 7};
    const auto short_span = ferry::ops::decode_audio(
        tone(), {.start = 1.0, .end = 1.25, .random_window = 0.5, .item = item});
    BOOST_TEST(short_span.start() == 1.0);
    const auto span = ferry::ops::decode_audio(tone(), {.start = 1.0, .end = 1.25});
    BOOST_TEST(short_span.samples() == span.samples());
    BOOST_TEST(std::equal(short_span.data().begin(), short_span.data().end(), span.data().begin(),
                          span.data().end()));
    const auto padded = ferry::ops::decode_audio(
        tone(),
        {.start = 1.0, .end = 1.25, .samples = rate / 2, .random_window = 0.5, .item = item});
    BOOST_TEST(padded.samples() == rate / 2);
    BOOST_TEST(padded.padded() == rate / 2 - span.samples());
    for (std::uint64_t i = 0; i < 16; ++i) {
        const ferry::item_info it{.index = i, .position = i};
        const auto head =
            ferry::ops::decode_audio(tone(), {.end = 1.0, .random_window = 0.5, .item = it});
        BOOST_TEST(head.start() + 0.5 <= 1.0 + 1.0 / rate);
        BOOST_TEST(head.samples() == rate / 2);
        const auto tail =
            ferry::ops::decode_audio(tone(), {.start = 3.0, .random_window = 0.5, .item = it});
        BOOST_TEST(tail.start() >= 3.0);
        BOOST_TEST(tail.samples() == rate / 2);
    }
}

BOOST_AUTO_TEST_SUITE(bad_input)

// A FLAC file cut to 60% still declares 4 s: windows drawn past its data are not lost but end
// where the data ends (the same window for the same item, in a pipeline or not), hold the tone
// there, and are counted as `windows past the data`; windows inside the data are as drawn.
BOOST_AUTO_TEST_CASE(windows_drawn_past_a_cut_files_data_end_at_the_data) {
    const auto good = read_all(tone());
    const auto cut = ferry::bytes(std::span(good.data(), good.size() * 6 / 10));
    const auto data = ferry::ops::decode_audio(cut);
    BOOST_TEST_REQUIRE(data.truncated());
    const double data_end = data.duration();
    BOOST_TEST_REQUIRE(data_end > 0.5);
    BOOST_TEST_REQUIRE(data_end < 3.0);
    const std::vector<ferry::bytes> items(24, cut);
    auto pipe = ferry::from(items)
                    .map(
                        [](const ferry::bytes& b, const ferry::item_info&) {
                            return ferry::ops::decode_audio(b, {.random_window = 0.2});
                        },
                        {.name = "audio"})
                    .build({.threads = 1});
    std::uint64_t i = 0;
    std::uint64_t clamped = 0;
    for (const ferry::audio& a : pipe) {
        BOOST_TEST_CONTEXT("item " << i << ", start " << a.start()) {
            BOOST_TEST(a.samples() == rate / 5);
            BOOST_TEST(a.start() + 0.2 <= data_end + 1.0 / rate);
            BOOST_TEST(off_the_tone(a) < 2.0 / 32768);
            clamped += std::abs(a.start() + 0.2 - data_end) < 1.0 / rate ? 1 : 0;
            const ferry::item_info item{.index = i, .position = i};
            BOOST_TEST(
                ferry::ops::decode_audio(cut, {.random_window = 0.2, .item = item}).start() ==
                a.start());
        }
        ++i;
    }
    BOOST_TEST(i == 24U);
    // Starts are drawn over [0, 3.8 s] and the data ends before 3 s: some land past it.
    BOOST_TEST(clamped >= 3U);
    BOOST_TEST(stage_counter(pipe.stats(), "audio", "windows past the data") == clamped);
}

// nothing gives are named.
BOOST_AUTO_TEST_CASE(windows_that_cannot_be_drawn_are_named) {
    const ferry::item_info item{};
    for (const double w : {-1.0, std::numeric_limits<double>::quiet_NaN()}) {
        ferry_test::expect_throw_saying<ferry::invalid_argument>(
            [&] { (void)ferry::ops::decode_audio(tone(), {.random_window = w, .item = item}); },
            "is not a positive length (0: no random window)");
    }
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] {
            (void)ferry::ops::decode_audio(
                tone(), {.start = 5.0, .end = 6.0, .random_window = 1.0, .item = item});
        },
        "random_window: the span from 5.000 s to 6.000 s holds none of the stream, which ends at "
        "4.000 s");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::decode_audio(tone(), {.random_window = 1.0}); },
        "random_window draws its start from the item's numbers (item_rng), and this call has "
        "none");
    // An Ogg stream read from a FIFO: its length is on its last page, which cannot be read ahead.
    const auto ogg = tone_file({440}, rate, seconds, "libvorbis", ".ogg");
    const auto fifo = scratch("random-window.fifo");
    fifo_feed feed(ogg, fifo);
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] { (void)ferry::ops::decode_audio(fifo, {.random_window = 1.0, .item = item}); },
        "random_window needs the stream's length, and nothing gives it");
    feed.finish();
}

BOOST_AUTO_TEST_SUITE_END()  // bad_input
BOOST_AUTO_TEST_SUITE_END()  // random_window
BOOST_AUTO_TEST_SUITE_END()  // audio
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace audio_random_test
