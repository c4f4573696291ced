// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image trainer's command line: what it can choose (`trainer_options`), its defaults, and
/// `parse_command_line`, which fills them in (CLI11), the rank and world size included.
#pragma once

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <numbers>
#include <optional>
#include <string>

#include "ferry/ferry.hpp"
#include "ferry/world.hpp"

namespace ferry_examples {

/// What the command line chose.
struct trainer_options {
    // The data.
    std::string data_dir;   ///< --data: an image folder; empty: Fashion-MNIST
    std::string cache_dir;  ///< --cache: where Fashion-MNIST is unpacked
    std::size_t max_items = 0;
    std::size_t max_test_items = 0;

    // The training.
    int epochs = 5;
    int batch_size = 64;
    int hidden = 64;
    int size = 28;
    /// The peak learning rate. SGD with momentum 0.9 takes steps of about lr / (1 - 0.9), so
    /// 0.02 moves as far as plain SGD at 0.2 would; 0.05 made the last epochs bounce around.
    float lr = 0.02F;
    float momentum = 0.9F;
    std::string schedule = "cosine";  ///< "cosine" (to 0 at the last step) or "constant"
    std::uint64_t seed = 1;
    bool augment = true;
    /// The random resized crop's smallest area, as a fraction of the image (1: no crop, only
    /// the flip). A 28x28 image has little to spare: 0.7 cost more accuracy than it gave.
    double crop_scale = 1.0;
    std::string device = "auto";  ///< auto, cpu or cuda

    // The ranks: each trains on its part of every epoch (no gradient all-reduce).
    std::size_t rank = 0;
    std::size_t world_size = 1;

    // The loading.
    int threads = 0;  ///< ferry's compute threads; 0: ferry's default
    int read_concurrency = 4;
    int decoders = 1;  ///< decode + augment calls at once (--decode-concurrency, else threads)
    bool show_progress = false;
    std::string trace_path;  ///< --trace: where the training pipeline's spans go (Chrome JSON)

    // Checkpoints (CPU model only).
    std::string checkpoint_path;         ///< --checkpoint: written every `checkpoint_every` steps
    std::size_t checkpoint_every = 100;  ///< --checkpoint-every: SGD steps between checkpoints
    std::string resume_path;             ///< --resume: the checkpoint to continue from
    std::string record_items_path;     ///< --record-items: each trained item's index appended here
    std::size_t stop_after_steps = 0;  ///< --stop-after-steps: exit 3 after this step (a crash)

    ferry::pipeline_options popts;

