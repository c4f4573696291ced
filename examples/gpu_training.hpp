// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image trainer's GPU path: u8 batches collated into the transfer's pinned memory, carried
/// by `.to_cuda()` and normalized on the device, and the training loop of the GPU model
/// (`gpu_mlp`, image_trainer_gpu.hpp). Included only where ferry's CUDA backend is built
/// (`FERRY_TRAINER_GPU`).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "ferry/cuda.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"
#include "image_folder.hpp"
#include "image_trainer_gpu.hpp"
#include "mlp.hpp"
#include "progress.hpp"
#include "trainer_options.hpp"
#include "trainer_pipeline.hpp"

namespace ferry_examples {

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

inline pinned_batch collate_pinned(std::vector<gray_sample> samples) {
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

}  // namespace ferry_examples

/// How a `pinned_batch` goes to the GPU: both tensors, on the transfer's stream.
template <>
struct ferry::cuda_transfer<ferry_examples::pinned_batch> {
    ferry_examples::device_batch operator()(ferry_examples::pinned_batch b,
                                            ferry::cuda::transfer_context& ctx) const {
        return {ctx.copy(b.pixels), ctx.copy(b.labels)};
    }
};

namespace ferry_examples {

/// The pipeline ends in `.to_cuda()` (the copy and the u8 -> f32 normalize on the device); the
/// model trains on its own stream, which waits for each batch's copy without blocking the host.
/// The test split is decoded once on the host and uploaded once.
inline void train_on_gpu(const dataset& data, const mlp& init, const trainer_options& o,
                         int device) {
    const int classes = static_cast<int>(data.classes.size());
    gpu_mlp model(init, device);
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
        const auto t0 = std::chrono::steady_clock::now();
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
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        last_accuracy = model.test_size() > 0 ? static_cast<double>(model.test_correct()) /
                                                    static_cast<double>(model.test_size())
                                              : 0;
        print_epoch(epoch, o, loss_sum, batches, last_accuracy, seen, secs);
    }
    print_summary(train, last_accuracy, classes, o);
}

}  // namespace ferry_examples
