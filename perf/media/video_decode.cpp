// SPDX-License-Identifier: Apache-2.0
/// \file
/// video_decode: frames/s decoding 720p H.264 and resizing every frame to 224x224 RGB, through a
/// ferry pipeline against the `ffmpeg` CLI doing the same in the same run; clip sampling against
/// decoding every frame; and what demux concurrency buys.
///
/// The clip set is generated once with the ffmpeg CLI (`testsrc2`, 1280x720, 30 fps, libx264
/// veryfast, a keyframe every 60 frames, B-frames on) and read from the page cache.
///
///  * `ferry`         `from(paths).map(load_video {resize 224x224, rgb, bilinear}, {.concurrency
///                    = t}).build({.threads = t})`, one decoder thread per clip: parallelism
///                    from the pipeline, as ferry recommends;
///  * `ffmpeg -threads t`   the CLI on each clip in turn: `ffmpeg -threads t -i clip -vf
///                    scale=224:224:flags=bilinear,format=rgb24 -f null -`;
///  * `ffmpeg x t`    t CLI processes at once, `-threads 1` each (the same split as ferry's).
///
/// Then, sequentially on one thread, per clip: every frame (`frame_selection::all()`), a clip
/// of 8 frames at stride 4 from a random timestamp (`clip(8, 4)` + `.start`), and 8 frames
/// spread over the whole clip (`uniform(8)`); and demux only (no decode) with 1 and 2 threads,
/// plus "probe" (`max_frames = 1`: open + stream info + the first packets), where FFmpeg's
/// process-wide locks would show.
///
/// Usage: video_decode [--clips N] [--seconds S] [--reps R] [--threads 1,2] [--dir DIR]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/args.hpp"
#include "common/video_set.hpp"
#include "ferry/ferry.hpp"
#include "ferry/video.hpp"

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

struct config {
    int clips = 4;
    int seconds = 10;
    int reps = 3;
    std::vector<int> threads{1, 2};
    fs::path dir = fs::temp_directory_path() / "ferry-video-decode";
};

constexpr int fps = ferry_perf::video_fps;
constexpr int side = 224;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void run(const std::string& cmd) {
    if (std::system(cmd.c_str()) != 0) {
        std::cerr << "video_decode: command failed: " << cmd << '\n';
        std::exit(1);
    }
}

std::vector<fs::path> make_clips(const config& c) {
    const auto paths = ferry_perf::video_set(c.dir, c.clips, c.seconds);
    for (const auto& p : paths) (void)ferry::ops::demux_video(p);  // and FFmpeg's code paths
    return paths;
}

/// Frames/s of the ferry pipeline over all clips.
double ferry_rate(const std::vector<fs::path>& paths, int threads, std::int64_t& frames) {
    const auto t0 = clock_type::now();
    auto pipe =
        ferry::from(paths)
            .map(
                [](const fs::path& p) {
                    return ferry::ops::load_video(p, {.decode = {.resize = {side, side}}}).frames();
                },
                {.concurrency = threads, .name = "load_video"})
            .build({.threads = threads});
    frames = 0;
    for (int n : pipe) frames += n;
    return static_cast<double>(frames) / seconds_since(t0);
}

std::string cli(const fs::path& p, int threads) {
    return "ffmpeg -hide_banner -loglevel error -nostdin -threads " + std::to_string(threads) +
           " -i " + p.string() + " -an -vf scale=" + std::to_string(side) + ":" +
           std::to_string(side) + ":flags=bilinear,format=rgb24 -f null -";
}

/// Frames/s of the CLI: `processes` at a time, `threads` each.
double cli_rate(const std::vector<fs::path>& paths, int processes, int threads,
                std::int64_t frames) {
    const auto t0 = clock_type::now();
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < processes; ++w) {
        workers.emplace_back([&] {
            for (std::size_t i; (i = next++) < paths.size();) run(cli(paths[i], threads));
        });
    }
    for (auto& w : workers) w.join();
    return static_cast<double>(frames) / seconds_since(t0);
}

