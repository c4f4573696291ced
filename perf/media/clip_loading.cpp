// SPDX-License-Identifier: Apache-2.0
/// \file
/// clip_loading: clips per second of video training's usual sample (16 frames at stride 2 from a
/// random start, resized to 112x112 RGB) through ferry, against a hand-written FFmpeg loop making
/// the same calls on as many threads, at concurrency 1, 2, 4, 8 (--concurrency); and whether
/// FFmpeg's process-wide codec lock shows (SPDL found it the biggest lever for video loading).
///
/// The clips: perf/common/video_set.hpp (720p H.264, a keyframe every 60 frames, B-frames), read
/// from the page cache. Every variant loads the same list of (clip, start) samples, the starts
/// drawn once (seeded) over each clip's length:
///
///  * `ferry`         `from(samples).map(load_video {.demux.start, .decode = {clip(16, 2),
///                    112x112}}, {.concurrency = c, .executor = io})`: c threads of its own, one
///                    decoder thread per clip, a demuxer and decoder opened per clip; frames no
///                    selected frame needs are not decoded (`skip_nonref`, the default);
///  * `ferry, every frame` the same with `.skip_nonref = false`: every frame from the keyframe
///                    before the window decoded, as the hand loop does (the lever alone);
///  * `hand, per clip` c std::threads taking samples from one counter, each making the calls a
///                    user writes against libav directly: avformat_open_input,
///                    avformat_find_stream_info, av_seek_frame(BACKWARD), avcodec_open2 (one
///                    thread), send/receive, sws_scale of every second frame from the start;
///  * `hand, reused`  the same, but each thread keeps its decoder and scaler from clip to clip
///                    (avcodec_flush_buffers instead of a new avcodec_open2): what "contexts
///                    reused per thread, avcodec_open2 off the hot path" buys.
///
/// A second table, several clips per pass: `--batches` loads of 4 random clips of a video each,
/// `load_video` with `clips(4, 16, 2)` in a stage whose callable takes its item (one demuxer
/// reading the whole file for its frame count, one decoder, one pass in time order), against the
/// same 4 clips (the starts a warm-up run drew: they depend on the item alone) loaded by 4
/// separate `clip(16, 2)` loads (`.demux.start` at each start's time), in the same process,
/// alternating; the warm-up checks that both give the same bytes.
///
/// A third table (`levers`) measures the levers alone, each in alternating runs against ferry
/// without it: `snap_to_keyframe` (clip starts moved back to the keyframe before them: no frame
/// before the window decoded), and decoder threads chosen by ferry (`threads = 0`: the
/// pipeline's threads over the stage's concurrency) against one decoder thread, on a pipeline of
/// every CPU's threads; with one clip's latency at concurrency 1 (`--tables threads`: that
/// row alone, to repeat it).
///
/// A fourth table (`together`) puts every lever on at once against the hand loops loading the
/// same frames: one clip per load with `skip_nonref` and `snap_to_keyframe` against the hand
/// loop at the snapped starts; and the second table's 4 clips per video in one pass, snapped
/// (`clips(4, 16, 2)` with `snap_to_keyframe`: the drawn starts moved to the keyframe at or
/// before them, checked against `probe_video`'s list applied by hand) and not, against the hand
/// loop making 4 separate loads of the same starts.
///
/// The hand loop also times its avcodec_open2 calls: under a process-wide lock their wall time
/// would grow with the threads calling it. Frames decoded per clip: ferry's from its stage's
/// `frames decoded` counter, the hand loop's from the frames avcodec_receive_frame returned.
/// Each repetition runs every variant once, in turn; the table gives medians.
///
/// Usage: clip_loading [--clips N] [--seconds S] [--gop N] [--bframes N] [--samples N]
///                    [--batches N] [--reps R]
///                    [--concurrency 1,2,4,8] [--tables single,batch,levers,together,threads]
///                    [--dir DIR]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "clip_ferry_loads.hpp"
#include "clip_hand_loop.hpp"
#include "common/args.hpp"
#include "common/video_set.hpp"
#include "ferry/ferry.hpp"
#include "ferry/video.hpp"
#include "ferry/video_probe.hpp"

