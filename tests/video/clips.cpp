// SPDX-License-Identifier: Apache-2.0
/// \file
/// Several clips from one pass (`frame_selection::clips` and `clips_at`): each clip of the batch
/// is, byte for byte, the clip `clip(frames, stride)` loads alone from its start, for overlapping,
/// disjoint, far-apart, repeated and unsorted windows over H.264 with a B-pyramid and with open
/// GOPs, HEVC, MPEG-4 Part 2, VP9 and an AVI whose frames are counted by decoding; one pass
/// decodes fewer frames than the separate loads where windows share a GOP; random starts depend
/// on the item alone (the same after a resume, on another world size) and cover the valid range;
/// the batch dimension; and too-short windows, missing items and bad arguments.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_clips_test {

constexpr int width = 64;
constexpr int height = 48;
constexpr int length = 90;  ///< frames per file: three GOPs of 30
constexpr int per_clip = 8;
constexpr int stride = 2;  ///< a clip spans 15 frames

/// The files: the B-frame matrix with a keyframe every 30 frames.
const std::vector<video_test::coded_file> files = video_test::b_frame_matrix(30);

std::filesystem::path file_of(std::size_t i) {
    return video_test::matrix_file("clips", i, files);
}

/// The `ffmpeg` CLI's frames of file `i` (rgb24, every frame in presentation order).
std::filesystem::path rgb_of(std::size_t i) {
    return video_test::matrix_rgb("clips", i);
}

/// Makes every file once per run (video_test::make_matrix).
void make_all() {
    static bool done = false;
    if (done) return;
    done = true;
    video_test::make_matrix("clips", files, length);
}

/// What a stage named "decode" delivered and counted for one `load_video(path, options)`.
struct counted {
    ferry::video_clip clip;
    std::uint64_t decoded = 0;
    std::uint64_t kept = 0;
};

/// `load_video(path, options)` in a one-item pipeline whose callable takes its item (so a random
/// `clips` selection draws from item 0 of epoch 0, seed 0), with the stage's counters.
counted load_counted(const std::filesystem::path& path, const ferry::video_options& options) {
    const std::vector<std::filesystem::path> paths{path};
    auto pipe =
        ferry::from(paths)
            .map([options](const std::filesystem::path& p,
                           const ferry::item_info&) { return ferry::ops::load_video(p, options); },
                 {.name = "decode"})
            .build({.threads = 1});
    counted out;
    int delivered = 0;
    for (ferry::video_clip& clip : pipe) {
        out.clip = std::move(clip);
        ++delivered;
    }
    BOOST_TEST_REQUIRE(delivered == 1);
    const auto stats = pipe.stats();
    for (const auto& [name, n] : stats.stages.at(1).counters) {
        if (name == "frames decoded") out.decoded = n;
        if (name == "frames kept") out.kept = n;
    }
    return out;
}

/// Clip `c` of `batch` as a clip of its own.
std::vector<std::uint8_t> clip_bytes(const ferry::video_clip& batch, int c) {
    const auto from = batch.frame(c * batch.clip_frames());
    return {from.data(), from.data() + from.size() * static_cast<std::size_t>(batch.clip_frames())};
}

/// A batch's clip starts: the window index of each clip's first frame.
std::vector<std::int64_t> starts_of(const ferry::video_clip& batch) {
    std::vector<std::int64_t> s;
    for (int c = 0; c < batch.clips(); ++c) {
        s.push_back(batch.indices().at(static_cast<std::size_t>(c * batch.clip_frames())));
    }
    return s;
}

/// Starts of 8-frame clips at stride 2 (15 frames each) over 90 frames with a keyframe every
/// 30, and whether every clip shares a GOP with another one.
struct windows {
    std::string name;
    std::vector<std::int64_t> starts;
    bool share_gops;
};

const std::vector<windows> picks{
    {"overlapping, one GOP", {3, 9}, true},
    {"disjoint, one GOP", {0, 15}, true},
    {"repeated", {20, 20}, true},
    {"far apart, unsorted, across keyframes", {62, 5, 33}, false},
    {"four, two GOPs shared", {10, 70, 40, 12}, false},
};

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(clips)

