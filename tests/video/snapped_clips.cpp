// SPDX-License-Identifier: Apache-2.0
/// \file
/// `demux_options::snap_to_keyframe` with several clips per pass: each start of `clips(...)`
/// (after the draw) and of `clips_at(...)` moves back to the frame of the keyframe at or before
/// it, ffprobe's keyframes being the reference, over H.264 with a B-pyramid and with open GOPs,
/// HEVC, VP9, MPEG-4 Part 2 and an AVI whose frames are counted by decoding; each snapped clip is
/// the clip `snap_to_keyframe` loads alone from the drawn start, and the ffmpeg CLI's frames;
/// no more frames decoded than without snapping; the same starts for the same item on every run;
/// in a window that starts later, from memory and through `demux_video` + `decode_video`; and a
/// FIFO refused by name.
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstring>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/expect.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_snapped_clips_test {

constexpr int length = 90;  ///< frames per file: six GOPs of 15
constexpr int per_clip = 8;
constexpr int stride = 2;  ///< a clip spans 15 frames
constexpr int batch_clips = 4;
constexpr int items = 6;  ///< items (copies of one file) per pipeline

/// The files: the B-frame matrix with a keyframe every 15 frames.
const std::vector<video_test::coded_file> files = video_test::b_frame_matrix(15);

std::filesystem::path file_of(std::size_t i) {
    return video_test::matrix_file("snapped", i, files);
}
std::filesystem::path rgb_of(std::size_t i) {
    return video_test::matrix_rgb("snapped", i);
}
std::filesystem::path keys_of(std::size_t i) {
    return video_test::scratch("snapped" + std::to_string(i) + ".keys");
}

/// Makes every file once per run (video_test::make_matrix), with ffprobe's `key_frame` flag of
/// each frame.
void make_all() {
    static bool done = false;
    if (done) return;
    done = true;
    video_test::make_matrix("snapped", files, length, [](std::size_t i) {
        return "ffprobe -v quiet -select_streams v:0 -show_entries frame=key_frame -of csv=p=0 " +
               file_of(i).string() + " > " + keys_of(i).string();
    });
}

/// ffprobe's keyframes of file `i`: the index of each frame it decodes with `key_frame` 1.
std::vector<std::int64_t> probed_keyframes(std::size_t i) {
    std::ifstream in(keys_of(i));
    std::vector<std::int64_t> keys;
    std::int64_t frame = 0;
    for (std::string line; std::getline(in, line);) {
        const std::string key = line.substr(0, line.find(','));
        if (key != "0" && key != "1") continue;  // side data, blank lines
        if (key == "1") keys.push_back(frame);
        ++frame;
    }
    return keys;
}

/// The last of `keys` (ascending) at or before `start`; `start` where none is.
std::int64_t key_before(const std::vector<std::int64_t>& keys, std::int64_t start) {
    const auto after = std::upper_bound(keys.begin(), keys.end(), start);
    return after == keys.begin() ? start : *std::prev(after);
}

/// A batch's clip starts: the window index of each clip's first frame.
std::vector<std::int64_t> starts_of(const ferry::video_clip& batch) {
    std::vector<std::int64_t> s;
    for (int c = 0; c < batch.clips(); ++c) {
        s.push_back(batch.indices().at(static_cast<std::size_t>(c * batch.clip_frames())));
    }
    return s;
}

/// Clip `c` of `batch` as bytes of its own.
std::vector<std::uint8_t> clip_bytes(const ferry::video_clip& batch, int c) {
    const auto from = batch.frame(c * batch.clip_frames());
    return {from.data(), from.data() + from.size() * static_cast<std::size_t>(batch.clip_frames())};
}

bool same_bytes(const ferry::video_clip& a, const ferry::video_clip& b) {
    return a.data().size() == b.data().size() &&
           std::equal(a.data().begin(), a.data().end(), b.data().begin());
}

/// What a stage named "decode" gave and counted loading `clips(4, 8, 2)` of `items` copies of
/// `path` (items 0 to 5 of epoch 0, seed 0), snapped or not.
struct run_result {
    std::vector<ferry::video_clip> batches;
    std::uint64_t decoded = 0;
    std::uint64_t lists_read = 0;
};

run_result load_items(const std::filesystem::path& path, bool snap, int threads = 1) {
    const std::vector<std::filesystem::path> paths(items, path);
    const ferry::video_options o{
        .demux = {.snap_to_keyframe = snap},
        .decode = {.select = ferry::frame_selection::clips(batch_clips, per_clip, stride)}};
    auto pipe = ferry::from(paths)
                    .map([o](const std::filesystem::path& p,
                             const ferry::item_info&) { return ferry::ops::load_video(p, o); },
                         {.concurrency = threads, .name = "decode"})
                    .build({.threads = threads});
    run_result out;
    for (ferry::video_clip& b : pipe) out.batches.push_back(std::move(b));
    BOOST_TEST_REQUIRE(out.batches.size() == static_cast<std::size_t>(items));
    for (const auto& st : pipe.stats().stages) {
        if (st.name != "decode") continue;
        for (const auto& [name, n] : st.counters) {
            if (name == "frames decoded") out.decoded = n;
            if (name == "keyframe lists read") out.lists_read = n;
        }
    }
    return out;
}

/// Checks each clip of the snapped batch `b` against the ffmpeg CLI's frames `cli` (whole file,
/// presentation order) from its start.
void check_against_cli(const ferry::video_clip& b, const std::vector<std::uint8_t>& cli) {
    const auto starts = starts_of(b);
    for (int c = 0; c < b.clips(); ++c) {
        for (int t = 0; t < b.clip_frames(); ++t) {
            const auto at = static_cast<std::size_t>(starts[static_cast<std::size_t>(c)] +
                                                     std::int64_t{t} * stride);
            const auto got = b.frame(c * b.clip_frames() + t);
            BOOST_TEST_REQUIRE((at + 1) * got.size() <= cli.size());
            BOOST_TEST(std::equal(got.begin(), got.end(),
                                  cli.begin() + static_cast<std::ptrdiff_t>(at * got.size())),
                       "clip " << c << " frame " << t << " differs from ffmpeg's frame " << at);
        }
    }
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(snapped_clips)

// With snap_to_keyframe, each start clips(4, 8, 2) draws moves back to the last frame ffprobe
// decodes as a keyframe at or before it (the draw itself unchanged: the same item, the same
// drawn starts), clips in the order and number drawn; each clip is the clip snap_to_keyframe
// loads alone from the drawn start's time, and ffmpeg's frames from the snapped start, byte for
// byte; the pass decodes no more frames than without snapping once the file's keyframes, read
// once, are in the cache.
BOOST_DATA_TEST_CASE(random_clip_starts_move_back_to_the_keyframe_before_them,
                     bdata::xrange(files.size()), i) {
    BOOST_TEST_CONTEXT(files[i].name) {
        make_all();
        const auto path = file_of(i);
        const auto keys = probed_keyframes(i);
        BOOST_TEST_REQUIRE(keys.size() >= 5U);
        BOOST_TEST_REQUIRE(keys.front() == 0);
        const std::vector<std::uint8_t> cli = video_test::bytes_of(rgb_of(i));
        BOOST_TEST_REQUIRE(cli.size() == static_cast<std::size_t>(length) * 64 * 48 * 3);
        const run_result drawn = load_items(path, false);
        const run_result snapped = load_items(path, true);
        bool moved = false;
        for (std::size_t item = 0; item < snapped.batches.size(); ++item) {
            BOOST_TEST_CONTEXT("item " << item) {
                const ferry::video_clip& b = snapped.batches[item];
                const ferry::video_clip& d = drawn.batches[item];
                BOOST_TEST_REQUIRE(b.clips() == batch_clips);
                BOOST_TEST_REQUIRE(b.clip_frames() == per_clip);
                BOOST_TEST(!b.truncated());
                std::vector<std::int64_t> want;
                for (const std::int64_t s : starts_of(d)) want.push_back(key_before(keys, s));
                BOOST_TEST(starts_of(b) == want, boost::test_tools::per_element());
                moved = moved || starts_of(b) != starts_of(d);
                check_against_cli(b, cli);
                for (int c = 0; c < b.clips(); ++c) {
                    const double drawn_at =
                        d.timestamps().at(static_cast<std::size_t>(c * per_clip));
                    const auto alone = ferry::ops::load_video(
                        path,
                        {.demux = {.start = drawn_at, .snap_to_keyframe = true},
                         .decode = {.select = ferry::frame_selection::clip(per_clip, stride)}});
                    BOOST_TEST((clip_bytes(b, c) == clip_bytes(alone, 0)),
                               "clip " << c << " differs from the clip snapped alone from "
                                       << drawn_at << " s");
                    const std::vector<double> times(b.timestamps().begin() + c * per_clip,
                                                    b.timestamps().begin() + (c + 1) * per_clip);
                    BOOST_TEST(times == alone.timestamps(), boost::test_tools::per_element());
                }
            }
        }
        BOOST_TEST(moved, "no drawn start lay past a keyframe: the case tests nothing");
        // The file's keyframes are read once, then taken from the cache: a second run reads
        // none, and decodes no more frames than the run without snapping (reading the list
        // costs a decode of the whole file where it is read by decoding, the AVI's, once).
        BOOST_TEST(snapped.lists_read <= 1U);
        const run_result again = load_items(path, true);
        BOOST_TEST(again.lists_read == 0U);
        BOOST_TEST_MESSAGE(files[i].name << ": " << again.decoded << " frames decoded snapped, "
                                         << drawn.decoded << " not");
        BOOST_TEST(again.decoded <= drawn.decoded);
    }
}

// The same item gets the same snapped clips on every run, at any concurrency: two runs on two
// threads give the starts and bytes of a run on one.
BOOST_AUTO_TEST_CASE(the_same_item_gets_the_same_snapped_clips_on_every_run) {
    make_all();
    const auto path = file_of(0);
    const auto keys = probed_keyframes(0);
    const run_result one = load_items(path, true);
    for (int run = 0; run < 2; ++run) {
        BOOST_TEST_CONTEXT("run " << run << " on two threads") {
            const run_result two = load_items(path, true, 2);
            for (std::size_t item = 0; item < one.batches.size(); ++item) {
                BOOST_TEST(starts_of(two.batches[item]) == starts_of(one.batches[item]),
                           boost::test_tools::per_element());
                BOOST_TEST(same_bytes(two.batches[item], one.batches[item]));
            }
        }
    }
    for (const auto& b : one.batches) {
        for (const std::int64_t s : starts_of(b)) {
            BOOST_TEST(std::binary_search(keys.begin(), keys.end(), s),
                       "start " << s << " is no keyframe");
        }
    }
}

// clips_at's starts snap likewise, in the order given and with repeats: each clip is the clip
// clips_at gives without snapping from the keyframe before its start; from memory the same.
BOOST_DATA_TEST_CASE(given_clip_starts_move_back_to_the_keyframe_before_them,
                     bdata::xrange(files.size()), i) {
    BOOST_TEST_CONTEXT(files[i].name) {
        make_all();
        const auto path = file_of(i);
        const auto keys = probed_keyframes(i);
        const std::vector<std::int64_t> given{62, 7, 40, 40, 15, 0};
        std::vector<std::int64_t> want;
        for (const std::int64_t s : given) want.push_back(key_before(keys, s));
        const auto select = ferry::frame_selection::clips_at(given, per_clip, stride);
        const auto snapped = ferry::ops::load_video(
            path, {.demux = {.snap_to_keyframe = true}, .decode = {.select = select}});
        BOOST_TEST(starts_of(snapped) == want, boost::test_tools::per_element());
        const auto at_keys = ferry::ops::load_video(
            path, {.decode = {.select = ferry::frame_selection::clips_at(want, per_clip, stride)}});
        BOOST_TEST(same_bytes(snapped, at_keys));
        BOOST_TEST(snapped.timestamps() == at_keys.timestamps(), boost::test_tools::per_element());
        check_against_cli(snapped, video_test::bytes_of(rgb_of(i)));
        const auto bytes = video_test::read_all(path);
        const auto from_memory = ferry::ops::load_video(
            std::span<const std::byte>(bytes),
            {.demux = {.snap_to_keyframe = true}, .decode = {.select = select}});
        BOOST_TEST(same_bytes(from_memory, snapped));
    }
}

// In a window that starts later (its start snapped too), clips_at's starts count from the
// window's first frame and snap to the keyframes inside it; demux_video with snap_to_keyframe
// and then decode_video give the clips load_video gives.
BOOST_AUTO_TEST_CASE(starts_snap_within_a_window_and_through_demux_video) {
    make_all();
    const auto path = file_of(0);
    const auto keys = probed_keyframes(0);
    // Halfway through frame 25: the window starts at the keyframe at or before frame 25.
    const double start = ferry::ops::probe_video(path).start + 25.5 / 25.0;
    const std::int64_t first = key_before(keys, 25);
    const std::vector<std::int64_t> given{5, 30, 18};
    std::vector<std::int64_t> want;
    for (const std::int64_t s : given) want.push_back(key_before(keys, first + s) - first);
    const ferry::video_options o{
        .demux = {.start = start, .snap_to_keyframe = true},
        .decode = {.select = ferry::frame_selection::clips_at(given, per_clip, stride)}};
    const auto clip = ferry::ops::load_video(path, o);
    BOOST_TEST(starts_of(clip) == want, boost::test_tools::per_element());
    check_against_cli(clip, [&] {
        // The CLI's frames from the window's first frame on.
        auto all = video_test::bytes_of(rgb_of(0));
        all.erase(all.begin(), all.begin() + first * 64 * 48 * 3);
        return all;
    }());
    const ferry::packets pkts = ferry::ops::demux_video(path, o.demux);
    const auto decoded = ferry::ops::decode_video(pkts, o.decode);
    BOOST_TEST(starts_of(decoded) == want, boost::test_tools::per_element());
    BOOST_TEST(same_bytes(decoded, clip));
}

BOOST_AUTO_TEST_SUITE(bad_input)

// Snapping clip starts reads the keyframes ahead, which a FIFO cannot give: clips and clips_at
// with snap_to_keyframe from a FIFO are an invalid_argument saying so, as a snapped window start
// is, rather than clips whose starts silently stay unsnapped.
BOOST_AUTO_TEST_CASE(snapped_clips_from_a_fifo_are_refused_by_name) {
    const auto file = video_test::video_file({.codec = "libvpx-vp9", .ext = ".webm"});
    const std::string why =
        "snap_to_keyframe needs a seekable input (a file or memory), not a pipe or FIFO";
    const auto fifo = video_test::scratch("snapped-clips.fifo");
    const std::vector<ferry::video_options> refused{
        {.demux = {.snap_to_keyframe = true},
         .decode = {.select = ferry::frame_selection::clips(2, 4, 1, ferry::item_info{})}},
        {.demux = {.snap_to_keyframe = true},
         .decode = {.select = ferry::frame_selection::clips_at({3, 30}, 4)}},
        {.demux = {.start = 1.0, .snap_to_keyframe = true},
         .decode = {.select = ferry::frame_selection::clip(4)}},
    };
    for (std::size_t k = 0; k < refused.size(); ++k) {
        BOOST_TEST_CONTEXT("options " << k) {
            video_test::fifo_feed feed(file, fifo);
            ferry_test::expect_throw_saying<ferry::invalid_argument>(
                [&] { (void)ferry::ops::load_video(fifo, refused[k]); }, why);
            feed.finish();
        }
    }
    // The message names the op and the FIFO.
    video_test::fifo_feed feed(file, fifo);
    const auto e = ferry_test::expect_throw<ferry::invalid_argument>(
        [&] { (void)ferry::ops::load_video(fifo, refused[0]); });
    feed.finish();
    BOOST_TEST(e.what().starts_with("demux_video: " + fifo.string() + ": "), e.what());
}

BOOST_AUTO_TEST_SUITE_END()  // bad_input
BOOST_AUTO_TEST_SUITE_END()  // snapped_clips
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace video_snapped_clips_test