namespace {

namespace fs = std::filesystem;
using ferry_perf::batch_rate;
using ferry_perf::batch_sample;
using ferry_perf::clips_per_pass;
using ferry_perf::ferry_rate;
using ferry_perf::frames_per_clip;
using ferry_perf::hand_rate;
using ferry_perf::median;
using ferry_perf::sample;
using ferry_perf::seconds_since;
using ferry_perf::separate;
using ferry_perf::side;
using ferry_perf::stride;
using clock_type = ferry_perf::clock_type;

struct config {
    int clips = 4;
    int seconds = 10;
    ferry_perf::video_encoding encoding;  ///< --gop, --bframes
    int samples = 64;                     ///< clip loads per run
    int batches = 16;                     ///< loads of `clips_per_pass` clips per run
    int reps = 3;
    bool single = true;    ///< the table of one clip per load
    bool batch = true;     ///< the table of several clips per pass
    bool levers = true;    ///< the table of the levers alone (snap_to_keyframe, decoder threads)
    bool together = true;  ///< the table of every lever together against the hand loops
    bool threads = false;  ///< the levers table's decoder-threads row alone
    std::vector<int> concurrency{1, 2, 4, 8};
    fs::path dir = fs::temp_directory_path() / "ferry-video-decode";
};

/// The load average as `uptime` prints it.
std::string load_average() {
    double l[3] = {0, 0, 0};
    if (getloadavg(l, 3) != 3) return "?";
    char text[64];
    std::snprintf(text, sizeof text, "%.2f, %.2f, %.2f", l[0], l[1], l[2]);
    return text;
}

/// Several clips per pass alone: each video's `clips_per_pass` clips in one `load_video` call
/// against as many separate ferry loads of the same starts.
void batch_table(const config& c, const std::vector<fs::path>& videos,
                 const std::vector<batch_sample>& batches) {
    const std::vector<sample> alone = separate(batches);
    std::printf(
        "\n%d clips of %d frames at stride %d per video, 112x112 rgb24: %d videos (%d clips), one "
        "load_video with clips(%d, %d, %d) against %d separate clip(%d, %d) loads of the "
        "same starts, median of %d; load average %s at the start\n\n",
        clips_per_pass, frames_per_clip, stride, c.batches, c.batches * clips_per_pass,
        clips_per_pass, frames_per_clip, stride, clips_per_pass, frames_per_clip, stride, c.reps,
        load_average().c_str());
    std::printf(
        "| concurrency | one pass, clips/s | separate loads, clips/s | one pass ÷ separate | "
        "frames decoded per clip: one pass, separate |\n|---:|---:|---:|---:|---:|\n");
    for (int t : c.concurrency) {
        std::vector<double> one, sep, ratio;
        double one_decoded = 0, sep_decoded = 0;
        for (int rep = 0; rep < c.reps; ++rep) {
            const auto b = batch_rate(videos, t);
            const auto s = ferry_rate(alone, t, {.threads = 1});
            one.push_back(b.clips_per_s);
            sep.push_back(s.clips_per_s);
            ratio.push_back(b.clips_per_s / s.clips_per_s);
            one_decoded = b.decoded_per_clip;
            sep_decoded = s.decoded_per_clip;
        }
        std::printf("| %d | %.1f | %.1f | **%.2f** | %.1f, %.1f |\n", t, median(one), median(sep),
                    median(ratio), one_decoded, sep_decoded);
        std::fflush(stdout);
    }
    std::printf("\nload average %s at the end\n", load_average().c_str());
}

/// The levers alone, each against ferry without it in alternating runs: `snap_to_keyframe`
/// (one pipeline thread, as the main table), and decoder threads chosen by ferry against one
/// decoder thread, both on a pipeline of every CPU's threads.
void levers_table(const std::vector<sample>& samples, const config& c, bool with_snap) {
    const int cpus = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    std::printf(
        "\nlevers alone (alternating runs, medians of %d): snap_to_keyframe on a 1-thread "
        "pipeline; decoder threads on a %d-thread pipeline\n\n",
        c.reps, cpus);
    std::printf(
        "| concurrency | ferry clips/s | + snap_to_keyframe | snap alone | frames decoded per clip "
        "(ferry, snap) | 1 decoder thread, clips/s | threads chosen, clips/s | threads alone | "
        "decoder threads chosen | one clip, ms (1 thread, chosen) |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int t : c.concurrency) {
        std::vector<double> plain, snap, snap_ratio, one, chosen, thread_ratio;
        double plain_decoded = 0, snap_decoded = 0, threads_chosen = 0;
        for (int rep = 0; rep < c.reps; ++rep) {
            if (with_snap) {
                const auto p = ferry_rate(samples, t, {});
                const auto s = ferry_rate(samples, t, {.snap = true});
                plain.push_back(p.clips_per_s);
                snap.push_back(s.clips_per_s);
                snap_ratio.push_back(s.clips_per_s / p.clips_per_s);
                plain_decoded = p.decoded_per_clip;
                snap_decoded = s.decoded_per_clip;
            }
            const auto o = ferry_rate(samples, t, {.threads = 1, .pipeline_threads = cpus});
            const auto a = ferry_rate(samples, t, {.threads = 0, .pipeline_threads = cpus});
            one.push_back(o.clips_per_s);
            chosen.push_back(a.clips_per_s);
            thread_ratio.push_back(a.clips_per_s / o.clips_per_s);
            threads_chosen = a.threads_per_clip;
        }
        if (with_snap) {
            std::printf("| %d | %.1f | %.1f | **%.2f** | %.1f, %.1f ", t, median(plain),
                        median(snap), median(snap_ratio), plain_decoded, snap_decoded);
        } else {
            std::printf("| %d | — | — | — | — ", t);
        }
        std::printf("| %.1f | %.1f | **%.2f** | %.1f | %s |\n", median(one), median(chosen),
                    median(thread_ratio), threads_chosen,
                    t == 1 ? (std::to_string(std::lround(1e3 / median(one))) + ", " +
                              std::to_string(std::lround(1e3 / median(chosen))))
                                 .c_str()
                           : "");
        std::fflush(stdout);
    }
}

/// Every lever together against the hand loops, in alternating runs: one clip per load with
/// `skip_nonref` and `snap_to_keyframe`, and `clips_per_pass` clips per video in one pass
/// snapped (`clips(4, 16, 2)` with `snap_to_keyframe`), each against the hand loop
/// loading the same frames (the snapped starts) and the hand loop at the drawn starts (what it
/// loads without snapping: the row without snap of the same run); and those rows without snap.
/// One decoder thread everywhere, as the hand loop.
void together_table(const config& c, const std::vector<sample>& samples,
                    const std::vector<fs::path>& videos, const std::vector<batch_sample>& batches) {
    const std::vector<batch_sample> snapped_batches = ferry_perf::snapped(batches);
    ferry_perf::check_snapped_clips(batches.front());
    struct row {
        const char* clips;
        bool snap;
        std::function<ferry_perf::ferry_result(int)> ferry;
        std::vector<sample> hand;  ///< the same frames, one clip per load
        std::size_t drawn;         ///< the row whose hand loop loads the drawn starts
        std::vector<double> f{}, h{}, r{}, per_clip{}, per_thread{}, drawn_clip{}, drawn_thread{};
        double f_decoded = 0, h_decoded = 0;
    };
    std::vector<row> rows;
    rows.push_back(
        {"1", false, [&](int t) { return ferry_rate(samples, t, {.threads = 1}); }, samples, 0});
    rows.push_back({"1", true,
                    [&](int t) { return ferry_rate(samples, t, {.snap = true, .threads = 1}); },
                    ferry_perf::snapped(samples), 0});
    rows.push_back({"4", true,
                    [&](int t) { return ferry_perf::snapped_batch_rate(snapped_batches, t); },
                    separate(snapped_batches), 3});
    rows.push_back(
        {"4", false, [&](int t) { return batch_rate(videos, t); }, separate(batches), 3});
    std::printf(
        "\nevery lever together (skip_nonref, snap_to_keyframe, %d clips per pass), 1 decoder "
        "thread, against the hand loop loading the same frames and at the drawn starts, one clip "
        "per load (alternating runs, medians of %d); %d s videos, GOP %d, %d B-frames; load "
        "average %s at the start\n\n",
        clips_per_pass, c.reps, c.seconds, c.encoding.gop, c.encoding.bframes,
        load_average().c_str());
    std::printf(
        "| concurrency | clips per load | snap | ferry clips/s | hand loop, decoder per clip | "
        "hand loop, decoder per thread | ferry ÷ hand, same frames (per clip, per thread) | "
        "ferry ÷ hand at the drawn starts (per clip, per thread) | frames decoded per clip: "
        "ferry, hand |\n|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for (int t : c.concurrency) {
        for (row& w : rows) {
            w.f.clear();
            w.h.clear();
            w.r.clear();
            w.per_clip.clear();
            w.per_thread.clear();
            w.drawn_clip.clear();
            w.drawn_thread.clear();
        }
        for (int rep = 0; rep < c.reps; ++rep) {
            for (row& w : rows) {
                const auto f = w.ferry(t);
                const auto h = hand_rate(w.hand, t, false);
                const auto r = hand_rate(w.hand, t, true);
                w.f.push_back(f.clips_per_s);
                w.h.push_back(h.clips_per_s);
                w.r.push_back(r.clips_per_s);
                w.per_clip.push_back(f.clips_per_s / h.clips_per_s);
                w.per_thread.push_back(f.clips_per_s / r.clips_per_s);
                w.f_decoded = f.decoded_per_clip;
                w.h_decoded = h.decoded_per_clip;
            }
            // Against the hand loop at the drawn starts of the same repetition.
            for (row& w : rows) {
                w.drawn_clip.push_back(w.f.back() / rows[w.drawn].h.back());
                w.drawn_thread.push_back(w.f.back() / rows[w.drawn].r.back());
            }
        }
        for (const row& w : rows) {
            std::printf(
                "| %d | %s | %s | %.1f | %.1f | %.1f | %.2f, %.2f | **%.2f**, **%.2f** | %.1f, "
                "%.1f |\n",
                t, w.clips, w.snap ? "on" : "off", median(w.f), median(w.h), median(w.r),
                median(w.per_clip), median(w.per_thread), median(w.drawn_clip),
                median(w.drawn_thread), w.f_decoded, w.h_decoded);
        }
        std::fflush(stdout);
    }
    std::printf("\nload average %s at the end\n", load_average().c_str());
}
}  // namespace