/// Calls per second of `f(path)` over the clips, from `threads` threads at once.
template <class F>
double calls_per_second(const std::vector<fs::path>& paths, int threads, int rounds, F f) {
    const auto t0 = clock_type::now();
    std::atomic<int> next{0};
    const int total = rounds * static_cast<int>(paths.size());
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w) {
        workers.emplace_back([&] {
            for (int i; (i = next++) < total;) f(paths[static_cast<std::size_t>(i) % paths.size()]);
        });
    }
    for (auto& w : workers) w.join();
    return total / seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
    config c;
    ferry_perf::options opt(argc, argv,
                            "usage: video_decode [--clips N] [--seconds S] [--reps R] "
                            "[--threads 1,2] [--dir DIR]");
    while (opt.next()) {
        const std::string_view a = opt.name();
        if (a == "--clips") {
            c.clips = opt.integer();
        } else if (a == "--seconds") {
            c.seconds = opt.integer();
        } else if (a == "--reps") {
            c.reps = opt.integer();
        } else if (a == "--threads") {
            c.threads = opt.list<int>();
        } else if (a == "--dir") {
            c.dir = opt.value();
        } else {
            opt.unknown();
        }
    }
    const auto paths = make_clips(c);

    std::printf(
        "full decode + resize to %dx%d rgb24: %d clips x %d s of 1280x720 H.264 at %d "
        "fps, median of %d\n\n",
        side, side, c.clips, c.seconds, fps, c.reps);
    std::printf("| threads | variant | median frames/s | ferry / this |\n|---:|---|---:|---:|\n");
    for (int t : c.threads) {
        std::vector<double> f, cl, cp;
        std::int64_t frames = 0;
        for (int r = 0; r < c.reps; ++r) {
            f.push_back(ferry_rate(paths, t, frames));
            cl.push_back(cli_rate(paths, 1, t, frames));
            if (t > 1) cp.push_back(cli_rate(paths, t, 1, frames));
        }
        const double fm = median(f);
        std::printf("| %d | ferry (concurrency %d, 1 decoder thread each) | %.0f | — |\n", t, t,
                    fm);
        std::printf("| %d | ffmpeg -threads %d, clips in turn | %.0f | **%.2f** |\n", t, t,
                    median(cl), fm / median(cl));
        if (t > 1) {
            std::printf("| %d | ffmpeg -threads 1 x %d processes | %.0f | %.2f |\n", t, t,
                        median(cp), fm / median(cp));
        }
        std::fflush(stdout);
    }

    // Sampling against decoding everything, one thread, per clip.
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> start(0.0, c.seconds - 8 * 4.0 / fps - 0.5);
    const auto per_clip = [&](const ferry::video_options& o, bool random_start) {
        std::vector<double> v;
        for (int r = 0; r < c.reps; ++r) {
            v.push_back(calls_per_second(paths, 1, 1, [&](const fs::path& p) {
                ferry::video_options opt = o;
                if (random_start) opt.demux.start = start(rng);
                (void)ferry::ops::load_video(p, opt);
            }));
        }
        return 1.0 / median(v);
    };
    const double all = per_clip({.decode = {.resize = {side, side}}}, false);
    const double sampled = per_clip(
        {.decode = {.select = ferry::frame_selection::clip(8, 4), .resize = {side, side}}}, true);
    const double uniform = per_clip(
        {.decode = {.select = ferry::frame_selection::uniform(8), .resize = {side, side}}}, false);
    std::printf("\nper clip, 1 thread, resize to %dx%d (median of %d):\n\n", side, side, c.reps);
    std::printf("| selection | ms per clip | speed-up over all frames |\n|---|---:|---:|\n");
    std::printf("| all %d frames | %.1f | 1.0 |\n", c.seconds * fps, all * 1e3);
    std::printf("| clip(8, 4) at a random start | %.1f | **%.1f** |\n", sampled * 1e3,
                all / sampled);
    std::printf("| uniform(8) over the clip | %.1f | %.1f |\n", uniform * 1e3, all / uniform);

    // Demux concurrency: packets only, and probe only.
    std::printf("\ndemux concurrency (threads calling demux_video at once; median of %d):\n\n",
                c.reps);
    std::printf(
        "| threads | demux (all packets) clips/s | probe (open + stream info) /s | "
        "control: decode 30 frames of demuxed packets /s |\n|---:|---:|---:|---:|\n");
    std::vector<ferry::packets> demuxed;
    for (const auto& p : paths) demuxed.push_back(ferry::ops::demux_video(p, {.max_frames = 30}));
    double base[3] = {0, 0, 0};
    for (int t : c.threads) {
        std::vector<double> d, p, k;
        for (int r = 0; r < c.reps; ++r) {
            d.push_back(calls_per_second(
                paths, t, 8, [](const fs::path& x) { (void)ferry::ops::demux_video(x); }));
            p.push_back(calls_per_second(paths, t, 25, [](const fs::path& x) {
                (void)ferry::ops::demux_video(x, {.max_frames = 1});
            }));
            // The same harness on pure decoding (no file, no demuxer): how much parallelism the
            // machine offers right now, to read the demux columns against.
            k.push_back(calls_per_second(paths, t, 4, [&](const fs::path& x) {
                const auto i = static_cast<std::size_t>(&x - paths.data());
                (void)ferry::ops::decode_video(
                    demuxed[i],
                    {.select = ferry::frame_selection::clip(30), .resize = {side, side}});
            }));
        }
        const double m[3] = {median(d), median(p), median(k)};
        if (base[0] == 0) std::copy(m, m + 3, base);
        std::printf("| %d | %.0f (x%.2f) | %.0f (x%.2f) | %.1f (x%.2f) |\n", t, m[0],
                    m[0] / base[0], m[1], m[1] / base[1], m[2], m[2] / base[2]);
    }
    return 0;
}
