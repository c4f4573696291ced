// This program demonstrates ferry feeding a libtorch model, the way a C++ training job is
// written: image files, shuffled per epoch and split over ranks by ferry::sampling -> read (I/O
// threads) -> decode + augment (a random crop with padding and a flip, seeded per item by
// ferry::item_rng) -> batch -> collate into one u8 N x H x W x C tensor -> ferry::to_torch (no
// copy) -> a small residual CNN (torch_model.hpp) trained with AdamW and a cosine schedule, with
// test accuracy every epoch.
//
// Data: by default Fashion-MNIST from Debian's dataset-fashion-mnist, unpacked on first run into
// an image folder of PNG files (as image_trainer does); or --data DIR with DIR/train/<class>/*
// and DIR/test/<class>/* (converted to gray, resized to --size).
//
// Ranks (data parallel): with --world-size W, or under torchrun / mpirun / srun
// (ferry::world::from_environment()), the ranks meet through libtorch's c10d TCPStore at
// MASTER_ADDR:MASTER_PORT (default 127.0.0.1:29500) and a ProcessGroupGloo; each trains on its
// ceil(n / W) items of every epoch, and gradients are averaged every step (torch_ranks.hpp), so
// the ranks' models stay bit-identical.
//
// Several folders: --mix DIR:WEIGHT,... trains on their train splits drawn by weight
// (ferry::mix, training_mix.hpp), labelled and tested by the main data's classes and test split.
//
// Checkpoints: --checkpoint FILE saves the model, the optimizer and ferry's pipeline state
// (torch_checkpoint.hpp) every --checkpoint-every steps; --resume goes on from FILE mid-epoch
// with exactly the batches an uninterrupted run would have trained on.
//
//   torch_trainer [--data DIR] [--epochs 5] [--threads N] [--max-items N] [--seed S]
//                 [--world-size W --rank R] [--checkpoint FILE [--resume]] [--no-progress]
//                 [--mix DIR:WEIGHT,...]
//   torch_trainer --help

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache_dir.hpp"
#include "checkpoint.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"
#include "ferry/torch.hpp"
#include "ferry/world.hpp"
#include "image_folder.hpp"
#include "progress.hpp"
#include "torch_checkpoint.hpp"
#include "torch_model.hpp"
#include "torch_options.hpp"
#include "torch_ranks.hpp"
#include "trainer_options.hpp"
#include "trainer_pipeline.hpp"
#include "training_mix.hpp"

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;
using namespace ferry_examples;