int main(int argc, char** argv) {
    config c;
    ferry_perf::options opt(argc, argv,
                            "usage: clip_loading [--clips N] [--seconds S] [--gop N] [--bframes N] "
                            "[--samples N] [--batches N] [--reps R] [--concurrency 1,2,4,8]\n"
                            "                    [--tables single,batch,levers,together,threads] "
                            "[--dir DIR]");
    while (opt.next()) {
        const std::string_view a = opt.name();
        if (a == "--clips") {
            c.clips = opt.integer();
        } else if (a == "--seconds") {
            c.seconds = opt.integer();
        } else if (a == "--gop") {
            c.encoding.gop = opt.integer();
        } else if (a == "--bframes") {
            c.encoding.bframes = opt.integer();
        } else if (a == "--samples") {
            c.samples = opt.integer();
        } else if (a == "--batches") {
            c.batches = opt.integer();
        } else if (a == "--tables") {
            const std::string_view v = opt.value();
            c.single = v.find("single") != std::string_view::npos;
            c.batch = v.find("batch") != std::string_view::npos;
            c.levers = v.find("levers") != std::string_view::npos;
            c.together = v.find("together") != std::string_view::npos;
            c.threads = v.find("threads") != std::string_view::npos;
        } else if (a == "--reps") {
            c.reps = opt.integer();
        } else if (a == "--concurrency") {
            c.concurrency = opt.list<int>();
        } else if (a == "--dir") {
            c.dir = opt.value();
        } else {
            opt.unknown();
        }
    }
    const auto paths = ferry_perf::video_set(c.dir, c.clips, c.seconds, c.encoding);
    // Starts over each clip's length, leaving room for the 16 frames at stride 2 (~1.1 s).
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> start(
        0.0, c.seconds - (frames_per_clip * stride + 2.0) / ferry_perf::video_fps);
    std::vector<sample> samples;
    for (int i = 0; i < c.samples; ++i) {
        samples.push_back({paths[static_cast<std::size_t>(i) % paths.size()], start(rng)});
    }
    if (c.single || c.levers || c.threads || c.together) {
        // Warm-up: FFmpeg's code and tables, the page cache.
        (void)ferry_rate(samples, 2, {});
        (void)ferry_rate(samples, 2, {.skip_nonref = false});
        // And the clips' keyframe lists, read once per process (kept in the keyframe cache).
        (void)ferry_rate(samples, 2, {.snap = true});
    }

    if (c.single) {
        std::printf(
            "clips of %d frames at stride %d from a random start, resized to %dx%d rgb24: %d "
            "samples of %d clips (%d s, 1280x720 H.264, GOP %d, %d B-frames), median of %d, %u "
            "CPUs\n\n",
            frames_per_clip, stride, side, side, c.samples, c.clips, c.seconds, c.encoding.gop,
            c.encoding.bframes, c.reps, std::thread::hardware_concurrency());
        std::printf(
            "| concurrency | ferry clips/s | ferry, every frame decoded | hand loop, opened per "
            "clip "
            "| hand loop, decoder reused per thread | ferry ÷ hand (per clip) | ferry ÷ hand "
            "(reused) "
            "| skip_nonref alone (÷ every frame) | frames decoded per clip: ferry, every frame, "
            "hand "
            "| avcodec_open2, ms (hand, per clip) |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int t : c.concurrency) {
            std::vector<double> f, e, h, r, open_ms, ratio;
            double f_decoded = 0, e_decoded = 0, h_decoded = 0;  // the same in every repetition
            for (int rep = 0; rep < c.reps; ++rep) {
                const auto skipping = ferry_rate(samples, t, {.threads = 1});
                f.push_back(skipping.clips_per_s);
                f_decoded = skipping.decoded_per_clip;
                const auto every = ferry_rate(samples, t, {.skip_nonref = false, .threads = 1});
                e.push_back(every.clips_per_s);
                e_decoded = every.decoded_per_clip;
                ratio.push_back(skipping.clips_per_s / every.clips_per_s);
                const auto per_clip = hand_rate(samples, t, false);
                h.push_back(per_clip.clips_per_s);
                open_ms.push_back(per_clip.open_ms);
                h_decoded = per_clip.decoded_per_clip;
                r.push_back(hand_rate(samples, t, true).clips_per_s);
            }
            std::printf(
                "| %d | %.1f | %.1f | %.1f | %.1f | **%.2f** | %.2f | %.2f | %.1f, %.1f, %.1f | "
                "%.2f "
                "|\n",
                t, median(f), median(e), median(h), median(r), median(f) / median(h),
                median(f) / median(r), median(ratio), f_decoded, e_decoded, h_decoded,
                median(open_ms));
            std::fflush(stdout);
        }
    }
    if (c.levers || c.threads) levers_table(samples, c, c.levers);
    if (!c.batch && !c.together) return 0;
    std::vector<fs::path> videos;
    for (int i = 0; i < c.batches; ++i)
        videos.push_back(paths[static_cast<std::size_t>(i) % paths.size()]);
    std::vector<batch_sample> batches;  // the warm-up's starts: every run's
    (void)batch_rate(videos, 2, &batches);
    ferry_perf::check_same_clips(batches.front());
    if (c.batch) batch_table(c, videos, batches);
    if (c.together) together_table(c, samples, videos, batches);
    return 0;
}
