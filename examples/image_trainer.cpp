// This program demonstrates ferry feeding a real training loop: image files, shuffled per epoch
// and split over ranks by ferry::sampling -> read (I/O threads) -> decode + augment (flip, or a
// random resized crop too; seeded per item by ferry::item_rng) -> normalize -> batch -> collate,
// into a small neural network trained in plain C++, with test accuracy every epoch.
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
// With --rank R --world-size W (by default read from torchrun's, Open MPI's, MPICH's or Slurm's
// variables), each rank trains on its ceil(n / W) items of every epoch. It is a demo of the data
// side: there is no gradient all-reduce, so each rank trains a model of its own.
//
// With --checkpoint FILE it saves the model, its counters and the loader's ferry::pipeline_state
// every --checkpoint-every steps; --resume FILE goes on from there, mid-epoch, with exactly the
// batches an uninterrupted run would have trained on (the CPU model only).
//
//   image_trainer [--data DIR] [--epochs 5] [--batch-size 64] [--threads N] [--max-items N]
//                 [--rank R --world-size W] [--device auto|cpu|cuda]
//                 [--checkpoint FILE [--checkpoint-every 100]] [--resume FILE] ...
//   image_trainer --help

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache_dir.hpp"
#include "checkpoint.hpp"
#include "ferry/cuda.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"
#include "image_folder.hpp"
#include "mlp.hpp"
#include "progress.hpp"
#include "trainer_options.hpp"
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

// --- the pipeline's element types --------------------------------------------------------------

/// A file's bytes and its label (after the read stage).
struct encoded {
    ferry::bytes data;
    int label = 0;
};

/// A decoded, augmented, normalized image (f32, 1 x size x size), its label and its index in the
/// dataset (`ferry::item_info::index`; for --record-items).
struct sample {
    ferry::tensor pixels;
    int label = 0;
    std::uint64_t index = 0;
};

/// What the CPU training loop takes: a batch of images (f32, n x 1 x size x size), labels and
/// the images' dataset indices.
struct batch {
    ferry::tensor pixels;
    std::vector<int> labels;
    std::vector<std::uint64_t> indices;
};

batch collate_samples(std::vector<sample> samples) {
    batch b;
    std::vector<ferry::tensor> pixels;
    pixels.reserve(samples.size());
    for (auto& s : samples) {
        pixels.push_back(std::move(s.pixels));
        b.labels.push_back(s.label);
        b.indices.push_back(s.index);
    }
    b.pixels = ferry::ops::collate(std::move(pixels));
    return b;
}

/// Fashion-MNIST's pixel mean and standard deviation.
constexpr float pixel_mean = 0.286F;
constexpr float pixel_std = 0.353F;

encoded read_item(const item& it) {
    return {ferry::ops::read_file(it.path), it.label};
}

/// A training image: gray, then (with augmentation) a coin-flip mirror and, with `crop_scale`
/// below 1, a random resized crop; else resized to size x size. The numbers come from
/// `ferry::item_rng`: the same for the same (seed, epoch, item) whatever the thread count or the
/// rank that gets the item, and new ones every epoch.
ferry::image decode_train_image(const encoded& e, const ferry::item_info& info,
                                const trainer_options& o) {
    ferry::image img = ferry::ops::decode_image(e.data, {.format = ferry::pixel_format::gray});
    if (o.augment) {
        auto rng = ferry::item_rng(info);
        if ((rng() & 1) != 0) img = ferry::ops::horizontal_flip(img);
        if (o.crop_scale < 1.0) {
            std::mt19937_64 crop_rng(rng());  // what random_resized_crop takes
            return ferry::ops::random_resized_crop(img, o.size, o.size, crop_rng,
                                                   {.scale = {o.crop_scale, 1.0}});
        }
    }
    if (img.width() != o.size || img.height() != o.size) {
        img = ferry::ops::resize(img, o.size, o.size);
    }
    return img;
}

/// How the training set is visited: a new shuffle every epoch, the same on every rank, of which
/// this rank takes every `world_size`-th item; padded so that every rank gets ceil(n / W).
ferry::sampling train_sampling(const trainer_options& o) {
    return {.shuffle = true,
            .seed = o.seed,
            .rank = o.rank,
            .world_size = o.world_size,
            .remainder = ferry::remainder::pad};
}

