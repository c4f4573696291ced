// This program demonstrates ferry feeding a real training loop: image files, shuffled per epoch
// and split over ranks by ferry::sampling -> read (I/O threads) -> decode + augment (flip, or a
// random resized crop too; seeded per item by ferry::item_rng) -> normalize -> batch -> collate,
// into a small neural network trained in plain C++, with test accuracy every epoch.
// Where ferry was built with CUDA and a GPU is present (or with --device cuda), the pipeline ends
// in .to_cuda() instead: u8 batches collated into pinned memory cross the bus and are normalized
// on the device, and the same network trains there (cuBLAS; image_trainer_gpu.cu).
//
// This file holds the CPU training loop and main; the pipeline's pieces, shared by both loops,
// are in trainer_pipeline.hpp, and the GPU path in gpu_training.hpp.
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
#include "trainer_pipeline.hpp"
// Set by CMake: 1 where ferry's CUDA backend (and so the GPU model) is built.
#ifndef FERRY_TRAINER_GPU
#define FERRY_TRAINER_GPU 0
#endif
#if FERRY_TRAINER_GPU
#include "gpu_training.hpp"
#endif

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;
using ferry_examples::mlp;
using namespace ferry_examples;

namespace {

// --- training on the CPU -------------------------------------------------------------------------

/// A checkpoint that does not fit this run (main says which file and exits 2).
struct resume_error : std::runtime_error {
    using std::runtime_error::runtime_error;
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

    dataset data = load_training_data(o);
    const int classes = static_cast<int>(data.classes.size());

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
