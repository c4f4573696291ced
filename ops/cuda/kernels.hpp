// SPDX-License-Identifier: Apache-2.0
/// \file
/// The device kernels' launchers (ops/cuda/normalize.cu), callable from host code built by the
/// C++ compiler.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ferry::cuda::detail {

/// Most channels the normalize kernel takes (its per-channel constants travel by value).
inline constexpr int max_normalize_channels = 16;

/// Queues `dst = src * scale[c] + shift[c]` as floats on `stream`: `src` is `n` images of
/// `h x w x c` bytes; `dst` is laid out `c x h x w` per image when `chw`, else `h x w x c`.
/// Returns the launch's error (cudaSuccess when queued).
cudaError_t launch_normalize(float* dst, const std::uint8_t* src, std::int64_t n, std::int64_t h,
                             std::int64_t w, std::int64_t c, const float* scale, const float* shift,
                             bool chw, cudaStream_t stream);

}  // namespace ferry::cuda::detail