// Each clip of a batch decoded in one pass holds the same bytes and times as clip(8, 2) loaded
// alone from its start, with frames no clip needs skipped or not, for every codec and for windows
// that overlap, repeat, share a GOP or lie GOPs apart; the batch keeps each distinct frame once and
// decodes fewer frames than the separate loads where its windows share GOPs, and never more where
// packets carry their times.
BOOST_DATA_TEST_CASE(each_clip_is_the_clip_loaded_alone, bdata::xrange(files.size()), i) {
    BOOST_TEST_CONTEXT(files[i].name) {
        make_all();
        const auto path = file_of(i);
        const std::vector<std::uint8_t> cli = video_test::bytes_of(rgb_of(i));
        BOOST_TEST_REQUIRE(cli.size() == static_cast<std::size_t>(length) * width * height * 3);
        for (const windows& w : picks) {
            for (const bool skip : {true, false}) {
                BOOST_TEST_CONTEXT(w.name << (skip ? "" : ", every frame decoded")) {
                    const counted batch =
                        load_counted(path, {.decode = {.select = ferry::frame_selection::clips_at(
                                                           w.starts, per_clip, stride),
                                                       .skip_nonref = skip}});
                    const ferry::video_clip& b = batch.clip;
                    BOOST_TEST_REQUIRE(b.clips() == static_cast<int>(w.starts.size()));
                    BOOST_TEST_REQUIRE(b.clip_frames() == per_clip);
                    BOOST_TEST(starts_of(b) == w.starts, boost::test_tools::per_element());
                    BOOST_TEST(!b.truncated());
                    std::set<std::int64_t> distinct(b.indices().begin(), b.indices().end());
                    BOOST_TEST(batch.kept == distinct.size());
                    std::uint64_t alone_decoded = 0;
                    for (int c = 0; c < b.clips(); ++c) {
                        const auto first = static_cast<std::size_t>(c * per_clip);
                        const counted alone = load_counted(
                            path,
                            {.demux = {.start = b.timestamps().at(first)},
                             .decode = {.select = ferry::frame_selection::clip(per_clip, stride),
                                        .skip_nonref = skip}});
                        alone_decoded += alone.decoded;
                        BOOST_TEST_REQUIRE(alone.clip.frames() == per_clip);
                        BOOST_TEST((clip_bytes(b, c) == clip_bytes(alone.clip, 0)),
                                   "clip " << c << " (from frame " << w.starts[first / per_clip]
                                           << ") differs from the clip loaded alone");
                        // And each frame is the ffmpeg CLI's frame at that index.
                        for (int t = 0; t < per_clip; ++t) {
                            const auto at = static_cast<std::size_t>(w.starts[first / per_clip] +
                                                                     std::int64_t{t} * stride);
                            const auto got = b.frame(c * per_clip + t);
                            BOOST_TEST_REQUIRE((at + 1) * got.size() <= cli.size());
                            BOOST_TEST(std::equal(got.begin(), got.end(),
                                                  cli.begin() +
                                                      static_cast<std::ptrdiff_t>(at * got.size())),
                                       "clip " << c << " frame " << t << " differs from ffmpeg's "
                                               << "frame " << at);
                        }
                        const std::vector<double> times(
                            b.timestamps().begin() + static_cast<std::ptrdiff_t>(first),
                            b.timestamps().begin() + static_cast<std::ptrdiff_t>(first) + per_clip);
                        BOOST_TEST(times == alone.clip.timestamps(),
                                   boost::test_tools::per_element());
                    }
                    BOOST_TEST_MESSAGE(files[i].name << ", " << w.name << ": " << batch.decoded
                                                     << " frames decoded in one pass, "
                                                     << alone_decoded << " alone");
                    if (w.share_gops) BOOST_TEST(batch.decoded < alone_decoded);
                    // Where frames are counted by decoding, the pass decodes every frame from
                    // the window's start to the last clip's end (twice: the demuxer's count and
                    // the decode), while a load alone starts at its own keyframe.
                    if (files[i].timed) BOOST_TEST(batch.decoded <= alone_decoded);
                }
            }
        }
    }
}

