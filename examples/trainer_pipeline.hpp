// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image trainer's pipeline pieces, shared by its CPU and GPU training loops: the element
/// types, reading and decode + augment, how the training set is visited and split over ranks, the
/// test pipeline, and the lines printed after every epoch and at the end.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "cache_dir.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"
#include "image_folder.hpp"
#include "trainer_options.hpp"

namespace ferry_examples {

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

inline batch collate_samples(std::vector<sample> samples) {
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
inline constexpr float pixel_mean = 0.286F;
inline constexpr float pixel_std = 0.353F;

inline encoded read_item(const item& it) {
    return {ferry::ops::read_file(it.path), it.label};
}

/// A training image: gray, then (with augmentation) a coin-flip mirror and, with `crop_scale`
/// below 1, a random resized crop; else resized to size x size. The numbers come from
/// `ferry::item_rng`: the same for the same (seed, epoch, item) whatever the thread count or the
/// rank that gets the item, and new ones every epoch.
inline ferry::image decode_train_image(const encoded& e, const ferry::item_info& info,
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
inline ferry::sampling train_sampling(const trainer_options& o) {
    return {.shuffle = true,
            .seed = o.seed,
            .rank = o.rank,
            .world_size = o.world_size,
            .remainder = ferry::remainder::pad};
}

/// The training source and its read stage: this rank's files of each epoch, read on ferry's I/O
/// threads.
inline auto read_training_files(const std::vector<item>& items, const trainer_options& o) {
    return ferry::from(items, train_sampling(o))
        .map(read_item, {.concurrency = o.read_concurrency, .name = "read", .executor = ferry::io});
}

/// This rank's training images per epoch: ceil(n / world_size).
inline std::size_t training_items(const dataset& data, const trainer_options& o) {
    return static_cast<std::size_t>(ferry::sampler(data.train.size(), train_sampling(o)).size());
}

/// The trainers' data: `--data`, else Fashion-MNIST unpacked under `--cache`, cut to
/// `--max-items` / `--max-test-items` random subsets of all classes (not the first classes in
/// folder order), the same on every rank (seeded by --seed alone, so that the ranks split the
/// same images); prints its "data: ..." line. Exits 2 naming the folder when it has fewer than
/// two classes or no train or test images.
inline dataset load_training_data(const trainer_options& o) {
    const fs::path root = !o.data_dir.empty()
                              ? fs::path(o.data_dir)
                              : fashion_mnist(ferry_examples::cache_dir(o.cache_dir));
    dataset data = load_dataset(root);
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
        std::exit(2);
    }
    std::cout << "data: " << root.string() << ": " << data.train.size() << " train / "
              << data.test.size() << " test images, " << data.classes.size() << " classes";
    if (o.world_size > 1) {
        std::cout << "; rank " << o.rank << "/" << o.world_size << " trains on "
                  << training_items(data, o) << " training images per epoch";
    }
    std::cout << std::endl;
    return data;
}

/// SGD steps in the whole run, over which the learning rate schedule runs (a batch of skipped
/// files may end an epoch a step early; the schedule does not mind).
inline std::size_t total_steps(std::size_t per_epoch, const trainer_options& o) {
    const auto batch = static_cast<std::size_t>(o.batch_size);
    return static_cast<std::size_t>(o.epochs) * ((per_epoch + batch - 1) / batch);
}

/// Test: same decode, no augmentation, in file order, normalized on the host.
inline auto test_pipeline(const std::vector<item>& items, const trainer_options& o) {
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

inline void print_epoch(int epoch, const trainer_options& o, double loss_sum, std::size_t batches,
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

}  // namespace ferry_examples
