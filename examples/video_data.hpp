// SPDX-License-Identifier: Apache-2.0
/// \file
/// Generated videos of Fashion-MNIST items: short H.264 videos, made once with the `ffmpeg` CLI,
/// stored as a video folder (DIR/train/<class>/*.mp4, DIR/test/<class>/*.mp4). Here the frame
/// geometry, the writer and mixed_media's videos (an item moving over a noisy background,
/// labelled by the item's class); the video trainer's, labelled by motion, in motion_data.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "image_folder.hpp"

namespace ferry_examples {

/// The generated videos' geometry: 64x64 gray, 24 frames at 25 fps (about 1 s).
inline constexpr int video_side = 64;
inline constexpr int video_frames = 24;
inline constexpr int video_fps = 25;
/// The background: a still Gaussian texture of this mean and deviation.
inline constexpr float noise_mean = 60.0F;
inline constexpr float noise_std = 30.0F;

/// One Fashion-MNIST image (28x28 gray) and its class.
struct fashion_image {
    std::vector<unsigned char> pixels;
    int label = 0;
};

/// The first `per_class` images of each class of one IDX split ("train" or "t10k").
inline std::vector<fashion_image> fashion_images(const std::string& prefix, int per_class) {
    const auto images = gunzip(fashion_source / (prefix + "-images-idx3-ubyte.gz"));
    const auto labels = gunzip(fashion_source / (prefix + "-labels-idx1-ubyte.gz"));
    if (images.size() < 16 || be32(images.data()) != 0x803 || be32(images.data() + 8) != 28 ||
        be32(images.data() + 12) != 28 || labels.size() < 8 || be32(labels.data()) != 0x801) {
        throw std::runtime_error("unexpected IDX headers in " + fashion_source.string());
    }
    const std::uint32_t n = std::min(be32(images.data() + 4), be32(labels.data() + 4));
    std::vector<fashion_image> out;
    std::vector<int> taken(10, 0);
    for (std::uint32_t i = 0; i < n && images.size() >= 16 + (i + 1) * 784ULL; ++i) {
        const int label = labels[8 + i];
        if (label >= 10 || taken[static_cast<std::size_t>(label)]++ >= per_class) continue;
        const auto* p = images.data() + 16 + std::size_t{i} * 784;
        out.push_back({std::vector<unsigned char>(p, p + 784), label});
    }
    return out;
}

/// A still random texture for a video's background (video_side x video_side values).
template <class Rng>
std::vector<float> still_texture(Rng& rng) {
    std::normal_distribution<float> texture(noise_mean, noise_std);
    std::vector<float> background(static_cast<std::size_t>(video_side) * video_side);
    for (auto& b : background) b = texture(rng);
    return background;
}

/// Appends one frame: the background with fresh noise of `flicker` in every pixel.
template <class Rng>
void push_noisy_frame(std::vector<unsigned char>& out, const std::vector<float>& background,
                      std::normal_distribution<float>& flicker, Rng& rng) {
    for (const float b : background) {
        out.push_back(static_cast<unsigned char>(std::clamp(b + flicker(rng), 0.0F, 255.0F)));
    }
}

/// Draws one video's frames: `item` moving in a straight line (a random direction, 0.6 to 1.4
/// pixels per frame, always wholly inside the frame) over a still random texture with a little
/// fresh noise every frame. One frame shows the item among clutter; its motion against the still
/// background is what sets it apart.
inline void draw_moving_item(const fashion_image& item, std::uint64_t seed,
                             std::vector<unsigned char>& out) {
    constexpr int side = video_side;
    constexpr int item_side = 28;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(0.0F, 1.0F);
    const float angle = 6.2831853F * u(rng);
    const float speed = 0.6F + 0.8F * u(rng);
    const float dx = speed * std::cos(angle);
    const float dy = speed * std::sin(angle);
    // A start from which the whole trip stays inside the frame.
    const auto start = [&](float d) {
        const float room = side - item_side;
        const float travel = d * (video_frames - 1);
        const float lo = std::max(0.0F, -travel);
        const float hi = std::min(room, room - travel);
        return lo + (hi - lo) * u(rng);
    };
    const float x0 = start(dx);
    const float y0 = start(dy);
    std::normal_distribution<float> flicker(0.0F, 8.0F);
    const std::vector<float> background = still_texture(rng);
    for (int t = 0; t < video_frames; ++t) {
        const std::size_t frame = out.size();
        push_noisy_frame(out, background, flicker, rng);
        const int sx = std::clamp(static_cast<int>(std::lround(x0 + dx * t)), 0, side - item_side);
        const int sy = std::clamp(static_cast<int>(std::lround(y0 + dy * t)), 0, side - item_side);
        for (int j = 0; j < item_side; ++j) {
            for (int i = 0; i < item_side; ++i) {
                const int v = item.pixels[static_cast<std::size_t>(j * item_side + i)];
                if (v == 0) continue;
                auto& p = out[frame + static_cast<std::size_t>((sy + j) * side + sx + i)];
                p = static_cast<unsigned char>(std::max(static_cast<int>(p), 20 + v * 85 / 100));
            }
        }
    }
}

/// Draws video `i` of a folder, frame after frame, into `out` (video_side² bytes a frame).
using video_drawer = std::function<void(std::size_t i, std::vector<unsigned char>& out)>;

/// How the videos are encoded: H.264 with no B-frames (I and P frames only), or with B-frames
/// (3 between references, always: `-b_strategy 0`; x264's B-pyramid, so some are references).
enum class video_codec : std::uint8_t { h264_no_bframes, h264_bframes };

/// Writes `count` videos made by `draw` as `dir/000.mp4`, `dir/001.mp4`, ...: H.264 in MP4. One
/// ffmpeg process for them all (starting one costs more than encoding a video): a keyframe
/// every video's length (closed GOPs) and the segment muxer cutting there, so that every file
/// starts at a keyframe with timestamp 0 (`-avoid_negative_ts disabled`: otherwise the first
/// file's timestamps would start 2 frames late, the B-frames' decoding delay). False if ffmpeg
/// failed or made another file count.
inline bool write_videos(const fs::path& dir, std::size_t count, video_codec codec,
                         const video_drawer& draw) {
    const std::string frames = std::to_string(video_frames);
    const std::string bframes = codec == video_codec::h264_bframes
                                    ? "-bf 3 -b_strategy 0 -avoid_negative_ts disabled"
                                    : "-bf 0";
    const std::string cmd =
        "ffmpeg -nostdin -loglevel error -y -f rawvideo -pix_fmt gray -s " +
        std::to_string(video_side) + "x" + std::to_string(video_side) + " -r " +
        std::to_string(video_fps) + " -i - -c:v libx264 -preset veryfast -crf 20 " + bframes +
        " -g " + frames + " -keyint_min " + frames +
        " -sc_threshold 0 -pix_fmt yuv420p -f segment -segment_format mp4 -segment_frames " +
        [&] {
            std::string cuts;
            for (std::size_t i = 1; i < count; ++i) {
                cuts += (i > 1 ? "," : "") + std::to_string(i * video_frames);
            }
            return cuts.empty() ? frames : cuts;
        }() +
        " -reset_timestamps 1 '" + (dir / "%03d.mp4").string() + "'";
    FILE* pipe = popen(cmd.c_str(), "w");
    if (pipe == nullptr) return false;
    std::vector<unsigned char> pixels;
    bool ok = true;
    for (std::size_t i = 0; i < count && ok; ++i) {
        pixels.clear();
        draw(i, pixels);
        ok = std::fwrite(pixels.data(), 1, pixels.size(), pipe) == pixels.size();
    }
    ok = pclose(pipe) == 0 && ok;
    std::size_t made = 0;
    for (const auto& f : fs::directory_iterator(dir)) made += f.is_regular_file() ? 1 : 0;
    return ok && made == count;
}

/// One folder of generated videos: where, how many, and how each is drawn.
struct video_job {
    fs::path dir;
    std::size_t count = 0;
    video_drawer draw;
};

/// Makes every job's folder (emptied first) with `threads` ffmpeg processes at a time, one per
/// job, then marks `root` complete. Exits with status 2 if ffmpeg cannot make them.
inline void make_videos(const fs::path& root, std::vector<video_job>& jobs, video_codec codec,
                        int threads) {
    std::size_t total = 0;
    for (const auto& j : jobs) total += j.count;
    std::cout << "generating " << total << " videos with ffmpeg in " << root.string() << " (once)"
              << std::endl;
    const auto t0 = steady::now();
    for (const auto& j : jobs) {
        fs::remove_all(j.dir);
        fs::create_directories(j.dir);
    }
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::vector<std::thread> workers;
    for (int w = 0; w < std::max(1, threads); ++w) {
        workers.emplace_back([&] {
            for (std::size_t i = next++; i < jobs.size() && !failed; i = next++) {
                if (!write_videos(jobs[i].dir, jobs[i].count, codec, jobs[i].draw)) {
                    std::cerr << "cannot run ffmpeg to make the videos of " << jobs[i].dir.string()
                              << " (apt-get install ffmpeg)\n";
                    failed = true;
                }
            }
        });
    }
    for (auto& w : workers) w.join();
    if (failed) std::exit(2);
    std::ofstream(root / ".complete") << "ok\n";
    std::printf("generated in %.1f s\n", std::chrono::duration<double>(steady::now() - t0).count());
    std::fflush(stdout);
}

/// Exits with status 2, saying how to install it, if Fashion-MNIST is not installed.
inline void require_fashion_mnist() {
    if (!fs::exists(fashion_source / "train-images-idx3-ubyte.gz")) {
        std::cerr << "Fashion-MNIST is not installed (" << fashion_source.string()
                  << " is missing). Install it with:\n    apt-get install dataset-fashion-mnist\n";
        std::exit(2);
    }
}

/// The generated video folder under `cache` (made on first use, with `threads` ffmpeg processes
/// at a time): `train_per_class` training videos per class from Fashion-MNIST's training images,
/// `test_per_class` test videos per class from its test images, each labelled by its item's
/// class (draw_moving_item; H.264 without B-frames). The mixed_media example's videos.
inline fs::path moving_fashion(const fs::path& cache, int train_per_class, int test_per_class,
                               int threads) {
    const fs::path root = cache / ("moving-fashion-" + std::to_string(train_per_class) + "-" +
                                   std::to_string(test_per_class));
    if (fs::exists(root / ".complete")) return root;
    require_fashion_mnist();
    const std::vector<fashion_image> images[2] = {fashion_images("train", train_per_class),
                                                  fashion_images("t10k", test_per_class)};
    std::vector<video_job> jobs;
    for (int split = 0; split < 2; ++split) {
        for (int c = 0; c < 10; ++c) {
            std::vector<const fashion_image*> items;
            for (const auto& img : images[split]) {
                if (img.label == c) items.push_back(&img);
            }
            const std::uint64_t seed = (split * 10ULL + static_cast<std::uint64_t>(c)) << 32;
            jobs.push_back({root / (split == 0 ? "train" : "test") / fashion_classes[c],
                            items.size(),
                            [items, seed](std::size_t i, std::vector<unsigned char>& out) {
                                draw_moving_item(*items[i], seed + i, out);
                            }});
        }
    }
    make_videos(root, jobs, video_codec::h264_no_bframes, threads);
    return root;
}

}  // namespace ferry_examples
