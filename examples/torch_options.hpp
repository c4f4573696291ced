// SPDX-License-Identifier: Apache-2.0
/// \file
/// torch_trainer's command line: image_trainer's options (`trainer_options`) plus the CNN's, the
/// thread budget's split between libtorch and ferry's loader, and --resume as a flag.
#pragma once

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "ferry/ferry.hpp"
#include "ferry/world.hpp"
#include "trainer_options.hpp"

namespace ferry_examples {

/// image_trainer's options (data, epochs, batch size, learning rate, seed, ranks, checkpoints)
/// and the CNN's own.
struct torch_options : trainer_options {
    int width = 16;  ///< --width: the first convolution's channels
    int pad = 0;     ///< --pad: the random crop's padding (0: no crop)
    float weight_decay = 0.05F;
    int torch_threads = 1;   ///< libtorch's intra-op threads
    int loader_threads = 1;  ///< ferry's compute threads (decode + augment, collate)
    bool resume = false;     ///< --resume: from --checkpoint
    std::string mix;         ///< --mix DIR:WEIGHT,...: train on these folders, drawn by weight
};

/// Fills `o` from the command line; returns the exit status when the program should stop now.
inline std::optional<int> parse_torch_command_line(int argc, char** argv, torch_options& o) {
    CLI::App app{
        "Trains a small residual CNN in libtorch on an image folder (default: "
        "Fashion-MNIST) fed by ferry; data parallel over ranks with c10d/Gloo."};
    app.option_defaults()->always_capture_default();
    o.batch_size = 128;
    o.lr = 3e-3F;
    bool no_progress = false;
    int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    int loader_threads = 0;
    app.add_option("--data", o.data_dir, "image folder with train/<class>/* and test/<class>/*");
    app.add_option("--cache", o.cache_dir,
                   "where Fashion-MNIST is unpacked (default "
                   "$XDG_CACHE_HOME/ferry or ~/.cache/ferry)");
    app.add_option("--epochs", o.epochs, "passes over the training set")
        ->check(CLI::PositiveNumber);
    app.add_option("--batch-size", o.batch_size, "images per batch (per rank)")
        ->check(CLI::PositiveNumber);
    app.add_option("--threads", threads,
                   "cores to use: libtorch's intra-op threads and ferry's loader threads come "
                   "from this one budget (default: all)")
        ->check(CLI::PositiveNumber);
    app.add_option("--loader-threads", loader_threads,
                   "ferry's compute threads out of --threads (default: see the 'threads:' line)");
    app.add_option("--read-concurrency", o.read_concurrency, "I/O threads reading files")
        ->check(CLI::PositiveNumber);
    app.add_option("--max-items", o.max_items,
                   "use at most this many training images (0 = all; the same random subset on "
                   "every rank)");
    app.add_option("--max-test-items", o.max_test_items, "at most this many test images (0 = all)");
    app.add_option("--mix", o.mix,
                   "DIR:WEIGHT,...: train on these image folders' train splits instead, drawn by "
                   "weight (ferry::mix; each shuffled; an epoch ends when one runs out); the "
                   "classes and the test split are --data's");
    app.add_option("--size", o.size, "images are resized to size x size")
        ->check(CLI::Range(8, 1024));
    app.add_option("--width", o.width, "channels of the first convolution")
        ->check(CLI::Range(1, 512));
    app.add_option("--lr", o.lr, "peak learning rate (AdamW)");
    app.add_option("--weight-decay", o.weight_decay, "AdamW's decoupled weight decay");
    app.add_option("--schedule", o.schedule, "cosine (from --lr to 0 at the last step) or constant")
        ->check(CLI::IsMember({"cosine", "constant"}));
    app.add_option("--pad", o.pad,
                   "augmentation: a random size x size crop of the image padded by this many "
                   "pixels (0: none)")
        ->check(CLI::Range(0, 64));
    app.add_option("--seed", o.seed, "seed for shuffling, augmentation and initialisation");
    app.option_defaults()->always_capture_default(false);
    app.add_flag("!--no-augment", o.augment, "no random crop or flip");
    auto* rank = app.add_option("--rank", o.rank,
                                "this process's rank (default: from torchrun, Open MPI, MPICH or "
                                "Slurm variables, else 0)");
    auto* world_size = app.add_option(
        "--world-size", o.world_size,
        "ranks training together (default: from the launcher's variables, else 1); they meet at "
        "MASTER_ADDR:MASTER_PORT (default 127.0.0.1:29500)");
    app.add_flag("--no-progress", no_progress, "no progress bar");
    app.add_option("--checkpoint", o.checkpoint_path,
                   "every --checkpoint-every steps, save the model, the optimizer and the "
                   "loader's position here (atomically; with ranks, FILE.rank<R> per rank)");
    app.add_option("--checkpoint-every", o.checkpoint_every, "training steps between checkpoints")
        ->check(CLI::PositiveNumber);
    app.add_flag("--resume", o.resume,
                 "continue from --checkpoint, mid-epoch, where it was saved (the same data, "
                 "--seed, --batch-size, model and ranks)");
    app.add_option("--record-items", o.record_items_path,
                   "append each trained item's dataset index to this file, a line each")
        ->group("");
    app.add_option("--stop-after-steps", o.stop_after_steps,
                   "exit with status 3 right after this step of the run, saving nothing (a crash)")
        ->group("");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (const auto status =
            resolve_ranks("torch_trainer", o, rank->count() > 0, world_size->count() > 0)) {
        return status;
    }
    if (o.resume && o.checkpoint_path.empty()) {
        std::cerr << "torch_trainer: --resume needs --checkpoint FILE\n";
        return 2;
    }
    if (o.world_size > 1 && !o.checkpoint_path.empty()) {
        o.checkpoint_path += ".rank" + std::to_string(o.rank);
    }
    // The loader's work per image (decode a small PNG, crop, flip) is a few percent of the
    // model's, so by default it gets one thread that shares the cores with libtorch's: a core
    // of its own would sit idle most of the time (the "threads:" line says how busy it was).
    o.loader_threads = loader_threads > 0 ? loader_threads : std::max(1, threads / 8);
    o.torch_threads = loader_threads > 0 ? std::max(1, threads - loader_threads) : threads;
    o.popts.threads = o.loader_threads;
    o.decoders = o.loader_threads;
    o.show_progress = !no_progress && isatty(STDERR_FILENO) != 0;
    return std::nullopt;
}

}  // namespace ferry_examples