namespace {

// --- the pipeline ----------------------------------------------------------------------------

/// A decoded (and for training, augmented) u8 image, its label and its dataset index.
struct torch_sample {
    ferry::image pixels;
    int label = 0;
    std::uint64_t index = 0;
};

/// What the training loop takes: images as libtorch's u8 N x H x W x C tensor (the memory
/// ferry's collate filled: to_torch does not copy), labels as int64, and the dataset indices.
struct torch_batch {
    torch::Tensor images;
    torch::Tensor labels;
    std::vector<std::uint64_t> indices;
};

torch_batch to_torch_batch(std::vector<torch_sample> samples) {
    torch_batch b;
    std::vector<ferry::image> images;
    std::vector<std::int64_t> labels;
    images.reserve(samples.size());
    for (auto& s : samples) {
        images.push_back(std::move(s.pixels));
        labels.push_back(s.label);
        b.indices.push_back(s.index);
    }
    b.images = ferry::to_torch(ferry::ops::collate(std::move(images)));
    b.labels = torch::tensor(labels, torch::kLong);
    return b;
}

/// Gray, size x size.
ferry::image decode(const encoded& e, int size) {
    return ferry::ops::decode_image(
        e.data, {.format = ferry::pixel_format::gray, .resize = ferry::image_size{size, size}});
}

/// The training augmentation, torchvision's RandomCrop(size, padding) + RandomHorizontalFlip:
/// the image padded with black by `pad` pixels each side (center_crop pads), a random size x
/// size window of that, mirrored on a coin flip. The numbers come from ferry::item_rng: the same
/// for the same (seed, epoch, item) whatever the thread count, rank or resume point.
ferry::image augment(ferry::image img, const ferry::item_info& info, int pad) {
    auto rng = ferry::item_rng(info);
    if (pad > 0) {
        const int w = img.width();
        const int h = img.height();
        const ferry::image padded = ferry::ops::center_crop(img, w + 2 * pad, h + 2 * pad);
        const int x = static_cast<int>(rng() % static_cast<std::uint64_t>(2 * pad + 1));
        const int y = static_cast<int>(rng() % static_cast<std::uint64_t>(2 * pad + 1));
        img = ferry::ops::crop(padded, {x, y, w, h});
    }
    if ((rng() & 1) != 0) img = ferry::ops::horizontal_flip(std::move(img));
    return img;
}

auto train_pipeline(const dataset& data, const torch_options& o,
                    const ferry::pipeline_options& popts, const training_mix* mix) {
    // One folder sampled over the ranks, or several drawn by weight (--mix): read the same way.
    auto files = mix != nullptr
                     ? mixed_training_source(*mix, o).map(read_item,
                                                          {
                                                              .concurrency = o.read_concurrency,
                                                              .name = "read",
                                                              .executor = ferry::io,
                                                          })
                     : read_training_files(data.train, o);
    return std::move(files)
        .map(
            [&o](const encoded& e, const ferry::item_info& info) {
                ferry::image img = decode(e, o.size);
                if (o.augment) img = augment(std::move(img), info, o.pad);
                return torch_sample{std::move(img), e.label, info.index};
            },
            {.concurrency = o.decoders, .name = "decode+augment", .on_error = ferry::skip})
        .batch(static_cast<std::size_t>(o.batch_size))
        .map(to_torch_batch, {.name = "collate+to_torch"})
        .build(popts);
}

auto test_pipeline(const dataset& data, const torch_options& o) {
    return ferry::from(data.test)
        .map(read_item, {.concurrency = o.read_concurrency, .name = "read", .executor = ferry::io})
        .map(
            [size = o.size](const encoded& e) {
                return torch_sample{decode(e, size), e.label};
            },
            {.concurrency = o.decoders, .name = "decode", .on_error = ferry::skip})
        .batch(256)
        .map(to_torch_batch, {.name = "collate+to_torch"})
        .build(o.popts);
}

/// The model's input: u8 N x H x W x C -> float N x C x H x W, normalized (in libtorch).
torch::Tensor model_input(const torch::Tensor& images) {
    return images.permute({0, 3, 1, 2})
        .to(torch::kFloat)
        .div_(255.0)
        .sub_(pixel_mean)
        .div_(pixel_std);
}

// --- training ----------------------------------------------------------------------------------

/// The schedule's rate (image_trainer's: cosine from --lr to 0), ramped up linearly over the
/// first 3% of the steps, as is usual for a fresh batch-norm network.
float learning_rate(const torch_options& o, std::size_t step, std::size_t steps) {
    const double warmup = std::max(1.0, 0.03 * static_cast<double>(steps));
    return o.lr_at(step, steps) *
           static_cast<float>(std::min(1.0, static_cast<double>(step + 1) / warmup));
}

/// A checkpoint that does not fit this run (main says which file and exits 2).
struct resume_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <class Pipeline>
double test_accuracy(classifier& model, Pipeline& test) {
    torch::NoGradGuard no_grad;
    model->eval();
    std::int64_t correct = 0;
    std::int64_t tested = 0;
    for (const torch_batch& b : test) {
        correct +=
            model->forward(model_input(b.images)).argmax(1).eq(b.labels).sum().item<std::int64_t>();
        tested += b.labels.size(0);
    }
    model->train();
    return tested > 0 ? static_cast<double>(correct) / static_cast<double>(tested) : 0;
}

void train(const dataset& data, const training_mix* mix, const torch_options& o, classifier& model,
           torch::optim::AdamW& optimizer, const std::string& model_shape,
           std::optional<train_position> resume, rank_group* ranks) {
    const int classes = static_cast<int>(data.classes.size());
    ferry::pipeline_options train_opts = o.popts;
    if (resume) train_opts.resume_from = resume->loader;
    // build() refuses a state saved by another pipeline: other data, seed, ranks or batch size.
    auto train = [&] {
        try {
            return train_pipeline(data, o, train_opts, mix);
        } catch (const ferry::invalid_argument& e) {
            if (!resume) throw;
            throw resume_error(e.what());
        }
    }();
    auto test = test_pipeline(data, o);
    item_record record(o.record_items_path);

    const std::size_t per_epoch = mix != nullptr ? mixed_items(*mix, o) : training_items(data, o);
    const std::size_t steps = total_steps(per_epoch, o);
    train_position pos = resume.value_or(train_position{});
    double last_accuracy = 0;
    const auto run_start = steady::now();
    model->train();
    for (; pos.epoch <= o.epochs; ++pos.epoch) {
        progress bar("epoch " + std::to_string(pos.epoch) + "/" + std::to_string(o.epochs),
                     per_epoch, o.show_progress);
        record.epoch(pos.epoch);
        const auto t0 = steady::now();
        std::size_t seen_here = 0;
        double waited = 0;  // seconds the model waited for a batch
        auto asked = steady::now();
        for (const torch_batch& b : train) {
            waited += std::chrono::duration<double>(steady::now() - asked).count();
            const float lr = learning_rate(o, pos.step++, steps);
            for (auto& group : optimizer.param_groups()) {
                static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
            }
            optimizer.zero_grad();
            torch::Tensor loss = torch::nn::functional::cross_entropy(
                model->forward(model_input(b.images)), b.labels);
            loss.backward();
            if (ranks != nullptr) ranks->average(*model);
            optimizer.step();
            pos.loss_sum += loss.item<double>();
            pos.seen += b.indices.size();
            seen_here += b.indices.size();
            ++pos.batches;
            record.items(b.indices);
            bar.update(pos.seen);
            if (o.stop_after_steps > 0 && pos.step == o.stop_after_steps) {
                std::cerr << "torch_trainer: --stop-after-steps " << o.stop_after_steps
                          << ": exiting with status 3 as a crash would, saving nothing\n";
                std::_Exit(3);
            }
            if (!o.checkpoint_path.empty() && pos.step % o.checkpoint_every == 0) {
                // Inside the loop: after it the epoch is over and state() is the next one's start.
                pos.loader = train.state();
                save_torch_checkpoint(o.checkpoint_path, pos, model_shape, *model, optimizer);
                record.checkpoint();
            }
            asked = steady::now();
        }
        bar.finish();
        const double secs = std::chrono::duration<double>(steady::now() - t0).count();
        last_accuracy = test_accuracy(model, test);
        print_epoch(pos.epoch, o, pos.loss_sum, pos.batches, last_accuracy, seen_here, secs);
        std::printf("  the model waited %.1f s of %.1f s for data\n", waited, secs);
        pos.loss_sum = 0;
        pos.seen = 0;
        pos.batches = 0;
    }
    const double total = std::chrono::duration<double>(steady::now() - run_start).count();
    print_summary(train, last_accuracy, classes, o);
    std::printf("time: %.1f s training and testing (%d epochs)\n", total, o.epochs);
    std::cout << "weights: " << state_hash(*model) << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
    torch_options o;
    if (const auto exit_status = parse_torch_command_line(argc, argv, o)) return *exit_status;

    // A checkpoint that cannot be read fails now, before any data is unpacked.
    std::string checkpoint_bytes;
    if (o.resume) {
        try {
            checkpoint_bytes = read_checkpoint_file(o.checkpoint_path);
        } catch (const ferry::error& e) {
            std::cerr << "torch_trainer: cannot resume: " << e.what() << '\n';
            return 2;
        }
    }

    dataset data = load_training_data(o);
    std::optional<training_mix> mix;
    if (!o.mix.empty()) mix = load_training_mix(o.mix, data.classes, o);
    const int classes = static_cast<int>(data.classes.size());

    // Fixed thread counts and a seeded initialisation: libtorch on the CPU is then
    // bit-reproducible, which the resume and rank checks rely on.
    torch::set_num_threads(o.torch_threads);
    torch::manual_seed(o.seed);
    std::cout << "threads: libtorch " << o.torch_threads << " intra-op, ferry loader "
              << o.loader_threads << " compute + " << o.read_concurrency << " I/O" << std::endl;

    classifier model(1, o.size, o.width, classes);
    const std::string model_shape = "CNN width " + std::to_string(o.width) + ", " +
                                    std::to_string(o.size) + "x" + std::to_string(o.size) + ", " +
                                    std::to_string(classes) + " classes";
    std::int64_t weights = 0;
    for (const auto& p : model->parameters()) weights += p.numel();
    torch::optim::AdamW optimizer(model->parameters(),
                                  torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
    std::cout << "model: " << model_shape << ", " << weights << " weights; AdamW lr " << o.lr
              << (o.schedule == "cosine" ? " (cosine to 0)" : "") << " weight decay "
              << o.weight_decay << ", batch " << o.batch_size << "; augment: "
              << (!o.augment  ? std::string("none")
                  : o.pad > 0 ? "crop with padding " + std::to_string(o.pad) + ", flip"
                              : std::string("flip"))
              << std::endl;

    std::unique_ptr<rank_group> ranks;
    if (o.world_size > 1) {
        try {
            ranks = std::make_unique<rank_group>(o.rank, o.world_size, std::chrono::seconds(60));
            ranks->broadcast_state(*model);
        } catch (const c10::Error& e) {
            std::cerr << "torch_trainer: rank " << o.rank
                      << " cannot join the others: " << e.what_without_backtrace() << '\n';
            return 1;
        } catch (const std::exception& e) {
            std::cerr << "torch_trainer: rank " << o.rank << " cannot join the others: " << e.what()
                      << '\n';
            return 1;
        }
        std::cout << "rank " << o.rank << "/" << o.world_size << ": joined the Gloo group at "
                  << ranks->endpoint() << "; gradients averaged every step" << std::endl;
    }

    std::optional<train_position> resume;
    if (o.resume) {
        try {
            resume = load_torch_checkpoint(checkpoint_bytes, model_shape, *model, optimizer);
        } catch (const ferry::error& e) {
            std::cerr << "torch_trainer: cannot resume from " << o.checkpoint_path << ": "
                      << e.what() << '\n';
            return 2;
        }
        std::cout << "resuming from " << o.checkpoint_path << ": epoch " << resume->epoch << "/"
                  << o.epochs << ", step " << resume->step << ", item " << resume->loader.position()
                  << " of the epoch" << std::endl;
    }
    try {
        train(data, mix ? &*mix : nullptr, o, model, optimizer, model_shape, resume, ranks.get());
    } catch (const resume_error& e) {
        std::cerr << "torch_trainer: cannot resume from " << o.checkpoint_path << ": " << e.what()
                  << '\n';
        return 2;
    } catch (const c10::Error& e) {
        std::cerr << "torch_trainer: training failed: " << e.what_without_backtrace() << '\n';
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "torch_trainer: training failed: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
