// SPDX-License-Identifier: Apache-2.0
/// \file
/// The keyframe index: `probe_video`'s keyframe times against ffprobe's (`-skip_frame nokey`) in
/// every container and however they are read (the MP4 sample table, packets' flags, a decode of
/// the keyframes), its cap; the process-wide keyframe cache (one read per file version, within
/// its limits); and `demux_options::snap_to_keyframe`: a clip that starts at the keyframe before
/// the start, with the frames a clip loaded at that keyframe has, fewer frames decoded.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "video_support.hpp"

namespace bdata = boost::unit_test::data;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_keyframes_test {

using ks = ferry::keyframe_source;

struct keyed {
    std::string name;
    std::string ext;
    std::string codec;  ///< ffmpeg's output options for the video
    ks from;            ///< where probe_video reads the keyframes
};
std::ostream& operator<<(std::ostream& os, const keyed& k) {
    return os << k.name;
}

// Keyframes every 12 frames (and where the encoder puts more) over 60 frames of testsrc2.
const std::vector<keyed> keyed_files{
    {"mp4/h264, B-pyramid", ".mp4",
     "-c:v libx264 -preset veryfast -bf 3 -x264-params b-pyramid=2 -g 12 -pix_fmt yuv420p",
     ks::index},
    {"mov/mjpeg, all intra", ".mov", "-c:v mjpeg -q:v 4 -pix_fmt yuvj420p", ks::index},
    {"mkv/h264, open GOPs", ".mkv",
     "-c:v libx264 -preset veryfast -bf 3 -x264-params "
     "b-pyramid=2:open-gop=1:keyint=12:scenecut=0:b-adapt=0 -pix_fmt yuv420p",
     ks::packets},
    {"webm/vp9", ".webm", "-c:v libvpx-vp9 -b:v 300k -g 12 -deadline realtime -cpu-used 8",
     ks::packets},
    {"ts/mpeg2video, B-frames", ".ts", "-c:v mpeg2video -q:v 4 -bf 2 -g 12", ks::packets},
    {"avi/mpeg4, B-frames (dts only)", ".avi", "-c:v mpeg4 -q:v 4 -bf 2 -g 12", ks::decoding},
    {"mpg/mpeg2video, B-frames", ".mpg", "-c:v mpeg2video -q:v 4 -bf 2 -g 12", ks::decoding},
    {"h264/h264, no container index", ".h264",
     "-c:v libx264 -preset veryfast -bf 3 -g 12 -pix_fmt yuv420p", ks::decoding},
};

std::filesystem::path keyed_file(std::size_t i) {
    return video_test::scratch("keyed" + std::to_string(i) + keyed_files[i].ext);
}

std::filesystem::path keyed_times(std::size_t i) {
    return video_test::scratch("keyed" + std::to_string(i) + ".keys");
}

/// Makes every file once per run, with ffprobe's keyframe times of each.
void make_keyed() {
    static bool done = false;
    if (done) return;
    done = true;
    std::vector<std::string> encode;
    for (std::size_t i = 0; i < keyed_files.size(); ++i) {
        encode.push_back(
            "ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i "
            "testsrc2=size=64x48:rate=25 -frames:v 60 " +
            keyed_files[i].codec + " " + keyed_file(i).string());
    }
    video_test::run_all(encode);
    std::vector<std::string> probe;
    for (std::size_t i = 0; i < keyed_files.size(); ++i) {
        probe.push_back(
            "ffprobe -v quiet -select_streams v:0 -show_entries "
            "frame=key_frame,best_effort_timestamp_time -of csv=p=0 " +
            keyed_file(i).string() + " > " + keyed_times(i).string());
    }
    video_test::run_all(probe);
}

/// ffprobe's keyframes of file `i`: the times of the frames it decodes with `key_frame` 1, a
/// frame without a time ("N/A") timed as the ffmpeg CLI times it, the previous frame's plus one
/// frame (1/25 s; 0 for the first).
std::vector<double> probed_keyframes(std::size_t i) {
    std::ifstream in(keyed_times(i));
    std::vector<double> keys;
    double last = -1.0;
    for (std::string line; std::getline(in, line);) {
        const auto comma = line.find(',');
        if (comma == std::string::npos) continue;  // side data, blank lines
        const std::string key = line.substr(0, comma);
        const std::string time = line.substr(comma + 1, line.find(',', comma + 1) - comma - 1);
        if (key != "0" && key != "1") continue;
        const double t = time == "N/A" ? (last < 0 ? 0.0 : last + 1.0 / 25.0) : std::stod(time);
        last = t;
        if (key == "1") keys.push_back(t);
    }
    return keys;
}

/// What a stage named "decode" running `load_video` on each of `paths` gave and counted.
struct loaded {
    std::vector<ferry::video_clip> clips;
    std::uint64_t decoded = 0;
    std::uint64_t lists_read = 0;
};

loaded load_in_stage(const std::vector<std::filesystem::path>& paths,
                     const ferry::video_options& options) {
    auto pipe =
        ferry::from(paths)
            .map([options](
                     const std::filesystem::path& p) { return ferry::ops::load_video(p, options); },
                 {.name = "decode"})
            .build({.threads = 1});
    loaded out;
    for (ferry::video_clip& clip : pipe) out.clips.push_back(std::move(clip));
    BOOST_TEST_REQUIRE(out.clips.size() == paths.size());
    out.decoded = stage_counter(pipe.stats(), "decode", "frames decoded");
    out.lists_read = stage_counter(pipe.stats(), "decode", "keyframe lists read");
    return out;
}

bool same_pixels(const ferry::video_clip& a, const ferry::video_clip& b) {
    return a.frames() == b.frames() && a.data().size() == b.data().size() &&
           std::equal(a.data().begin(), a.data().end(), b.data().begin());
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(keyframes)

// probe_video lists the frames ffprobe decodes as keyframes, at the same times (those the ffmpeg
// CLI gives them), in each container, whether it reads them from the MP4 sample table, the
// packets' flags, or (no presentation times: AVI with B-frames, MPEG-PS, raw H.264) a decode.
BOOST_DATA_TEST_CASE(lists_the_keyframes_ffprobe_decodes, bdata::xrange(keyed_files.size()), i) {
    BOOST_TEST_CONTEXT(keyed_files[i].name) {
        make_keyed();
        const auto want = probed_keyframes(i);
        BOOST_TEST_REQUIRE(want.size() >= 5U);
        const ferry::video_info plain = ferry::ops::probe_video(keyed_file(i));
        BOOST_TEST(plain.keyframes.empty());
        BOOST_TEST((plain.keyframes_from == ks::none));
        const ferry::video_info info = ferry::ops::probe_video(keyed_file(i), {.keyframes = true});
        BOOST_TEST(ferry::to_string(info.keyframes_from) == ferry::to_string(keyed_files[i].from));
        BOOST_TEST(!info.keyframes_capped);
        std::ostringstream lists;
        for (double k : info.keyframes) lists << k << " ";
        lists << "| ffprobe: ";
        for (double k : want) lists << k << " ";
        BOOST_TEST_REQUIRE(info.keyframes.size() == want.size(), lists.str());
        for (std::size_t k = 0; k < want.size(); ++k) {
            BOOST_TEST(std::abs(info.keyframes[k] - want[k]) < 1e-5,
                       "keyframe " << k << ": " << info.keyframes[k] << " s, ffprobe says "
                                   << want[k] << " s");
        }
        // From memory too, the same list.
        const auto bytes = video_test::read_all(keyed_file(i));
        const ferry::video_info from_memory =
            ferry::ops::probe_video(std::span<const std::byte>(bytes), {.keyframes = true});
        BOOST_TEST(from_memory.keyframes == info.keyframes);
    }
}

// max_keyframes caps the list: the first keyframes, marked capped.
BOOST_AUTO_TEST_CASE(caps_the_keyframes_it_lists) {
    make_keyed();
    const ferry::video_info all = ferry::ops::probe_video(keyed_file(1), {.keyframes = true});
    BOOST_TEST_REQUIRE(all.keyframes.size() == 60U);  // every MJPEG frame is a keyframe
    const ferry::video_info capped =
        ferry::ops::probe_video(keyed_file(1), {.keyframes = true, .max_keyframes = 7});
    BOOST_TEST(capped.keyframes_capped);
    BOOST_TEST(capped.keyframes ==
               std::vector<double>(all.keyframes.begin(), all.keyframes.begin() + 7));
}

// A clip loaded with snap_to_keyframe starts at the last keyframe at or before the start asked
// for, holds the frames a clip loaded at that keyframe's time holds, byte for byte, and decodes
// fewer frames than the clip from the start asked for (none before the window); in each
// container, the frames showing their own index.
BOOST_DATA_TEST_CASE(snapped_clip_starts_at_the_keyframe_before_the_start,
                     bdata::make(std::vector<std::string>{".mp4", ".mkv", ".avi", ".mpg"}), ext) {
    BOOST_TEST_CONTEXT(ext) {
        const std::string codec = ext == ".avi"   ? "mpeg4"
                                  : ext == ".mpg" ? "mpeg2video"
                                                  : "libx264";
        const auto path = video_test::video_file(
            {.codec = codec, .ext = ext, .frames = 50, .gop = 10, .extra = "-sc_threshold 0"});
        const ferry::video_info info = ferry::ops::probe_video(path, {.keyframes = true});
        BOOST_TEST_REQUIRE(info.keyframes.size() >= 4U);
        // Between frames 14 and 15: without snapping the window starts at frame 15.
        const double start = info.start + 14.5 / 25.0;
        double key = -1;
        for (double k : info.keyframes) {
            if (k <= start) key = k;
        }
        BOOST_TEST_REQUIRE(key >= 0.0);
        const auto select = ferry::frame_selection::clip(6, 2);
        const loaded snapped = load_in_stage(
            {path},
            {.demux = {.start = start, .snap_to_keyframe = true}, .decode = {.select = select}});
        const loaded asked =
            load_in_stage({path}, {.demux = {.start = start}, .decode = {.select = select}});
        const loaded at_key =
            load_in_stage({path}, {.demux = {.start = key}, .decode = {.select = select}});
        const ferry::video_clip& clip = snapped.clips.front();
        // -sc_threshold 0: keyframes at frames 0, 10, 20, ... (AVI's and MPEG-PS's frame times,
        // from a decode, may be a frame late: the frame is told by the index it shows).
        const int first = 10;
        BOOST_TEST(
            video_test::frame_indices(clip) ==
            (std::vector<int>{first, first + 2, first + 4, first + 6, first + 8, first + 10}));
        BOOST_TEST(video_test::frame_indices(asked.clips.front()).front() > first);
        BOOST_TEST_REQUIRE(clip.timestamps().size() == 6U);
        BOOST_TEST(std::abs(clip.timestamps().front() - key) < 1e-6);
        BOOST_TEST(same_pixels(clip, at_key.clips.front()));
        BOOST_TEST(snapped.decoded < asked.decoded);
        BOOST_TEST(snapped.lists_read <= 1U);
    }
}

// Snapping in memory reads the keyframes from the bytes and gives the frames it gives from the
// file.
BOOST_AUTO_TEST_CASE(snaps_a_clip_in_memory_as_from_its_file) {
    const auto path = video_test::video_file({.frames = 50, .gop = 10, .extra = "-sc_threshold 0"});
    const auto bytes = video_test::read_all(path);
    const ferry::video_options o{.demux = {.start = 0.78, .snap_to_keyframe = true},
                                 .decode = {.select = ferry::frame_selection::clip(4, 3)}};
    const auto from_file = ferry::ops::load_video(path, o);
    const auto from_memory = ferry::ops::load_video(std::span<const std::byte>(bytes), o);
    BOOST_TEST(video_test::frame_indices(from_memory) == (std::vector<int>{10, 13, 16, 19}));
    BOOST_TEST(same_pixels(from_file, from_memory));
}

// A file's keyframes are read once however many clips snap to them (the stage counts one list
// read, the cache one build and hits after it), and again once the file is rewritten (its size
// and modification time change): the new file's keyframes, not the old ones.
BOOST_AUTO_TEST_CASE(reads_a_files_keyframes_once_until_it_changes) {
    const auto gop10 =
        video_test::video_file({.frames = 50, .gop = 10, .extra = "-sc_threshold 0"});
    const auto gop5 = video_test::video_file({.frames = 40, .gop = 5, .extra = "-sc_threshold 0"});
    const auto path = video_test::scratch("rewritten.mp4");
    std::filesystem::copy_file(gop10, path, std::filesystem::copy_options::overwrite_existing);
    const ferry::video_options o{.demux = {.start = 0.5, .snap_to_keyframe = true},
                                 .decode = {.select = ferry::frame_selection::clip(2)}};
    const ferry::keyframe_cache_stats before = ferry::keyframe_cache_snapshot();
    const loaded first = load_in_stage({path, path, path}, o);
    const ferry::keyframe_cache_stats after = ferry::keyframe_cache_snapshot();
    BOOST_TEST(first.lists_read == 1U);
    BOOST_TEST(after.builds == before.builds + 1);
    BOOST_TEST(after.hits >= before.hits + 2);
    for (const auto& clip : first.clips) {
        BOOST_TEST(video_test::frame_indices(clip) == (std::vector<int>{10, 11}));
    }

    std::filesystem::copy_file(gop5, path, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::last_write_time(
        path, std::filesystem::last_write_time(path) + std::chrono::seconds(5));
    const loaded second = load_in_stage({path, path}, o);
    BOOST_TEST(second.lists_read == 1U);
    BOOST_TEST(ferry::keyframe_cache_snapshot().builds == after.builds + 1);
    for (const auto& clip : second.clips) {
        BOOST_TEST(video_test::frame_indices(clip) == (std::vector<int>{10, 11}));
    }
    const ferry::video_info info = ferry::ops::probe_video(path, {.keyframes = true});
    BOOST_TEST(info.keyframes.size() == 8U);  // 40 frames, a keyframe every 5
}

// The cache holds at most `entries` lists and `bytes` bytes, dropping the least recently used.
BOOST_AUTO_TEST_CASE(keeps_within_its_entry_and_byte_limits) {
    make_keyed();
    struct restore {
        ~restore() { ferry::set_keyframe_cache_limits({}); }
    } restore_defaults;
    ferry::set_keyframe_cache_limits({.entries = 2});
    const auto start = ferry::keyframe_cache_snapshot();
    BOOST_TEST(start.entries <= 2U);
    for (std::size_t i : {0U, 2U, 3U, 4U}) {
        (void)ferry::ops::probe_video(keyed_file(i), {.keyframes = true});
    }
    const auto counted = ferry::keyframe_cache_snapshot();
    BOOST_TEST(counted.entries == 2U);
    BOOST_TEST(counted.evictions >= start.evictions + 2);
    // The most recent stays: probing it again is a hit, not a build.
    (void)ferry::ops::probe_video(keyed_file(4), {.keyframes = true});
    BOOST_TEST(ferry::keyframe_cache_snapshot().builds == counted.builds);
    BOOST_TEST(ferry::keyframe_cache_snapshot().hits == counted.hits + 1);
    // Room for one list of a few keyframes (about 100 bytes each, 8 per keyframe).
    ferry::set_keyframe_cache_limits({.entries = 100, .bytes = 200});
    BOOST_TEST(ferry::keyframe_cache_snapshot().entries <= 1U);
    BOOST_TEST(ferry::keyframe_cache_snapshot().bytes <= 200U);
    (void)ferry::ops::probe_video(keyed_file(0), {.keyframes = true});
    (void)ferry::ops::probe_video(keyed_file(2), {.keyframes = true});
    BOOST_TEST(ferry::keyframe_cache_snapshot().entries == 1U);
    BOOST_TEST(ferry::keyframe_cache_snapshot().bytes <= 200U);
    // A list larger than the bound is not kept (60 MJPEG keyframes: 576 bytes).
    (void)ferry::ops::probe_video(keyed_file(1), {.keyframes = true});
    BOOST_TEST(ferry::keyframe_cache_snapshot().bytes <= 200U);
}

/// A copy of the MP4 `mp4` named `name` whose sync-sample table (stss: 1, 11, 21, ...) lists
/// sample 15, a B- or P-frame, where sample 11 belongs: an index that lies.
std::filesystem::path with_lying_stss(const std::filesystem::path& mp4, const std::string& name) {
    auto data = video_test::bytes_of(mp4);
    const std::string tag = "stss";
    const auto at = std::search(data.begin(), data.end(), tag.begin(), tag.end());
    BOOST_TEST_REQUIRE((at != data.end()), "no stss box in " << mp4);
    // The tag, version and flags, the entry count, then 4-byte big-endian sample numbers.
    const auto second = static_cast<std::size_t>(at - data.begin()) + 4 + 4 + 4 + 4;
    BOOST_TEST_REQUIRE(second + 4 <= data.size());
    BOOST_TEST_REQUIRE((data[second] == 0 && data[second + 1] == 0 && data[second + 2] == 0 &&
                        data[second + 3] == 11));
    data[second + 3] = 15;
    const auto path = video_test::scratch(name);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()),
              static_cast<std::streamsize>(data.size()));
    BOOST_TEST_REQUIRE(static_cast<bool>(out));
    return path;
}

// An MP4 whose sync-sample table lists a frame that is no keyframe: probe_video lists the
// keyframes the decoder finds (the lie caught when the listed packet is read, every packet read
// instead), and a clip snapped from a start after the false one starts at the true keyframe
// before it, with ffmpeg's frames byte for byte (ffmpeg decoding the whole file).
BOOST_AUTO_TEST_CASE(an_index_that_lists_a_non_keyframe_changes_no_frame) {
    const auto honest =
        video_test::video_file({.frames = 50, .gop = 10, .extra = "-sc_threshold 0"});
    const auto lying = with_lying_stss(honest, "lying.mp4");
    const auto rgb = video_test::scratch("lying.rgb");
    video_test::run_all({"ffmpeg -hide_banner -loglevel quiet -nostdin -i " + lying.string() +
                         " -map 0:v:0 -vsync passthrough -sws_flags bilinear -f rawvideo "
                         "-pix_fmt rgb24 -y " +
                         rgb.string()});
    const auto ref = video_test::bytes_of(rgb);
    constexpr std::size_t frame_bytes = 96 * 64 * 3;
    BOOST_TEST_REQUIRE(ref.size() == 50 * frame_bytes);
    const ferry::video_info info = ferry::ops::probe_video(lying, {.keyframes = true});
    BOOST_TEST(
        info.keyframes == (std::vector<double>{0.0, 0.4, 0.8, 1.2, 1.6}),
        "keyframes from " << ferry::to_string(info.keyframes_from) << ": " << [&] {
            std::ostringstream o;
            for (double k : info.keyframes) o << k << " ";
            return o.str();
        }());
    const auto clip =
        ferry::ops::load_video(lying, {.demux = {.start = 0.62, .snap_to_keyframe = true},
                                       .decode = {.select = ferry::frame_selection::clip(4, 2)}});
    BOOST_TEST(
        video_test::frame_indices(clip) == (std::vector<int>{10, 12, 14, 16}), "frames " << [&] {
            std::ostringstream o;
            for (int k : video_test::frame_indices(clip)) o << k << " ";
            return o.str();
        }());
    for (int t = 0; t < clip.frames(); ++t) {
        const auto at = static_cast<std::size_t>(10 + 2 * t) * frame_bytes;
        BOOST_TEST(std::equal(clip.frame(t).begin(), clip.frame(t).end(),
                              ref.begin() + static_cast<std::ptrdiff_t>(at)),
                   "frame " << t << " differs from ffmpeg's frame " << 10 + 2 * t);
    }
}

BOOST_AUTO_TEST_SUITE_END()  // keyframes
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace video_keyframes_test
