// SPDX-License-Identifier: Apache-2.0
/// \file
/// The video trainer's data: short H.264 videos (with B-frames), made once with the `ffmpeg` CLI,
/// of a random Fashion-MNIST item moving down, left, right or up over a noisy background, stored
/// as a video folder (DIR/train/<direction>/*.mp4, DIR/test/<direction>/*.mp4) and labelled by
/// the direction: only motion tells the classes apart.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "video_data.hpp"

namespace ferry_examples {

/// The motion classes, as folder names, and each one's direction in pixels (y grows downwards).
inline const char* const motion_classes[4] = {"down", "left", "right", "up"};
inline constexpr float motion_dx[4] = {0.0F, -1.0F, 1.0F, 0.0F};
inline constexpr float motion_dy[4] = {1.0F, 0.0F, 0.0F, -1.0F};

/// Draws one video's frames: an item drawn at random from `pool` (whatever the direction)
/// moving in motion class `direction`'s direction, give or take 20 degrees, at 0.8 to 1.6 pixels
/// per frame, over a still random texture with fresh noise in every frame. The frame wraps
/// around (a torus: what leaves on one side comes back on the other) and the start is uniform
/// over it, so in every frame of every class the item is at a uniformly random place: one frame
/// says nothing of the class, only the item's motion from frame to frame does.
inline void draw_item_in_motion(const std::vector<fashion_image>& pool, int direction,
                                std::uint64_t seed, std::vector<unsigned char>& out) {
    constexpr int side = video_side;
    constexpr int item_side = 28;
    std::mt19937_64 rng(seed);
    const fashion_image& item = pool[rng() % pool.size()];
    std::uniform_real_distribution<float> u(0.0F, 1.0F);
    const float turn = (u(rng) - 0.5F) * 2.0F * 0.349066F;  // +-20 degrees
    const float speed = 0.8F + 0.8F * u(rng);
    const auto d = static_cast<std::size_t>(direction);
    const float dx = speed * (motion_dx[d] * std::cos(turn) - motion_dy[d] * std::sin(turn));
    const float dy = speed * (motion_dx[d] * std::sin(turn) + motion_dy[d] * std::cos(turn));
    const float x0 = side * u(rng);
    const float y0 = side * u(rng);
    // A place on the torus: [0, side), whatever the sign of the travel.
    const auto wrapped = [](float v) {
        const float w = std::fmod(v, static_cast<float>(side));
        return std::clamp(static_cast<int>(std::floor(w < 0 ? w + side : w)), 0, side - 1);
    };
    std::normal_distribution<float> flicker(0.0F, 12.0F);
    const std::vector<float> background = still_texture(rng);
    for (int t = 0; t < video_frames; ++t) {
        const std::size_t frame = out.size();
        push_noisy_frame(out, background, flicker, rng);
        const int sx = wrapped(x0 + dx * static_cast<float>(t));
        const int sy = wrapped(y0 + dy * static_cast<float>(t));
        for (int j = 0; j < item_side; ++j) {
            for (int i = 0; i < item_side; ++i) {
                const int v = item.pixels[static_cast<std::size_t>(j * item_side + i)];
                if (v == 0) continue;
                const int y = (sy + j) % side;
                const int x = (sx + i) % side;
                auto& p = out[frame + static_cast<std::size_t>(y * side + x)];
                p = static_cast<unsigned char>(std::max(static_cast<int>(p), 20 + v * 85 / 100));
            }
        }
    }
}

/// The generated video folder under `cache` (made on first use, with `threads` ffmpeg processes
/// at a time): `train_per_class` training videos per motion class of items drawn from
/// Fashion-MNIST's first 6000 training images (600 per item class), `test_per_class` test videos
/// per motion class of items from its first 1000 test images; H.264 with B-frames.
inline fs::path moving_directions(const fs::path& cache, int train_per_class, int test_per_class,
                                  int threads) {
    const fs::path root = cache / ("fashion-directions-" + std::to_string(train_per_class) + "-" +
                                   std::to_string(test_per_class));
    if (fs::exists(root / ".complete")) return root;
    require_fashion_mnist();
    const std::vector<fashion_image> pools[2] = {fashion_images("train", 600),
                                                 fashion_images("t10k", 100)};
    std::vector<video_job> jobs;
    for (int split = 0; split < 2; ++split) {
        for (int c = 0; c < 4; ++c) {
            const std::vector<fashion_image>* pool = &pools[split];
            const std::uint64_t seed = (split * 4ULL + static_cast<std::uint64_t>(c)) << 32;
            jobs.push_back({root / (split == 0 ? "train" : "test") / motion_classes[c],
                            static_cast<std::size_t>(split == 0 ? train_per_class : test_per_class),
                            [pool, c, seed](std::size_t i, std::vector<unsigned char>& out) {
                                draw_item_in_motion(*pool, c, seed + i, out);
                            }});
        }
    }
    make_videos(root, jobs, video_codec::h264_bframes, threads);
    return root;
}

}  // namespace ferry_examples