// Two disjoint clips in one GOP of an H.264 file with B-frames: 16 frames kept (2 x 8), and fewer
// decoded than the two loads alone, which both decode the GOP's start.
BOOST_AUTO_TEST_CASE(counts_frames_decoded_and_kept_for_a_batch) {
    make_all();
    const auto path = file_of(0);
    const counted batch = load_counted(
        path, {.decode = {.select = ferry::frame_selection::clips_at({0, 15}, per_clip, stride)}});
    BOOST_TEST(batch.kept == 16U);
    std::uint64_t alone = 0;
    for (const double start : {batch.clip.timestamps().at(0), batch.clip.timestamps().at(8)}) {
        alone += load_counted(
                     path, {.demux = {.start = start},
                            .decode = {.select = ferry::frame_selection::clip(per_clip, stride)}})
                     .decoded;
    }
    BOOST_TEST(batch.decoded >= 16U);
    BOOST_TEST(batch.decoded < alone);
}

// A batch is one tensor [clips, frames, H, W, C] holding the clips in the order asked for, the
// same bytes as the clip's; a single clip stays [T, H, W, C], a batch of one [1, T, H, W, C].
BOOST_AUTO_TEST_CASE(clips_come_as_a_batch_dimension) {
    const auto path = video_test::video_file({.frames = 60, .width = 64, .height = 48});
    const ferry::video_clip batch = ferry::ops::load_video(
        path, {.decode = {.select = ferry::frame_selection::clips_at({40, 0, 20}, 4, 3)}});
    BOOST_TEST(batch.batch());
    BOOST_TEST(batch.clips() == 3);
    BOOST_TEST(batch.clip_frames() == 4);
    BOOST_TEST(batch.frames() == 12);
    // The frames show their own index: clip 0 is frames 40, 43, 46, 49, then 0..9, then 20..29.
    BOOST_TEST(video_test::frame_indices(batch) ==
                   (std::vector<int>{40, 43, 46, 49, 0, 3, 6, 9, 20, 23, 26, 29}),
               boost::test_tools::per_element());
    const ferry::tensor t = batch.to_tensor();
    BOOST_TEST(t.shape() == (std::vector<std::int64_t>{3, 4, 48, 64, 3}),
               boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(t.nbytes() == batch.data().size());
    BOOST_TEST(std::memcmp(t.data(), batch.data().data(), t.nbytes()) == 0);

    const auto one = ferry::ops::load_video(
        path, {.decode = {.select = ferry::frame_selection::clips_at({5}, 4, 3)}});
    BOOST_TEST(one.to_tensor().shape() == (std::vector<std::int64_t>{1, 4, 48, 64, 3}),
               boost::test_tools::per_element());
    const auto single =
        ferry::ops::load_video(path, {.decode = {.select = ferry::frame_selection::clip(4, 3)}});
    BOOST_TEST(!single.batch());
    BOOST_TEST(single.clips() == 1);
    BOOST_TEST(single.to_tensor().shape() == (std::vector<std::int64_t>{4, 48, 64, 3}),
               boost::test_tools::per_element());
}

// Random starts come from the item alone: the same item gives the same clips, from the stage
// call's item or given by hand, and they are the clips clips_at gives from those starts; another
// item gets other starts; every clip fits in the window, its frames `stride` apart.
BOOST_AUTO_TEST_CASE(random_starts_depend_only_on_the_item) {
    const auto path = video_test::video_file({.frames = 90, .width = 64, .height = 48});
    const ferry::item_info item{.epoch = 0, .index = 0, .position = 0, .seed = 0};
    const auto by_hand = ferry::ops::load_video(
        path, {.decode = {.select = ferry::frame_selection::clips(4, per_clip, stride, item)}});
    const counted in_stage = load_counted(
        path, {.decode = {.select = ferry::frame_selection::clips(4, per_clip, stride)}});
    BOOST_TEST(in_stage.clip.indices() == by_hand.indices(), boost::test_tools::per_element());
    BOOST_TEST((clip_bytes(in_stage.clip, 0) == clip_bytes(by_hand, 0)));
    const auto starts = starts_of(by_hand);
    BOOST_TEST_REQUIRE(starts.size() == 4U);
    for (int c = 0; c < 4; ++c) {
        BOOST_TEST_CONTEXT("clip " << c) {
            BOOST_TEST(starts[c] >= 0);
            BOOST_TEST(starts[c] <= length - (per_clip - 1) * stride - 1);
            for (int t = 0; t < per_clip; ++t) {
                BOOST_TEST(video_test::frame_index(by_hand, c * per_clip + t) ==
                           starts[c] + t * stride);
            }
        }
    }
    const auto at = ferry::ops::load_video(
        path, {.decode = {.select = ferry::frame_selection::clips_at(starts, per_clip, stride)}});
    BOOST_TEST((at.data().size() == by_hand.data().size() &&
                std::memcmp(at.data().data(), by_hand.data().data(), at.data().size()) == 0));
    const auto other = ferry::ops::load_video(
        path, {.decode = {.select = ferry::frame_selection::clips(
                              4, per_clip, stride, {.epoch = 0, .index = 1, .seed = 0})}});
    BOOST_TEST((starts_of(other) != starts));
    const auto next_epoch = ferry::ops::load_video(
        path, {.decode = {.select = ferry::frame_selection::clips(
                              4, per_clip, stride, {.epoch = 1, .index = 0, .seed = 0})}});
    BOOST_TEST((starts_of(next_epoch) != starts));
}

// Over many items the starts take every value of [0, T - (frames - 1) * stride - 1] and none
// outside it: a 20-frame file and clips spanning 15 frames have starts 0 to 5.
BOOST_AUTO_TEST_CASE(starts_cover_the_valid_range) {
    const auto path = video_test::video_file({.frames = 20, .width = 32, .height = 32, .gop = 10});
    std::map<std::int64_t, int> seen;
    for (std::uint64_t index = 0; index < 30; ++index) {
        const auto b = ferry::ops::load_video(
            path, {.decode = {.select = ferry::frame_selection::clips(4, per_clip, stride,
                                                                      {.index = index, .seed = 11}),
                              .resize = {16, 16}}});
        for (const std::int64_t s : starts_of(b)) ++seen[s];
    }
    BOOST_TEST(seen.size() == 6U);
    BOOST_TEST(seen.begin()->first == 0);
    BOOST_TEST(seen.rbegin()->first == 5);
    for (const auto& [start, n] : seen) BOOST_TEST(n >= 8, "start " << start << " drawn " << n);
}

// A pipeline loading clips(4, 8, 2) of shuffled videos, stopped and resumed from its saved state,
// gives the clips of a run without a break; and two ranks of a world of two give each item the
// clips the world of one gives it.
BOOST_AUTO_TEST_CASE(resumed_and_sharded_runs_give_the_same_clips) {
    std::vector<std::filesystem::path> videos;
    for (const int n : {40, 50, 60}) {
        videos.push_back(video_test::video_file({.frames = n, .width = 32, .height = 32}));
    }
    std::vector<std::filesystem::path> data;
    for (int i = 0; i < 6; ++i) data.push_back(videos[static_cast<std::size_t>(i) % 3]);
    const auto make = [&](const ferry::sampling& s, const ferry::pipeline_options& o) {
        return ferry::from(data, s)
            .map(
                [](const std::filesystem::path& p, const ferry::item_info& info) {
                    const auto b = ferry::ops::load_video(
                        p, {.decode = {.select = ferry::frame_selection::clips(4, 8, 2)}});
                    std::string out =
                        std::to_string(info.epoch) + "/" + std::to_string(info.index) + ":";
                    for (const int f : video_test::frame_indices(b)) out += std::to_string(f) + ",";
                    return out;
                },
                {.concurrency = 2})
            .build(o);
    };
    const ferry::sampling shuffled{.shuffle = true, .seed = 5};
    std::vector<std::string> whole;
    {
        auto p = make(shuffled, {.threads = 2});
        for (int e = 0; e < 2; ++e) {
            for (auto& x : p) whole.push_back(x);
        }
    }
    BOOST_TEST_REQUIRE(whole.size() == 12U);
    for (const std::size_t at : {1U, 5U, 8U}) {
        BOOST_TEST_CONTEXT("stopped after " << at) {
            std::vector<std::string> out;
            std::string saved;
            {
                auto p = make(shuffled, {.threads = 2});
                for (int e = 0; e < 2 && saved.empty(); ++e) {
                    for (auto& x : p) {
                        out.push_back(x);
                        if (out.size() == at) {
                            saved = p.state().serialize();
                            break;
                        }
                    }
                }
            }
            const auto st = ferry::pipeline_state::parse(saved);
            auto p = make(shuffled, {.threads = 2, .resume_from = st});
            for (auto e = st.epoch(); e < 2U; ++e) {
                for (auto& x : p) out.push_back(x);
            }
            BOOST_TEST(out == whole, boost::test_tools::per_element());
        }
    }
    std::set<std::string> one_world(whole.begin(), whole.begin() + 6);
    std::set<std::string> two_worlds;
    for (std::size_t rank = 0; rank < 2; ++rank) {
        auto p = make({.shuffle = true, .seed = 5, .rank = rank, .world_size = 2}, {.threads = 1});
        for (auto& x : p) two_worlds.insert(x);
    }
    BOOST_TEST(two_worlds == one_world, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE(bad_input)

// A window shorter than one clip is a decode_error naming the clip's span and the frames that
// decode; a start past them names the frame: never fewer clips than asked for.
BOOST_AUTO_TEST_CASE(a_window_shorter_than_a_clip_is_a_decode_error_naming_the_counts) {
    const auto path = video_test::video_file({.frames = 20, .width = 32, .height = 32, .gop = 10});
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] {
            (void)ferry::ops::load_video(path, {.decode = {.select = ferry::frame_selection::clips(
                                                               2, 16, 2, ferry::item_info{})}});
        },
        "a clip of 16 frames at stride 2 spans 31 frames but the window has 20 frames that decode");
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] {
            (void)ferry::ops::load_video(
                path, {.decode = {.select = ferry::frame_selection::clips_at({0, 10}, 8, 2)}});
        },
        "frame 20 is selected but the window has 20 frames that decode");
    ferry_test::expect_throw_saying<ferry::decode_error>(
        [&] {
            (void)ferry::ops::load_video(
                path, {.decode = {.select = ferry::frame_selection::clips_at({25}, 8, 2)}});
        },
        "frame 25 is selected but the window has 20 frames that decode");
}

