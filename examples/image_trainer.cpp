// This program demonstrates ferry feeding a real training loop: image files -> read (I/O
// threads) -> decode + augment (random resized crop, flip; seeded) -> normalize -> batch ->
// collate, into a small neural network trained in plain C++, with test accuracy every epoch.
// Where ferry was built with CUDA and a GPU is present (or with --device cuda), the pipeline ends
// in .to_cuda() instead: u8 batches collated into pinned memory cross the bus and are normalized
// on the device, and the same network trains there (cuBLAS; image_trainer_gpu.cu).
//
// Data: by default Fashion-MNIST (70 000 labelled 28x28 images) from Debian's
// dataset-fashion-mnist package, unpacked on first run into an image-folder tree of PNG files
// (one file per image, as real datasets are stored) under $XDG_CACHE_HOME/ferry or
// ~/.cache/ferry. Or your own data: --data DIR with DIR/train/<class>/* and DIR/test/<class>/*
// (any format decode_image reads; images are converted to gray and resized to --size).
//
//   image_trainer [--data DIR] [--epochs 3] [--batch-size 64] [--threads N] [--max-items N]
//                 [--device auto|cpu|cuda] ...
//   image_trainer --help

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cache_dir.hpp"
#include "ferry/cuda.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"
#include "image_folder.hpp"
#include "mlp.hpp"
// Set by CMake: 1 where ferry's CUDA backend (and so the GPU model) is built.
#ifndef FERRY_TRAINER_GPU
#define FERRY_TRAINER_GPU 0
#endif
#if FERRY_TRAINER_GPU
#include "image_trainer_gpu.hpp"
#endif

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;
using ferry_examples::mlp;
using namespace ferry_examples;

namespace {

class progress {
  public:
    progress(std::string title, std::size_t total, bool enabled)
        : title_(std::move(title)), total_(total), enabled_(enabled), start_(steady::now()) {}

    void update(std::size_t done) {
        if (!enabled_) return;
        last_done_ = done;
        const auto now = steady::now();
        if (now - last_ < std::chrono::milliseconds(200) && done < total_) return;
        last_ = now;
        const double secs = std::chrono::duration<double>(now - start_).count();
        const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
        const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
        constexpr int width = 30;
        const int filled =
            total_ > 0 ? static_cast<int>(width * static_cast<double>(done) / total_) : width;
        std::fprintf(stderr, "\r%s [%s%s] %zu/%zu  %.0f img/s  ETA %.0fs ", title_.c_str(),
                     std::string(static_cast<std::size_t>(filled), '#').c_str(),
                     std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done,
                     total_, rate, eta);
    }
    void finish() {
        if (enabled_ && last_done_ > 0) std::fputc('\n', stderr);
    }

