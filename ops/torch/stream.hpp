// SPDX-License-Identifier: Apache-2.0
/// \file
/// torch's current CUDA stream, for `to_torch(cuda_tensor)`; the one place that needs c10_cuda.
#pragma once

namespace ferry::detail {

/// torch's current `cudaStream_t` on `device` (`c10::cuda::getCurrentCUDAStream`). Throws
/// `ferry::invalid_argument` where libtorch was built without CUDA.
[[nodiscard]] void* torch_current_cuda_stream(int device);

}  // namespace ferry::detail
