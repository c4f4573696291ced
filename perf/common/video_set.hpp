// SPDX-License-Identifier: Apache-2.0
/// \file
/// The video benchmarks' clips: generated once with the ffmpeg CLI (`testsrc2`, 1280x720, 30 fps,
/// libx264 veryfast, by default a keyframe every 60 frames and 2 B-frames, yuv420p), each from a
/// different offset of the pattern so that no two are byte-identical, and read once to warm the
/// page cache.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace ferry_perf {

inline constexpr int video_fps = 30;

/// How x264 encodes the clips: the GOP (`-g`) and the B-frames between references (`-bf`).
/// x264's own defaults, what a plain `ffmpeg -i in -c:v libx264 out.mp4` writes, are 250 and 3.
struct video_encoding {
    int gop = 60;
    int bframes = 2;
};

/// `count` clips of `seconds` s in `dir` (clip<i>-<seconds>s.mp4 with the default encoding,
/// clip<i>-<seconds>s-g<gop>-bf<bframes>.mp4 otherwise), made where missing.
inline std::vector<std::filesystem::path> video_set(const std::filesystem::path& dir, int count,
                                                    int seconds, video_encoding enc = {}) {
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    std::vector<fs::path> paths;
    for (int i = 0; i < count; ++i) {
        const bool plain =
            enc.gop == video_encoding{}.gop && enc.bframes == video_encoding{}.bframes;
        const auto p =
            dir / ("clip" + std::to_string(i) + "-" + std::to_string(seconds) + "s" +
                   (plain ? std::string()
                          : "-g" + std::to_string(enc.gop) + "-bf" + std::to_string(enc.bframes)) +
                   ".mp4");
        if (!fs::exists(p)) {
            std::cerr << "generating " << p << '\n';
            const std::string cmd =
                "ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i "
                "testsrc2=size=1280x720:rate=" +
                std::to_string(video_fps) + ":duration=" + std::to_string(seconds + i) + " -ss " +
                std::to_string(i) + " -c:v libx264 -preset veryfast -g " + std::to_string(enc.gop) +
                " -bf " + std::to_string(enc.bframes) + " " + "-pix_fmt yuv420p " + p.string();
            if (std::system(cmd.c_str()) != 0) {
                std::cerr << "command failed: " << cmd << '\n';
                std::exit(1);
            }
        }
        paths.push_back(p);
    }
    for (const auto& p : paths) {  // warm the page cache
        std::ifstream in(p, std::ios::binary);
        std::vector<char> buf(1 << 16);
        while (in.read(buf.data(), static_cast<std::streamsize>(buf.size()))) {
        }
    }
    return paths;
}

}  // namespace ferry_perf