  private:
    std::string title_;
    std::size_t total_;
    bool enabled_;
    steady::time_point start_;
    steady::time_point last_{};
    std::size_t last_done_ = 0;
};

// --- the pipeline's element types --------------------------------------------------------------

/// A file's bytes and its label (after the read stage).
struct encoded {
    ferry::bytes data;
    int label = 0;
};

/// A decoded, augmented, normalized image (f32, 1 x size x size) and its label.
struct sample {
    ferry::tensor pixels;
    int label = 0;
};

/// What the CPU training loop takes: a batch of images (f32, n x 1 x size x size) and labels.
struct batch {
    ferry::tensor pixels;
    std::vector<int> labels;
};

batch collate_samples(std::vector<sample> samples) {
    batch b;
    std::vector<ferry::tensor> pixels;
    pixels.reserve(samples.size());
    for (auto& s : samples) {
        pixels.push_back(std::move(s.pixels));
        b.labels.push_back(s.label);
    }
    b.pixels = ferry::ops::collate(std::move(pixels));
    return b;
}

/// What the command line chose.
struct settings {
    int epochs = 5;
    int batch_size = 64;
    int read_concurrency = 4;
    int decoders = 1;
    int hidden = 64;
    int size = 28;
    float lr = 0.05F;
    std::uint64_t seed = 1;
    bool augment = true;
    bool show_progress = false;
    std::string trace_path;  ///< --trace: where the training pipeline's spans go (Chrome JSON)
    ferry::pipeline_options popts;
};

/// Fashion-MNIST's pixel mean and standard deviation.
constexpr float pixel_mean = 0.286F;
constexpr float pixel_std = 0.353F;

encoded read_item(const item& it) {
    return {ferry::ops::read_file(it.path), it.label};
}

/// A training image: gray, then (with augmentation) a random resized crop and a coin-flip mirror,
/// seeded per image so that the same seed gives the same crops; else resized to size x size.
ferry::image decode_train_image(const encoded& e, std::size_t index, const settings& o) {
    ferry::image img = ferry::ops::decode_image(e.data, {.format = ferry::pixel_format::gray});
    if (o.augment) {
        std::mt19937_64 rng(o.seed ^ (index * 0x9E3779B97F4A7C15ULL));
        img = ferry::ops::random_resized_crop(img, o.size, o.size, rng, {.scale = {0.7, 1.0}});
        if ((rng() & 1) != 0) img = ferry::ops::horizontal_flip(img);
    } else if (img.width() != o.size || img.height() != o.size) {
        img = ferry::ops::resize(img, o.size, o.size);
    }
    return img;
}

/// The training source and its read stage: a new shuffle every epoch (the source is told the
/// epoch number), each file read on ferry's I/O threads with its index (the augmentation seed).
auto read_training_files(const std::vector<item>& items, const settings& o) {
    return ferry::from([&items, seed = o.seed](std::uint64_t epoch) {
               std::vector<std::size_t> order(items.size());
               std::iota(order.begin(), order.end(), std::size_t{0});
               std::shuffle(order.begin(), order.end(), std::mt19937_64(seed * 1000 + epoch));
               return order;
           })
        .map(
            [&items](std::size_t i) {
                return std::pair{i, read_item(items[i])};
            },
            {.concurrency = o.read_concurrency, .name = "read", .executor = ferry::io});
}

/// Test: same decode, no augmentation, in file order, normalized on the host.
auto test_pipeline(const std::vector<item>& items, const settings& o) {
    const ferry::normalize_options norm{.mean = {pixel_mean}, .std = {pixel_std}, .chw = true};
    return ferry::from(items)
        .map(read_item, {.concurrency = o.read_concurrency, .name = "read", .executor = ferry::io})
        .map(
            [norm, size = o.size](encoded e) {
                ferry::image img = ferry::ops::decode_image(
                    e.data, {.format = ferry::pixel_format::gray, .resize = {size, size}});
                return sample{ferry::ops::normalize(img, norm), e.label};
            },
            {.concurrency = o.decoders, .name = "decode", .on_error = ferry::skip})
        .batch(256)
        .map(collate_samples, {.name = "collate"})
        .build(o.popts);
}

void print_epoch(int epoch, const settings& o, double loss_sum, std::size_t batches,
                 double accuracy, std::size_t seen, double secs) {
    std::printf("epoch %d/%d  loss %.3f  test accuracy %.3f  %.0f img/s\n", epoch, o.epochs,
                batches > 0 ? loss_sum / static_cast<double>(batches) : 0.0, accuracy,
                static_cast<double>(seen) / secs);
    std::fflush(stdout);
}

/// The training pipeline's stats and failures, and the final accuracy.
template <class Pipeline>
void print_summary(const Pipeline& train, double accuracy, int classes, const settings& o) {
    std::cout << "\ntraining pipeline (all epochs):\n" << train.stats() << '\n';
    if (!o.trace_path.empty()) {
        std::ofstream out(o.trace_path);
        train.write_trace(out);
        out.close();
        if (!out) throw ferry::io_error("cannot write the trace to " + o.trace_path);
        std::cout << "trace: " << o.trace_path
                  << " (Chrome trace JSON: open it in https://ui.perfetto.dev)\n";
    }
    const auto& failures = train.failures();
    std::cout << "failures: " << failures.size() << '\n';
    for (std::size_t i = 0; i < failures.size() && i < 5; ++i) {
        std::cout << "  item " << failures[i].item << " (" << failures[i].stage
                  << "): " << failures[i].message << '\n';
    }
    std::printf("final test accuracy %.3f (chance %.3f)\n", accuracy, 1.0 / classes);
}

// --- training on the CPU -------------------------------------------------------------------------

/// Normalize on the host; the model's forward and backward passes in plain C++.
void train_on_cpu(const dataset& data, mlp& model, const settings& o) {
    const int classes = static_cast<int>(data.classes.size());
    const ferry::normalize_options norm{.mean = {pixel_mean}, .std = {pixel_std}, .chw = true};
    auto train =
        read_training_files(data.train, o)
            .map(
                [&o, norm](std::pair<std::size_t, encoded> in) {
                    auto& [index, e] = in;
                    return sample{ferry::ops::normalize(decode_train_image(e, index, o), norm),
                                  e.label};
                },
                {.concurrency = o.decoders, .name = "decode+augment", .on_error = ferry::skip})
            .batch(static_cast<std::size_t>(o.batch_size))
            .map(collate_samples, {.name = "collate"})
            .build(o.popts);
    auto test = test_pipeline(data.test, o);

    const int in = o.size * o.size;
    double last_accuracy = 0;
    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
        progress bar("epoch " + std::to_string(epoch) + "/" + std::to_string(o.epochs),
                     data.train.size(), o.show_progress);
        const auto t0 = steady::now();
        double loss_sum = 0;
        std::size_t seen = 0;
        std::size_t batches = 0;
        for (const batch& b : train) {
            loss_sum += model.train_step(b.pixels.data_as<float>(), b.labels, o.lr, 0.9F);
            seen += b.labels.size();
            ++batches;
            bar.update(seen);
        }
        bar.finish();
        const double secs = std::chrono::duration<double>(steady::now() - t0).count();

        std::size_t correct = 0;
        std::size_t tested = 0;
        for (const batch& b : test) {
            const float* x = b.pixels.data_as<float>();
            for (std::size_t s = 0; s < b.labels.size(); ++s) {
                correct += model.predict(x + s * static_cast<std::size_t>(in)) == b.labels[s];
            }
            tested += b.labels.size();
        }
        last_accuracy = tested > 0 ? static_cast<double>(correct) / tested : 0;
        print_epoch(epoch, o, loss_sum, batches, last_accuracy, seen, secs);
    }
    print_summary(train, last_accuracy, classes, o);
}