/// The training source and its read stage: this rank's files of each epoch, read on ferry's I/O
/// threads.
auto read_training_files(const std::vector<item>& items, const trainer_options& o) {
    return ferry::from(items, train_sampling(o))
        .map(read_item, {.concurrency = o.read_concurrency, .name = "read", .executor = ferry::io});
}

/// This rank's training images per epoch: ceil(n / world_size).
std::size_t training_items(const dataset& data, const trainer_options& o) {
    return static_cast<std::size_t>(ferry::sampler(data.train.size(), train_sampling(o)).size());
}

/// SGD steps in the whole run, over which the learning rate schedule runs (a batch of skipped
/// files may end an epoch a step early; the schedule does not mind).
std::size_t total_steps(std::size_t per_epoch, const trainer_options& o) {
    const auto batch = static_cast<std::size_t>(o.batch_size);
    return static_cast<std::size_t>(o.epochs) * ((per_epoch + batch - 1) / batch);
}

/// Test: same decode, no augmentation, in file order, normalized on the host.
auto test_pipeline(const std::vector<item>& items, const trainer_options& o) {
    const ferry::normalize_options norm{.mean = {pixel_mean}, .std = {pixel_std}, .chw = true};
    return ferry::from(items)
        .map(read_item, {.concurrency = o.read_concurrency, .name = "read", .executor = ferry::io})
        .map(
            [norm, size = o.size](encoded e) {
                ferry::image img = ferry::ops::decode_image(
                    e.data, {.format = ferry::pixel_format::gray, .resize = {size, size}});
                return sample{ferry::ops::normalize(img, norm), e.label, 0};
            },
            {.concurrency = o.decoders, .name = "decode", .on_error = ferry::skip})
        .batch(256)
        .map(collate_samples, {.name = "collate"})
        .build(o.popts);
}

void print_epoch(int epoch, const trainer_options& o, double loss_sum, std::size_t batches,
                 double accuracy, std::size_t seen, double secs) {
    std::printf("epoch %d/%d  loss %.3f  test accuracy %.3f  %.0f img/s\n", epoch, o.epochs,
                batches > 0 ? loss_sum / static_cast<double>(batches) : 0.0, accuracy,
                static_cast<double>(seen) / secs);
    std::fflush(stdout);
}

