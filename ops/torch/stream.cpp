// SPDX-License-Identifier: Apache-2.0
/// \file
/// torch's current CUDA stream where libtorch has CUDA (FERRY_TORCH_CUDA, set by CMakeLists.txt
/// when Torch's c10_cuda target exists); otherwise an error naming why.
#include "stream.hpp"

#include <string>

#include "ferry/error.hpp"

#if FERRY_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace ferry::detail {

void* torch_current_cuda_stream(int device) {
#if FERRY_TORCH_CUDA
    return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
    throw invalid_argument("to_torch: a CUDA tensor on cuda:" + std::to_string(device) +
                           ", and this libtorch was built without CUDA");
#endif
}

}  // namespace ferry::detail