#if FERRY_TRAINER_GPU
// --- training on the GPU -------------------------------------------------------------------------

/// A decoded, augmented image, still u8, and its label.
struct gray_sample {
    ferry::image pixels;
    int label = 0;
};

/// A batch for the GPU: u8 n x size x size x 1 images, i32 labels. Made in the stage right before
/// `.to_cuda()`, its tensors come from the transfer's pinned pool without asking
/// (`cuda_options::pinned_batches`): they cross the bus with no staging copy.
struct pinned_batch {
    ferry::tensor pixels;
    ferry::tensor labels;
};

/// The same batch after `.to_cuda()`: f32 n x 1 x size x size (normalized on the device), i32
/// labels.
struct device_batch {
    ferry::cuda_tensor pixels;
    ferry::cuda_tensor labels;
};

pinned_batch collate_pinned(std::vector<gray_sample> samples) {
    pinned_batch b;
    b.labels = ferry::tensor(ferry::dtype::i32, {static_cast<std::int64_t>(samples.size())});
    auto* labels = b.labels.data_as<std::int32_t>();
    std::vector<ferry::image> images;
    images.reserve(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
        labels[i] = samples[i].label;
        images.push_back(std::move(samples[i].pixels));
    }
    b.pixels = ferry::ops::collate(std::move(images));
    return b;
}

}  // namespace

/// How a `pinned_batch` goes to the GPU: both tensors, on the transfer's stream.
template <>
struct ferry::cuda_transfer<pinned_batch> {
    device_batch operator()(pinned_batch b, ferry::cuda::transfer_context& ctx) const {
        return {ctx.copy(b.pixels), ctx.copy(b.labels)};
    }
};