    /// The learning rate of step `step` (from 0) of `steps`: `lr` throughout, or (cosine) from
    /// `lr` down to 0 along half a cosine.
    [[nodiscard]] float lr_at(std::size_t step, std::size_t steps) const {
        if (schedule != "cosine" || steps == 0) return lr;
        const double t = static_cast<double>(std::min(step, steps)) / static_cast<double>(steps);
        return static_cast<float>(lr * 0.5 * (1.0 + std::cos(std::numbers::pi * t)));
    }
};

/// The ranks the command line did not give (`rank_given`, `world_given`) from the launcher's
/// variables (torchrun, mpirun, srun: `ferry::world::from_environment()`), then checked: a world
/// of at least 1 with the rank below it. Otherwise says why on stderr as `program` and returns
/// the exit status 2.
inline std::optional<int> resolve_ranks(const char* program, trainer_options& o, bool rank_given,
                                        bool world_given) {
    if (!rank_given || !world_given) {
        try {
            const auto w = ferry::world::from_environment();
            if (!rank_given) o.rank = w.rank;
            if (!world_given) o.world_size = w.size;
        } catch (const ferry::error& e) {
            std::cerr << program << ": " << e.what() << "; or pass --rank and --world-size\n";
            return 2;
        }
    }
    if (o.world_size == 0) {
        std::cerr << program << ": --world-size must be at least 1\n";
        return 2;
    }
    if (o.rank >= o.world_size) {
        std::cerr << program << ": --rank " << o.rank << " is not below --world-size "
                  << o.world_size << '\n';
        return 2;
    }
    return std::nullopt;
}

/// Fills `o` from the command line. Returns the exit status when the program should stop now
/// (`--help`, a bad option or a bad rank; the message printed), else nothing.
inline std::optional<int> parse_command_line(int argc, char** argv, trainer_options& o) {
    CLI::App app{
        "Trains a small network on an image folder (default: Fashion-MNIST) fed by ferry.\n"
        "With --world-size W (or under torchrun, mpirun or srun), each rank trains on its "
        "1/W of every epoch; this demo does not all-reduce gradients, so each rank trains a "
        "model of its own."};
    app.option_defaults()->always_capture_default();  // --help shows every default
    bool no_progress = false;
    int decode_concurrency = 0;
    app.add_option("--data", o.data_dir, "image folder with train/<class>/* and test/<class>/*");
    app.add_option("--cache", o.cache_dir,
                   "where Fashion-MNIST is unpacked (default $XDG_CACHE_HOME/ferry or "
                   "~/.cache/ferry)");
    app.add_option("--epochs", o.epochs, "passes over the training set")
        ->check(CLI::PositiveNumber);
    app.add_option("--batch-size", o.batch_size, "images per batch")->check(CLI::PositiveNumber);
    app.add_option("--threads", o.threads, "ferry's compute threads (default: ferry's default)");
    app.add_option("--read-concurrency", o.read_concurrency, "I/O threads reading files")
        ->check(CLI::PositiveNumber);
    app.add_option("--decode-concurrency", decode_concurrency,
                   "decode + augment calls at once (default: the thread count)");
    app.add_option("--max-items", o.max_items,
                   "use at most this many training images (0 = all; the same subset on every "
                   "rank)");
    app.add_option("--max-test-items", o.max_test_items,
                   "use at most this many test images (0 = all)");
    app.add_option("--hidden", o.hidden, "hidden units (0 = softmax regression)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--size", o.size, "images are resized to size x size")
        ->check(CLI::PositiveNumber);
    app.add_option("--lr", o.lr, "peak learning rate (SGD, momentum 0.9)");
    app.add_option("--schedule", o.schedule,
                   "learning rate over the run: cosine (from --lr down to 0 at the last step) "
                   "or constant")
        ->check(CLI::IsMember({"cosine", "constant"}));
    app.add_option("--seed", o.seed, "seed for shuffling, augmentation and initialisation");
    app.add_option("--crop-scale", o.crop_scale,
                   "augmentation: a random resized crop of at least this fraction of the image's "
                   "area (1 = no crop, only the flip)")
        ->check(CLI::Range(0.05, 1.0));
    app.add_option("--device", o.device,
                   "where the model trains: auto (a CUDA GPU when ferry was built with CUDA and "
                   "one is present, else the CPU), cpu, or cuda (device 0; an error without one)")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    // From here on no "=default" in --help: the flags' is "off", the ranks' is the environment's.
    app.option_defaults()->always_capture_default(false);
    app.add_flag("!--no-augment", o.augment, "no random crop or flip");
    auto* rank = app.add_option("--rank", o.rank,
                                "this process's rank (default: from torchrun, Open MPI, MPICH or "
                                "Slurm variables, else 0)");
    auto* world_size = app.add_option("--world-size", o.world_size,
                                      "how many ranks share each epoch (default: from the "
                                      "launcher's variables, else 1); no gradient all-reduce");
    app.add_flag("--no-progress", no_progress, "no progress bar");
    app.add_option("--trace", o.trace_path,
                   "write the training pipeline's call spans to this file (Chrome trace JSON, "
                   "for https://ui.perfetto.dev)");
    app.add_option("--checkpoint", o.checkpoint_path,
                   "every --checkpoint-every steps, save the model, the counters and the "
                   "loader's position to this file (atomically: FILE.tmp, then renamed); CPU "
                   "model only");
    app.add_option("--checkpoint-every", o.checkpoint_every,
                   "SGD steps between checkpoints (default 100)")
        ->check(CLI::PositiveNumber);
    app.add_option("--resume", o.resume_path,
                   "continue from this checkpoint, mid-epoch, exactly where it was saved (the "
                   "same data, --seed, --batch-size, --size, --hidden and ranks); CPU model only");
    // Checks of the checkpoints, for the tests: hidden from --help.
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
            resolve_ranks("image_trainer", o, rank->count() > 0, world_size->count() > 0)) {
        return status;
    }

    if (o.threads > 0) o.popts.threads = o.threads;
    if (!o.trace_path.empty()) o.popts.trace_spans = 4'000'000;  // ~100 MB at most
    o.decoders = decode_concurrency > 0 ? decode_concurrency : std::max(1, o.popts.threads);
    o.show_progress = !no_progress && isatty(STDERR_FILENO) != 0;
    return std::nullopt;
}

}  // namespace ferry_examples
