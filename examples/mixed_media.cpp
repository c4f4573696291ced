// This program demonstrates many sources in one pipeline: still images and videos of
// Fashion-MNIST items, mixed 3:1 by ferry::mix, routed by kind to an image decoder and a video
// decoder (each with its own concurrency), and batched by cost (frames) with images and videos in
// buckets of their own.
//
// Every epoch is 400 items drawn from (seed, epoch, position): the same items on every run and at
// any thread count. Each batch must hold one kind only (the buckets), every item is accounted
// for, and the realised share of videos must be near a quarter.
//
//   mixed_media --images DIR --videos DIR [--epochs N] [--seed S] [--threads T]
//
// --images is the image trainers' cache (Fashion-MNIST unpacked as PNG files), --videos a cache of
// moving Fashion-MNIST items labelled by class, as MP4 (video_data.hpp's `moving_fashion`): each
// is made there on first use.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <ferry/ferry.hpp>
#include <ferry/image.hpp>
#include <ferry/video.hpp>

#include "checks.hpp"
#include "video_data.hpp"

namespace {

/// One source item: a file, its class, and whether it is a video.
struct media {
    std::filesystem::path path;
    int label = 0;
    bool video = false;
};

/// One decoded item: u8 [28, 28, 1] for an image, [8, 28, 28, 1] for a video's clip.
struct sample {
    ferry::tensor pixels;
    int label = 0;
    bool video = false;
    /// Frames decoded: what a sample costs in a batch.
    [[nodiscard]] double frames() const {
        return video ? static_cast<double>(pixels.shape().at(0)) : 1.0;
    }
};

std::vector<media> listed(const std::filesystem::path& dir, bool video) {
    std::vector<media> out;
    const auto files = ferry::sources::image_folder(dir, {.recursive = false});
    for (const auto& f : files) out.push_back({f.path, f.label, video});
    return out;
}

}  // namespace

using ferry_examples::check;
using ferry_examples::checks_verdict;

int main(int argc, char** argv) {
    std::filesystem::path images_cache, videos_cache;
    int epochs = 2;
    std::uint64_t seed = 1;
    int threads = 2;
    const char* usage =
        "usage: mixed_media --images DIR --videos DIR [--epochs N] [--seed S] [--threads T]\n";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::cout << usage;
            return 0;
        }
    }
    for (int i = 1; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 == argc) {
            std::cerr << "mixed_media: " << flag << " needs a value\n" << usage;
            return 2;
        }
        try {
            if (flag == "--images") images_cache = argv[i + 1];
            if (flag == "--videos") videos_cache = argv[i + 1];
            if (flag == "--epochs") epochs = std::stoi(argv[i + 1]);
            if (flag == "--seed") seed = std::stoull(argv[i + 1]);
            if (flag == "--threads") threads = std::stoi(argv[i + 1]);
        } catch (const std::logic_error&) {  // std::invalid_argument, std::out_of_range
            std::cerr << "mixed_media: " << flag << " expects a number, not '" << argv[i + 1]
                      << "'\n"
                      << usage;
            return 2;
        }
    }
    if (images_cache.empty() || videos_cache.empty()) {
        std::cerr << usage;
        return 2;
    }
    const auto images = listed(ferry_examples::fashion_mnist(images_cache) / "test", false);
    const auto videos =
        listed(ferry_examples::moving_fashion(videos_cache, 32, 10, threads) / "test", true);
    std::cout << "sources: " << images.size() << " images, " << videos.size() << " videos\n";

    // Images and videos 3:1, each shuffled, 400 items an epoch (the mix never runs dry: both
    // sources start a new pass when they are used up).
    auto mixed =
        ferry::mix<media>({{images, 3.0, {.shuffle = true, .seed = seed}},
                           {videos, 1.0, {.shuffle = true, .seed = seed + 1}}},
                          {.seed = seed, .stop = ferry::mix_stop::never, .epoch_length = 400});
    auto pipe =
        ferry::from(mixed)
            .route(
                {.name = "kind"}, [](const media& m) { return m.video ? 1 : 0; },
                [](auto b) {
                    return b.map(
                        [](const media& m) {
                            auto img = ferry::ops::decode_image(
                                ferry::ops::read_file(m.path),
                                {.format = ferry::pixel_format::gray, .resize = {28, 28}});
                            return sample{ferry::ops::to_tensor(std::move(img)), m.label, false};
                        },
                        {.concurrency = 2, .name = "image"});
                },
                [](auto b) {
                    return b.map(
                        [](const media& m) {
                            auto clip = ferry::ops::load_video(
                                m.path, {.decode = {.select = ferry::frame_selection::clip(8, 2),
                                                    .format = ferry::frame_format::gray,
                                                    .resize = {28, 28}}});
                            return sample{std::move(clip).to_tensor(), m.label, true};
                        },
                        {.concurrency = 2, .name = "video"});
                })
            // Cost = frames: 32 images or 4 videos a batch, never mixed (bucket bound 2).
            .batch_by([](const sample& s) { return s.frames(); },
                      {.max_cost = 32, .buckets = {2}, .buffer = 64, .name = "by frames"})
            .build({.threads = threads});

    std::uint64_t total_videos = 0;
    std::uint64_t total = 0;
    for (int epoch = 0; epoch < epochs; ++epoch) {
        std::uint64_t n_images = 0, n_videos = 0, image_batches = 0, video_batches = 0;
        for (const std::vector<sample>& batch : pipe) {
            const bool video = batch.front().video;
            for (const sample& s : batch) {
                check(s.video == video, "one kind per batch (the buckets)");
                check(s.frames() == (video ? 8.0 : 1.0), "8 frames a clip, 1 an image");
                check(s.pixels.shape().at(s.pixels.shape().size() - 2) == 28, "28 pixels wide");
                check(s.label >= 0 && s.label < 10, "a Fashion-MNIST class");
            }
            (video ? n_videos : n_images) += batch.size();
            (video ? video_batches : image_batches) += 1;
        }
        std::cout << "epoch " << epoch + 1 << ": " << n_images << " images in " << image_batches
                  << " batches, " << n_videos << " videos in " << video_batches << " batches\n";
        check(n_images + n_videos == 400, "400 items an epoch");
        total_videos += n_videos;
        total += n_images + n_videos;
    }
    // A quarter videos, within 4 standard deviations of the binomial count.
    const double share = static_cast<double>(total_videos) / static_cast<double>(total);
    const double sd = std::sqrt(0.25 * 0.75 / static_cast<double>(total));
    std::cout << "videos: " << total_videos << " of " << total << " (share " << share
              << ", weight 0.25)\n";
    check(std::abs(share - 0.25) < 4 * sd, "a quarter videos, within 4 standard deviations");
    const auto stats = pipe.stats();
    std::cout << stats;
    check(stats.failed == 0, "no failures");
    check(stats.produced == stats.delivered + stats.filtered + stats.failed,
          "every item accounted for");
    std::cout << "failures: " << pipe.failures().size() << '\n';
    return checks_verdict();
}
