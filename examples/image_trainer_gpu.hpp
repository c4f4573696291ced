// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image trainer's model on a CUDA device: the same MLP and SGD as `mlp` (mlp.hpp), with
/// cuBLAS GEMMs and a few small kernels (image_trainer_gpu.cu). Built only when ferry's CUDA
/// backend is; includes no CUDA header, so the trainer's .cpp stays plain C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "mlp.hpp"

namespace ferry_examples {

/// `mlp` on a GPU. Its work is queued on a stream of its own (`stream()`): `train_step` and
/// `add_correct` return at once; `take_loss_sum`, `take_correct`, `test_correct` and `copy_to`
/// wait for it. Numerically the CPU model's algorithm (same layout, initialisation, loss and
/// update), up to float rounding order in the GEMMs:
/// \code
///   ferry_examples::mlp cpu(784, 64, 10, seed);
///   ferry_examples::gpu_mlp gpu(cpu, 0);             // the same weights, on device 0
///   for (const device_batch& b : pipe) {             // from .to_cuda(...)
///       b.pixels.wait(gpu.stream());                 // no host blocking
///       gpu.train_step(x, labels, n, lr, 0.9F);
///   }
///   double loss = gpu.take_loss_sum();               // waits; sum of the batches' mean losses
/// \endcode
/// Errors (CUDA runtime or cuBLAS) throw `ferry::cuda_error` naming the call.
class gpu_mlp {
  public:
    /// Copies `init`'s weights and momentum to `device` and makes the stream and cuBLAS handle.
    gpu_mlp(const mlp& init, int device);
    ~gpu_mlp();
    gpu_mlp(gpu_mlp&&) noexcept;
    gpu_mlp& operator=(gpu_mlp&&) noexcept;
    gpu_mlp(const gpu_mlp&) = delete;
    gpu_mlp& operator=(const gpu_mlp&) = delete;

    /// The `cudaStream_t` all of the model's work runs on; make it wait for input with
    /// `cuda_tensor::wait(stream())`.
    [[nodiscard]] void* stream() const noexcept;
    /// E.g. `"cuda:0 (NVIDIA H200)"`.
    [[nodiscard]] std::string device_name() const;

    /// Queues one SGD step (the CPU model's `train_step`) on a batch in device memory: `x` is
    /// `n x in` floats (row-major), `labels` `n` class indices in `[0, out)`. The batch's mean
    /// cross-entropy loss is added to a device-side sum (see `take_loss_sum`). `x` and `labels`
    /// must stay valid until the queued work has run.
    void train_step(const float* x, const std::int32_t* labels, int n, float lr, float momentum);
    /// Waits for the queued steps; returns the sum of their mean losses since the last call and
    /// resets it.
    [[nodiscard]] double take_loss_sum();

    /// Queues the prediction of `n` device-resident samples and counts those equal to `labels`.
    void add_correct(const float* x, const std::int32_t* labels, int n);
    /// Waits; returns the correct predictions counted since the last call and resets the count.
    [[nodiscard]] std::size_t take_correct();

    /// Uploads a test set once (`x`: `labels.size() x in` floats, row-major), replacing any
    /// earlier one.
    void set_test_set(std::span<const float> x, std::span<const std::int32_t> labels);
    /// Correct predictions on the uploaded test set with the current weights (waits).
    [[nodiscard]] std::size_t test_correct();
    [[nodiscard]] std::size_t test_size() const noexcept;

    /// Waits, then copies the weights and momentum back into `model` (same shape).
    void copy_to(mlp& model) const;

    struct state;  ///< the implementation (device buffers, stream, cuBLAS handle)

  private:
    std::unique_ptr<state> state_;
};

}  // namespace ferry_examples
