// SPDX-License-Identifier: Apache-2.0
/// \file
/// clip_cpu: the CPU time of one `load_video` clip, for comparing two builds of a change to the
/// decoder (`compare_clip_cpu.py` runs them in turn). On one thread, no pipeline: `--clips`
/// samples of `clip(16, 2)` at 112x112 RGB from random starts (seeded, so every build loads the
/// same ones) of clip_loading's videos, for each encoding (`--gop 60 --bframes 2` and x264's
/// defaults, 250 and 3) and decoder thread count (`--threads 1,2`). CPU time is the process's
/// (user + system, every thread), so it does not depend on what else the machine runs as much
/// as wall time does. Each line also gives a checksum of every clip's bytes: two builds that
/// decode the same frames print the same one.
///
/// Usage: clip_cpu [--clips N] [--threads 1,2] [--dir DIR]
/// Prints one JSON object per line: {"encoding", "threads", "cpu_ms", "wall_ms", "checksum"}
/// (milliseconds per clip).

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "common/args.hpp"
#include "common/video_set.hpp"
#include "ferry/video.hpp"

namespace {

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
    int clips = 48;
    std::vector<int> threads{1, 2};
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "ferry-video-decode";
    ferry_perf::options opt(argc, argv, "usage: clip_cpu [--clips N] [--threads 1,2] [--dir DIR]");
    while (opt.next()) {
        const std::string_view a = opt.name();
        if (a == "--clips") {
            clips = opt.integer();
        } else if (a == "--threads") {
            threads = opt.list<int>();
        } else if (a == "--dir") {
            dir = opt.value();
        } else {
            opt.unknown();
        }
    }
    constexpr int seconds = 10;
    const ferry_perf::video_encoding encodings[] = {{60, 2}, {250, 3}};
    for (const auto& enc : encodings) {
        const auto paths = ferry_perf::video_set(dir, 4, seconds, enc);
        for (const int t : threads) {
            std::mt19937 rng(3);
            std::uniform_real_distribution<double> start(0.0, seconds - 1.5);
            std::uint64_t checksum = 1469598103934665603ULL;
            const double cpu0 = cpu_seconds();
            const auto wall0 = std::chrono::steady_clock::now();
            for (int i = 0; i < clips; ++i) {
                ferry::video_options o;
                o.demux.start = start(rng);
                o.decode.select = ferry::frame_selection::clip(16, 2);
                o.decode.resize = {112, 112};
                o.decode.threads = t;
                const auto clip =
                    ferry::ops::load_video(paths[static_cast<std::size_t>(i) % paths.size()], o);
                for (const std::uint8_t b : clip.data())
                    checksum = (checksum ^ b) * 1099511628211ULL;
            }
            const double wall =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
            std::printf(
                "{\"encoding\": \"gop %d, %d B-frames\", \"threads\": %d, \"cpu_ms\": %.2f, "
                "\"wall_ms\": %.2f, \"checksum\": \"%016llx\"}\n",
                enc.gop, enc.bframes, t, 1e3 * (cpu_seconds() - cpu0) / clips, 1e3 * wall / clips,
                static_cast<unsigned long long>(checksum));
            std::fflush(stdout);
        }
    }
    return 0;
}