// Random clips outside a stage call, or in a stage whose callable does not take its item, have no
// item to draw from: an invalid_argument saying what to do, not starts from nowhere.
BOOST_AUTO_TEST_CASE(random_clips_without_an_item_are_refused_by_name) {
    const auto path = video_test::video_file({.frames = 20, .width = 32, .height = 32, .gop = 10});
    const ferry::video_options o{.decode = {.select = ferry::frame_selection::clips(2, 4)}};
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [&] { (void)ferry::ops::load_video(path, o); },
        "this call has none: call it in a stage whose callable "
        "takes a const ferry::item_info&");
    const std::vector<std::filesystem::path> paths{path};
    auto pipe = ferry::from(paths)
                    .map(
                        [o](const std::filesystem::path& p) {
                            return ferry::ops::load_video(p, o).frames();
                        },
                        {.on_error = ferry::skip})
                    .build({.threads = 1,
                            .logger = [](ferry::log_level, std::string_view) {},
                            .max_epoch_failure_rate = 1.0});
    int delivered = 0;
    for (int n : pipe) delivered += n;
    BOOST_TEST(delivered == 0);
    BOOST_TEST_REQUIRE(pipe.failures().size() == 1U);
    BOOST_TEST(
        pipe.failures()[0].message.find("clips(count, frames, stride, info)") != std::string::npos,
        pipe.failures()[0].message);
}

// Counts and strides that are not positive, more frames than a clip holds, no starts and negative
// starts are refused by name.
BOOST_AUTO_TEST_CASE(bad_clip_arguments_are_invalid_arguments) {
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [] { (void)ferry::frame_selection::clips(0, 8, 2); },
        "0 clips of 8 frames at stride 2: each must be positive");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [] { (void)ferry::frame_selection::clips(2, 8, 0); }, "2 clips of 8 frames at stride 0");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [] { (void)ferry::frame_selection::clips_at({}, 8, 2); }, "0 clips of 8 frames");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [] { (void)ferry::frame_selection::clips(1 << 20, 1 << 12, 1); },
        "1048576 clips of 4096 frames are more frames than a video_clip holds");
    ferry_test::expect_throw_saying<ferry::invalid_argument>(
        [] {
            (void)ferry::frame_selection::clips_at({3, -1}, 8, 2);
        },
        "start 1 is -1; frames count from 0");
}

BOOST_AUTO_TEST_SUITE_END()  // bad_input
BOOST_AUTO_TEST_SUITE_END()  // clips
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace video_clips_test