namespace {

/// The pipeline ends in `.to_cuda()` (the copy and the u8 -> f32 normalize on the device); the
/// model trains on its own stream, which waits for each batch's copy without blocking the host.
/// The test split is decoded once on the host and uploaded once.
void train_on_gpu(const dataset& data, const mlp& init, const settings& o, int device) {
    const int classes = static_cast<int>(data.classes.size());
    ferry_examples::gpu_mlp model(init, device);
    std::cout << "training on: " << model.device_name() << " (to_cuda + device normalize, cuBLAS)"
              << std::endl;

    std::vector<float> test_x;
    std::vector<std::int32_t> test_y;
    for (const batch& b : test_pipeline(data.test, o)) {
        test_x.insert(test_x.end(), b.pixels.data_as<float>(),
                      b.pixels.data_as<float>() + b.pixels.numel());
        test_y.insert(test_y.end(), b.labels.begin(), b.labels.end());
    }
    model.set_test_set(test_x, test_y);

    auto train =
        read_training_files(data.train, o)
            .map(
                [&o](std::pair<std::size_t, encoded> in) {
                    auto& [index, e] = in;
                    return gray_sample{decode_train_image(e, index, o), e.label};
                },
                {.concurrency = o.decoders, .name = "decode+augment", .on_error = ferry::skip})
            .batch(static_cast<std::size_t>(o.batch_size))
            .map(collate_pinned, {.name = "collate"})
            .to_cuda(
                {.device = device,
                 .normalize =
                     ferry::cuda_normalize{.mean = {pixel_mean}, .std = {pixel_std}, .chw = true}})
            .build(o.popts);

    double last_accuracy = 0;
    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
        progress bar("epoch " + std::to_string(epoch) + "/" + std::to_string(o.epochs),
                     data.train.size(), o.show_progress);
        const auto t0 = steady::now();
        std::size_t seen = 0;
        std::size_t batches = 0;
        for (const device_batch& b : train) {
            if (b.pixels.dtype() != ferry::dtype::f32) {
                throw ferry::error(ferry::errc::internal,
                                   "image_trainer: expected normalized f32 batches from to_cuda, "
                                   "got " +
                                       b.pixels.describe());
            }
            // The model's stream waits for the copies; the host goes on to the next batch.
            b.pixels.wait(model.stream());
            b.labels.wait(model.stream());
            const int n = static_cast<int>(b.labels.numel());
            model.train_step(static_cast<const float*>(b.pixels.data()),
                             static_cast<const std::int32_t*>(b.labels.data()), n, o.lr, 0.9F);
            seen += static_cast<std::size_t>(n);
            ++batches;
            bar.update(seen);
        }
        const double loss_sum = model.take_loss_sum();  // waits for the epoch's queued steps
        bar.finish();
        const double secs = std::chrono::duration<double>(steady::now() - t0).count();
        last_accuracy = model.test_size() > 0 ? static_cast<double>(model.test_correct()) /
                                                    static_cast<double>(model.test_size())
                                              : 0;
        print_epoch(epoch, o, loss_sum, batches, last_accuracy, seen, secs);
    }
    print_summary(train, last_accuracy, classes, o);
}
#endif

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "Trains a small network on an image folder (default: Fashion-MNIST) fed by ferry."};
    settings o;
    std::string data_dir;
    std::string cache_dir;
    int threads = 0;
    int decode_concurrency = 0;
    std::size_t max_items = 0;
    std::size_t max_test_items = 0;
    std::string device = "auto";
    bool no_progress = false;
    app.add_option("--data", data_dir, "image folder with train/<class>/* and test/<class>/*");
    app.add_option("--cache", cache_dir,
                   "where Fashion-MNIST is unpacked (default $XDG_CACHE_HOME/ferry or "
                   "~/.cache/ferry)");
    app.add_option("--epochs", o.epochs, "passes over the training set")
        ->check(CLI::PositiveNumber);
    app.add_option("--batch-size", o.batch_size, "images per batch")->check(CLI::PositiveNumber);
    app.add_option("--threads", threads, "ferry's compute threads (default: ferry's default)");
    app.add_option("--read-concurrency", o.read_concurrency, "I/O threads reading files")
        ->check(CLI::PositiveNumber);
    app.add_option("--decode-concurrency", decode_concurrency,
                   "decode + augment calls at once (default: the thread count)");
    app.add_option("--max-items", max_items, "use at most this many training images (0 = all)");
    app.add_option("--max-test-items", max_test_items,
                   "use at most this many test images (0 = all)");
    app.add_option("--hidden", o.hidden, "hidden units (0 = softmax regression)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--size", o.size, "images are resized to size x size")
        ->check(CLI::PositiveNumber);
    app.add_option("--lr", o.lr, "learning rate");
    app.add_option("--seed", o.seed, "seed for shuffling, augmentation and initialisation");
    app.add_option("--device", device,
                   "where the model trains: auto (a CUDA GPU when ferry was built with CUDA and "
                   "one is present, else the CPU), cpu, or cuda (device 0; an error without one)")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    app.add_flag("!--no-augment", o.augment, "no random crop / flip");
    app.add_flag("--no-progress", no_progress, "no progress bar");
    app.add_option("--trace", o.trace_path,
                   "write the training pipeline's call spans to this file (Chrome trace JSON, "
                   "for https://ui.perfetto.dev)");
    CLI11_PARSE(app, argc, argv);

    // Decided before any data is unpacked or read: --device cuda without a GPU fails at once.
    std::string no_gpu;  // why the CPU trains, when a GPU was not chosen or not available
    if (device == "cpu") {
        no_gpu = "--device cpu";
    } else if (FERRY_TRAINER_GPU == 0 || !ferry::cuda::built_with_cuda()) {
        no_gpu = "this image_trainer was built without CUDA (FERRY_CUDA=OFF or no CUDA Toolkit)";
    } else if (ferry::cuda::device_count() == 0) {
        no_gpu = "no CUDA device (ferry::cuda::device_count() == 0)";
    }
    if (device == "cuda" && !no_gpu.empty()) {
        std::cerr << "--device cuda: cannot train on a GPU: " << no_gpu
                  << "; use --device cpu or auto\n";
        return 2;
    }

    fs::path root;
    if (!data_dir.empty()) {
        root = data_dir;
    } else {
        const fs::path cache = ferry_examples::cache_dir(cache_dir);
        root = fashion_mnist(cache);
    }
    dataset data = load_dataset(root);
    std::mt19937_64 pick(o.seed);
    // --max-items takes a random subset (all classes), not the first classes in folder order.
    auto subset = [&](std::vector<item>& v, std::size_t n) {
        if (n == 0 || n >= v.size()) return;
        std::shuffle(v.begin(), v.end(), pick);
        v.resize(n);
    };
    subset(data.train, max_items);
    subset(data.test, max_test_items);
    if (data.train.empty() || data.test.empty() || data.classes.size() < 2) {
        std::cerr << "need at least two classes and some train and test images under "
                  << root.string() << '\n';
        return 2;
    }
    const int classes = static_cast<int>(data.classes.size());
    std::cout << "data: " << root.string() << ": " << data.train.size() << " train / "
              << data.test.size() << " test images, " << classes << " classes" << std::endl;

    if (threads > 0) o.popts.threads = threads;
    if (!o.trace_path.empty()) o.popts.trace_spans = 4'000'000;  // ~100 MB at most
    o.decoders = decode_concurrency > 0 ? decode_concurrency : std::max(1, o.popts.threads);
    o.show_progress = !no_progress && isatty(STDERR_FILENO) != 0;

    const int in = o.size * o.size;
    mlp model(in, o.hidden, classes, o.seed);
    std::cout << "model: "
              << (o.hidden > 0
                      ? "MLP " + std::to_string(in) + "-" + std::to_string(o.hidden) + "-" +
                            std::to_string(classes)
                      : "softmax regression " + std::to_string(in) + "-" + std::to_string(classes))
              << ", SGD lr " << o.lr << " momentum 0.9, batch " << o.batch_size << std::endl;

#if FERRY_TRAINER_GPU
    if (no_gpu.empty()) {
        try {
            train_on_gpu(data, model, o, 0);
        } catch (const ferry::error& e) {
            std::cerr << "image_trainer: training on the GPU failed: " << e.what() << '\n';
            return 1;
        }
        return 0;
    }
#endif
    std::cout << "training on: cpu (" << no_gpu << ")" << std::endl;
    train_on_cpu(data, model, o);
    return 0;
}