/// The training pipeline's stats and failures, and the final accuracy.
template <class Pipeline>
void print_summary(const Pipeline& train, double accuracy, int classes, const trainer_options& o) {
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

/// A checkpoint that does not fit this run (main says which file and exits 2).
struct resume_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// --record-items: each trained item's dataset index, a line each, with a line `epoch E` where
/// an epoch starts or resumes and `checkpoint` after each checkpoint is written. Flushed after
/// every batch, so that the lines of the steps taken survive a crash.
class item_record {
  public:
    explicit item_record(const std::string& path) {
        if (path.empty()) return;
        out_.open(path, std::ios::app);
        if (!out_) throw ferry::io_error("cannot open --record-items file " + path, false);
    }
    void epoch(int e) { line("epoch " + std::to_string(e)); }
    void items(const std::vector<std::uint64_t>& indices) {
        if (!out_.is_open()) return;
        for (const auto i : indices) out_ << i << '\n';
        out_.flush();
    }
    void checkpoint() { line("checkpoint"); }

  private:
    void line(const std::string& text) {
        if (out_.is_open()) out_ << text << '\n' << std::flush;
    }
    std::ofstream out_;
};

/// Normalize on the host; the model's forward and backward passes in plain C++. With `resume`,
/// the model is already restored and the loop goes on from that position.
void train_on_cpu(const dataset& data, mlp& model, const trainer_options& o,
                  std::optional<train_position> resume) {
    const int classes = static_cast<int>(data.classes.size());
    const ferry::normalize_options norm{.mean = {pixel_mean}, .std = {pixel_std}, .chw = true};
    ferry::pipeline_options train_opts = o.popts;
    if (resume) train_opts.resume_from = resume->loader;
    auto build = [&] {
        return read_training_files(data.train, o)
            .map(
                [&o, norm](const encoded& e, const ferry::item_info& info) {
                    return sample{ferry::ops::normalize(decode_train_image(e, info, o), norm),
                                  e.label, info.index};
                },
                {.concurrency = o.decoders, .name = "decode+augment", .on_error = ferry::skip})
            .batch(static_cast<std::size_t>(o.batch_size))
            .map(collate_samples, {.name = "collate"})
            .build(train_opts);
    };
    // build() refuses a state saved by another pipeline: other data, seed, ranks or batch size.
    auto train = [&] {
        try {
            return build();
        } catch (const ferry::invalid_argument& e) {
            if (!resume) throw;
            throw resume_error(e.what());
        }
    }();
    auto test = test_pipeline(data.test, o);
    item_record record(o.record_items_path);

    const int in = o.size * o.size;
    const std::size_t per_epoch = training_items(data, o);
    const std::size_t steps = total_steps(per_epoch, o);
    train_position pos = resume.value_or(train_position{});
    double last_accuracy = 0;
    for (; pos.epoch <= o.epochs; ++pos.epoch) {
        progress bar("epoch " + std::to_string(pos.epoch) + "/" + std::to_string(o.epochs),
                     per_epoch, o.show_progress);
        record.epoch(pos.epoch);
        const auto t0 = steady::now();
        std::size_t seen_here = 0;  // this process's images of the epoch, for the rate
        for (const batch& b : train) {
            pos.loss_sum += model.train_step(b.pixels.data_as<float>(), b.labels,
                                             o.lr_at(pos.step++, steps), o.momentum);
            pos.seen += b.labels.size();
            seen_here += b.labels.size();
            ++pos.batches;
            record.items(b.indices);
            bar.update(pos.seen);
            if (o.stop_after_steps > 0 && pos.step == o.stop_after_steps) {
                std::cerr << "image_trainer: --stop-after-steps " << o.stop_after_steps
                          << ": exiting with status 3 as a crash would, saving nothing\n";
                std::_Exit(3);
            }
            if (!o.checkpoint_path.empty() && pos.step % o.checkpoint_every == 0) {
                // Inside the loop: after leaving it the epoch is abandoned, and state() would be
                // the next one's start.
                pos.loader = train.state();
                write_checkpoint(o.checkpoint_path, pos, model);
                record.checkpoint();
            }
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
        print_epoch(pos.epoch, o, pos.loss_sum, pos.batches, last_accuracy, seen_here, secs);
        pos.loss_sum = 0;
        pos.seen = 0;
        pos.batches = 0;
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
void train_on_gpu(const dataset& data, const mlp& init, const trainer_options& o, int device) {
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
                [&o](const encoded& e, const ferry::item_info& info) {
                    return gray_sample{decode_train_image(e, info, o), e.label};
                },
                {.concurrency = o.decoders, .name = "decode+augment", .on_error = ferry::skip})
            .batch(static_cast<std::size_t>(o.batch_size))
            .map(collate_pinned, {.name = "collate"})
            .to_cuda(
                {.device = device,
                 .normalize =
                     ferry::cuda_normalize{.mean = {pixel_mean}, .std = {pixel_std}, .chw = true}})
            .build(o.popts);

    const std::size_t per_epoch = training_items(data, o);
    const std::size_t steps = total_steps(per_epoch, o);
    std::size_t step = 0;
    double last_accuracy = 0;
    for (int epoch = 1; epoch <= o.epochs; ++epoch) {
        progress bar("epoch " + std::to_string(epoch) + "/" + std::to_string(o.epochs), per_epoch,
                     o.show_progress);
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
                             static_cast<const std::int32_t*>(b.labels.data()), n,
                             o.lr_at(step++, steps), o.momentum);
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
    trainer_options o;
    if (const auto exit_status = parse_command_line(argc, argv, o)) return *exit_status;

    // Decided before any data is unpacked or read: --device cuda without a GPU fails at once.
    std::string no_gpu;  // why the CPU trains, when a GPU was not chosen or not available
    const bool checkpoints = !o.checkpoint_path.empty() || !o.resume_path.empty() ||
                             !o.record_items_path.empty() || o.stop_after_steps > 0;
    if (checkpoints && o.device == "cuda") {
        std::cerr << "image_trainer: --checkpoint, --resume, --record-items and --stop-after-steps "
                     "work with the CPU model only; use --device cpu (or auto)\n";
        return 2;
    }
    if (o.device == "cpu") {
        no_gpu = "--device cpu";
    } else if (checkpoints) {
        no_gpu = "checkpoints are of the CPU model";
    } else if (FERRY_TRAINER_GPU == 0 || !ferry::cuda::built_with_cuda()) {
        no_gpu = "this image_trainer was built without CUDA (FERRY_CUDA=OFF or no CUDA Toolkit)";
    } else if (ferry::cuda::device_count() == 0) {
        no_gpu = "no CUDA device (ferry::cuda::device_count() == 0)";
    }
    if (o.device == "cuda" && !no_gpu.empty()) {
        std::cerr << "--device cuda: cannot train on a GPU: " << no_gpu
                  << "; use --device cpu or auto\n";
        return 2;
    }

    // A checkpoint that cannot be read fails now, before any data is unpacked.
    std::string checkpoint_bytes;
    if (!o.resume_path.empty()) {
        try {
            checkpoint_bytes = read_checkpoint_file(o.resume_path);
        } catch (const ferry::error& e) {
            std::cerr << "image_trainer: cannot resume: " << e.what() << '\n';
            return 2;
        }
    }

    const fs::path root = !o.data_dir.empty()
                              ? fs::path(o.data_dir)
                              : fashion_mnist(ferry_examples::cache_dir(o.cache_dir));
    dataset data = load_dataset(root);
    // --max-items takes a random subset (all classes), not the first classes in folder order; the
    // same on every rank (seeded by --seed alone), so that the ranks split the same images.
    std::mt19937_64 pick(o.seed);
    auto subset = [&](std::vector<item>& v, std::size_t n) {
        if (n == 0 || n >= v.size()) return;
        std::shuffle(v.begin(), v.end(), pick);
        v.resize(n);
    };
    subset(data.train, o.max_items);
    subset(data.test, o.max_test_items);
    if (data.train.empty() || data.test.empty() || data.classes.size() < 2) {
        std::cerr << "need at least two classes and some train and test images under "
                  << root.string() << '\n';
        return 2;
    }
    const int classes = static_cast<int>(data.classes.size());
    std::cout << "data: " << root.string() << ": " << data.train.size() << " train / "
              << data.test.size() << " test images, " << classes << " classes";
    if (o.world_size > 1) {
        std::cout << "; rank " << o.rank << "/" << o.world_size << " trains on "
                  << training_items(data, o) << " training images per epoch";
    }
    std::cout << std::endl;

    const int in = o.size * o.size;
    mlp model(in, o.hidden, classes, o.seed);
    std::cout << "model: "
              << (o.hidden > 0
                      ? "MLP " + std::to_string(in) + "-" + std::to_string(o.hidden) + "-" +
                            std::to_string(classes)
                      : "softmax regression " + std::to_string(in) + "-" + std::to_string(classes))
              << ", SGD lr " << o.lr << (o.schedule == "cosine" ? " (cosine to 0)" : "")
              << " momentum " << o.momentum << ", batch " << o.batch_size << "; augment: "
              << (!o.augment ? std::string("none")
                  : o.crop_scale < 1.0
                      ? "flip, crop " + std::to_string(static_cast<int>(o.crop_scale * 100)) +
                            "-100%"
                      : std::string("flip"))
              << std::endl;

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
    std::optional<train_position> resume;
    if (!o.resume_path.empty()) {
        try {
            resume = parse_checkpoint(checkpoint_bytes, model);
        } catch (const ferry::error& e) {
            std::cerr << "image_trainer: cannot resume from " << o.resume_path << ": " << e.what()
                      << '\n';
            return 2;
        }
        std::cout << "resuming from " << o.resume_path << ": epoch " << resume->epoch << "/"
                  << o.epochs << ", step " << resume->step << ", item " << resume->loader.position()
                  << " of the epoch" << std::endl;
    }
    std::cout << "training on: cpu (" << no_gpu << ")" << std::endl;
    try {
        train_on_cpu(data, model, o, resume);
    } catch (const resume_error& e) {
        std::cerr << "image_trainer: cannot resume from " << o.resume_path << ": " << e.what()
                  << '\n';
        return 2;
    } catch (const ferry::error& e) {
        std::cerr << "image_trainer: training failed: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
