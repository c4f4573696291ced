// This program demonstrates the video example of ops/video/README.md: 8-frame clips at stride 4
// from a random point of each video in a folder, 112x112 RGB, batched by 4 into one u8 tensor per
// batch.
//
// The start of each clip is drawn from what the container's header says (probe_video), seeded by
// item, so a file's clip does not depend on threads. A file that cannot give a clip (not a video,
// damaged, too short) is skipped and listed with its reason; every file is accounted for.
//
//   video_clips DIR [--epochs N] [--seed S]

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>

#include <ferry/ferry.hpp>
#include <ferry/video.hpp>

int main(int argc, char** argv) {
    const char* usage = "usage: video_clips DIR [--epochs N] [--seed S]\n";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::cout << usage;
            return 0;
        }
    }
    if (argc < 2) {
        std::cerr << usage;
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    int epochs = 1;
    std::uint64_t seed = 1;
    for (int i = 2; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 == argc) {
            std::cerr << "video_clips: " << flag << " needs a value\n" << usage;
            return 2;
        }
        try {
            if (flag == "--epochs") epochs = std::stoi(argv[i + 1]);
            if (flag == "--seed") seed = std::stoull(argv[i + 1]);
        } catch (const std::logic_error&) {  // std::invalid_argument, std::out_of_range
            std::cerr << "video_clips: " << flag << " expects a number, not '" << argv[i + 1]
                      << "'\n"
                      << usage;
            return 2;
        }
    }
    const auto files = ferry::sources::files(dir);
    std::cout << files.size() << " files in " << dir.string() << '\n';

    auto pipe =
        ferry::from(files, ferry::sampling{.shuffle = true, .seed = seed})
            // [readme-video]
            // 8 frames at stride 4 from a random point of each clip, 112x112 RGB, as a u8
            // [8, 112, 112, 3] tensor. The header says how long the clip is (probe_video reads only
            // the file's head); a file that cannot give 8 frames is skipped and listed in
            // failures().
            .map(
                [](const std::filesystem::path& p, const ferry::item_info& info) {
                    const ferry::video_info video = ferry::ops::probe_video(p);
                    const double rate = video.frame_rate > 0 ? video.frame_rate : 25.0;
                    const double last_start = std::max(0.0, video.duration - (8 * 4 + 1) / rate);
                    auto rng = ferry::item_rng(info);
                    const double start =
                        video.start + std::uniform_real_distribution<>(0.0, last_start)(rng);
                    return ferry::ops::load_video(
                               p, {.demux = {.start = start},
                                   .decode = {.select = ferry::frame_selection::clip(8, 4),
                                              .resize = {112, 112}}})
                        .to_tensor();
                },
                {.concurrency = 4, .name = "decode", .on_error = ferry::skip})
            // [/readme-video]
            .batch(4)
            .map(ferry::ops::collate)  // -> u8 [4, 8, 112, 112, 3]
            .build({.threads = 2});

    for (int epoch = 0; epoch < epochs; ++epoch) {
        int batches = 0;
        std::int64_t clips = 0;
        for (const ferry::tensor& batch : pipe) {
            ++batches;
            clips += batch.shape().at(0);
            if (batches == 1) {
                std::cout << "first batch: [";
                for (std::size_t d = 0; d < batch.shape().size(); ++d) {
                    std::cout << (d > 0 ? ", " : "") << batch.shape()[d];
                }
                std::cout << "] " << ferry::to_string(batch.dtype()) << '\n';
            }
        }
        std::cout << "epoch " << epoch + 1 << ": " << clips << " clips in " << batches
                  << " batches\n";
    }
    const auto stats = pipe.stats();
    std::cout << stats;
    std::cout << "failures: " << pipe.failures().size() << '\n';
    for (const ferry::failure& f : pipe.failures()) {
        std::cout << "  " << f.input << ": " << f.message << '\n';
    }
    return stats.delivered > 0 ? 0 : 1;
}
