// This program demonstrates ferry feeding a libtorch video model: files -> read (I/O threads)
// -> demux + decode a clip of N frames at stride S from a random start, resized and gray (FFmpeg,
// inside ferry::video) -> batch -> collate + to_torch, into a small 3D convolutional network.
//
// Data: generated on first run with the ffmpeg CLI's H.264 encoder (libx264, with B-frames) into
// a cache folder (examples/motion_data.hpp): 64x64 videos of a random Fashion-MNIST item moving
// down, left, right or up over a noisy background, labelled by the direction (4 classes). Every
// frame, alone, looks the same in every class (the item anywhere, the frame wrapping around): only
// the motion between frames tells the classes apart, so one frame per clip (--frames 1) stays at
// chance. The network sees only the decoded pixels: no hand-made features.
//
//   video_trainer [--train-per-class 80] [--epochs 8] [--frames 8] [--stride 2] [--threads N]
//   video_trainer --help

#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cache_dir.hpp"
#include "ferry/ferry.hpp"
#include "ferry/torch.hpp"
#include "ferry/video.hpp"
#include "motion_data.hpp"

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;
using ferry_examples::item;

namespace {

struct options {
    int frames = 8;
    int stride = 2;
    int size = 32;
    int batch_size = 16;
    int loader_threads = 1;
    std::uint64_t seed = 1;
};

/// One encoded video and its class, as read from storage.
struct encoded {
    ferry::bytes data;
    int label = 0;
};

/// One decoded clip: u8 [frames, size, size, 1], and its class.
struct clip_sample {
    ferry::tensor clip;
    int label = 0;
};

/// What the model takes: u8 clips [B, T, H, W, 1] sharing the batch's memory, and int64 labels.
struct torch_batch {
    torch::Tensor clips;
    torch::Tensor labels;
};

/// Decodes `frames` frames `stride` apart from frame `first` (its timestamp: the MP4 holds
/// 25 fps with exact timestamps), and checks that these are the frames that came back.
clip_sample decode_clip(const encoded& e, int first, const options& o) {
    ferry::video_clip clip = ferry::ops::load_video(
        e.data, {.demux = {.start = static_cast<double>(first) / ferry_examples::video_fps},
                 .decode = {.select = ferry::frame_selection::clip(o.frames, o.stride),
                            .format = ferry::frame_format::gray,
                            .resize = {o.size, o.size}}});
    for (int i = 0; i < clip.frames(); ++i) {
        const double want = static_cast<double>(first + i * o.stride) / ferry_examples::video_fps;
        if (std::abs(clip.timestamps()[static_cast<std::size_t>(i)] - want) > 1e-3) {
            throw ferry::decode_error(
                "CHECK FAILED: clip frame " + std::to_string(i) + " is at " +
                std::to_string(clip.timestamps()[static_cast<std::size_t>(i)]) + " s, not " +
                std::to_string(want) + " s");
        }
    }
    return {std::move(clip).to_tensor(), e.label};
}

/// The batch's clips stacked by ferry (one contiguous u8 block), then handed to torch without a
/// copy; the labels as a torch tensor.
torch_batch collate_to_torch(std::vector<clip_sample> batch) {
    std::vector<ferry::tensor> clips;
    std::vector<std::int64_t> labels;
    for (clip_sample& s : batch) {
        clips.push_back(std::move(s.clip));
        labels.push_back(s.label);
    }
    return {ferry::to_torch(ferry::ops::collate(std::move(clips))), torch::tensor(labels)};
}

encoded read_item(const item& it) {
    return {ferry::ops::read_file(it.path), it.label};
}

/// The frames' span in the video, and so the latest frame a clip can start at.
int latest_start(const options& o) {
    return ferry_examples::video_frames - ((o.frames - 1) * o.stride + 1);
}

/// Training: a new shuffle every epoch, each clip from a random start (from `item_rng`: the same
/// for the same seed, epoch and video whatever the thread count).
auto train_pipeline(const std::vector<item>& items, const options& o) {
    return ferry::from(items, ferry::sampling{.shuffle = true, .seed = o.seed})
        .map(read_item, {.concurrency = 2, .name = "read", .executor = ferry::io})
        .map(
            [&o](const encoded& e, const ferry::item_info& info) {
                auto rng = ferry::item_rng(info);
                const int first =
                    static_cast<int>(rng() % static_cast<std::uint64_t>(latest_start(o) + 1));
                return decode_clip(e, first, o);
            },
            {.concurrency = o.loader_threads, .name = "decode", .on_error = ferry::skip})
        .batch(static_cast<std::size_t>(o.batch_size))
        .map(collate_to_torch, {.name = "collate+to_torch"})
        .build({.threads = o.loader_threads});
}

/// Test: file order, the clip from the middle of each video.
auto test_pipeline(const std::vector<item>& items, const options& o) {
    return ferry::from(items)
        .map(read_item, {.concurrency = 2, .name = "read", .executor = ferry::io})
        .map([&o](const encoded& e) { return decode_clip(e, latest_start(o) / 2, o); },
             {.concurrency = o.loader_threads, .name = "decode", .on_error = ferry::skip})
        .batch(64)
        .map(collate_to_torch, {.name = "collate+to_torch"})
        .build({.threads = o.loader_threads});
}

/// u8 [B, T, H, W, 1] -> float [B, 1, T, H, W], centred on the background's noise.
torch::Tensor model_input(const torch::Tensor& clips) {
    return clips.permute({0, 4, 1, 2, 3})
        .to(torch::kFloat)
        .sub_(ferry_examples::noise_mean)
        .div_(50.0F);
}

/// A small 3D CNN: three 3x3x3-ish convolutions with batch norm, max pooling over time and space,
/// then the strongest response anywhere in the clip (the item can be anywhere) per channel. The
/// first pooling halves time only when a clip has frames to halve (not at --frames 1).
torch::nn::Sequential make_model(int classes, int frames) {
    using namespace torch::nn;
    const auto conv = [](int in, int out, std::vector<std::int64_t> k,
                         std::vector<std::int64_t> pad) {
        return Conv3d(Conv3dOptions(in, out, k).padding(pad).bias(false));
    };
    return Sequential(conv(1, 8, {3, 5, 5}, {1, 2, 2}), BatchNorm3d(8), ReLU(),
                      MaxPool3d(MaxPool3dOptions({std::min(frames, 2), 2, 2})),  //
                      conv(8, 16, {3, 3, 3}, {1, 1, 1}), BatchNorm3d(16), ReLU(),
                      MaxPool3d(MaxPool3dOptions({1, 2, 2})),  //
                      conv(16, 32, {3, 3, 3}, {1, 1, 1}), BatchNorm3d(32), ReLU(),
                      AdaptiveMaxPool3d(1), Flatten(), Linear(32, classes));
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Trains a 3D CNN in libtorch on generated videos fed by ferry (FFmpeg decode)."};
    options o;
    std::string cache_dir;
    int train_per_class = 80;
    int test_per_class = 25;
    int epochs = 8;
    int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    float lr = 3e-3F;
    app.add_option(
        "--cache", cache_dir,
        "where the videos are generated (default $XDG_CACHE_HOME/ferry or ~/.cache/ferry)");
    app.add_option("--train-per-class", train_per_class, "training videos per class")
        ->check(CLI::Range(1, 6000));
    app.add_option("--test-per-class", test_per_class, "test videos per class")
        ->check(CLI::Range(1, 1000));
    app.add_option("--epochs", epochs)->check(CLI::PositiveNumber);
    app.add_option("--frames", o.frames, "frames per clip")->check(CLI::Range(1, 16));
    app.add_option("--stride", o.stride, "stride between the clip's frames")
        ->check(CLI::Range(1, 3));
    app.add_option("--size", o.size, "decoded frame size (square)")->check(CLI::Range(16, 64));
    app.add_option("--threads", threads,
                   "the whole budget: half for ferry's pipeline, the rest libtorch's intra-op "
                   "threads (default: the cores)")
        ->check(CLI::PositiveNumber);
    app.add_option("--batch-size", o.batch_size)->check(CLI::PositiveNumber);
    app.add_option("--lr", lr, "peak learning rate (AdamW, cosine to 0)");
    app.add_option("--seed", o.seed, "seed for shuffling, clip starts and initialisation");
    CLI11_PARSE(app, argc, argv);
    if ((o.frames - 1) * o.stride + 1 > ferry_examples::video_frames) {
        std::cerr << "--frames " << o.frames << " at --stride " << o.stride
                  << " span more than the " << ferry_examples::video_frames
                  << " frames of a video\n";
        return 2;
    }

    // One budget, half each: decoding a clip (opening the demuxer and decoder, then up to 24
    // frames from the keyframe) costs about as much as the model's training step on it.
    o.loader_threads = std::max(1, threads / 2);
    const int torch_threads = std::max(1, threads - o.loader_threads);
    torch::set_num_interop_threads(1);
    torch::set_num_threads(torch_threads);
    torch::manual_seed(o.seed);

    const fs::path root = ferry_examples::moving_directions(
        ferry_examples::cache_dir(cache_dir), train_per_class, test_per_class, threads);
    const auto data = ferry_examples::load_dataset(root);
    const int classes = static_cast<int>(data.classes.size());
    std::cout
        << "data: " << data.train.size() << " train / " << data.test.size() << " test videos, "
        << classes
        << " classes (a random Fashion-MNIST item moving down, left, right or up over a noisy "
           "background, 64x64 H.264 with B-frames); clips of "
        << o.frames << (o.frames == 1 ? " frame" : " frames") << " at stride " << o.stride << ", "
        << o.size << "x" << o.size << " gray\n";
    auto model = make_model(classes, o.frames);
    std::int64_t params = 0;
    for (const auto& p : model->parameters()) params += p.numel();
    std::cout << "model: 3D CNN conv3d 8-16-32 + batch norm + max pooling, " << params
              << " parameters; AdamW lr " << lr << " (cosine to 0), batch " << o.batch_size << '\n';
    std::cout << "threads: libtorch " << torch_threads << " intra-op, ferry loader "
              << o.loader_threads << std::endl;

    auto train = train_pipeline(data.train, o);
    auto test = test_pipeline(data.test, o);
    torch::optim::AdamW optimizer(model->parameters(),
                                  torch::optim::AdamWOptions(lr).weight_decay(1e-4));
    const auto per_epoch =
        static_cast<std::int64_t>((data.train.size() + static_cast<std::size_t>(o.batch_size) - 1) /
                                  static_cast<std::size_t>(o.batch_size));
    const std::int64_t steps = per_epoch * epochs;
    std::int64_t step = 0;
    double accuracy = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        model->train();
        const auto t0 = steady::now();
        double loss_sum = 0;
        std::int64_t batches = 0;
        std::int64_t seen = 0;
        for (torch_batch& b : train) {
            const double rate =
                lr * 0.5 * (1 + std::cos(M_PI * static_cast<double>(step++) / steps));
            for (auto& group : optimizer.param_groups())
                static_cast<torch::optim::AdamWOptions&>(group.options()).lr(rate);
            optimizer.zero_grad();
            auto loss = torch::nn::functional::cross_entropy(model->forward(model_input(b.clips)),
                                                             b.labels);
            loss.backward();
            optimizer.step();
            loss_sum += loss.item<double>();
            ++batches;
            seen += b.labels.size(0);
        }
        const double secs = std::chrono::duration<double>(steady::now() - t0).count();
        model->eval();
        torch::NoGradGuard no_grad;
        std::int64_t correct = 0;
        std::int64_t tested = 0;
        for (torch_batch& b : test) {
            const auto predicted = model->forward(model_input(b.clips)).argmax(1);
            correct += predicted.eq(b.labels).sum().item<std::int64_t>();
            tested += b.labels.size(0);
        }
        accuracy = tested > 0 ? static_cast<double>(correct) / static_cast<double>(tested) : 0;
        std::printf("epoch %d/%d  loss %.3f  test accuracy %.3f  %.0f clips/s\n", epoch, epochs,
                    batches > 0 ? loss_sum / static_cast<double>(batches) : 0.0, accuracy,
                    static_cast<double>(seen) / secs);
        std::fflush(stdout);
    }
    std::cout << "\ntraining pipeline (all epochs):\n" << train.stats() << '\n';
    std::cout << "failures: " << train.failures().size() + test.failures().size() << '\n';
    for (const auto& f : train.failures())
        std::cout << "  item " << f.item << ": " << f.message << '\n';
    for (const auto& f : test.failures())
        std::cout << "  test item " << f.item << ": " << f.message << '\n';
    std::printf("final test accuracy %.3f (chance %.3f)\n", accuracy, 1.0 / classes);
    return 0;
}
