// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::cuda` when ferry is built without CUDA (`FERRY_CUDA=OFF`, or AUTO without a toolkit):
/// no device, and `to_cuda()` / the runtime pools fail at `build()` / construction with a clear
/// error. The pools over an injected `cuda::backend` still work (they are plain C++).
#include <string>

#include "ferry/cuda_tensor.hpp"
#include "ferry/error.hpp"

namespace ferry::cuda {

int device_count() noexcept {
    return 0;
}

bool built_with_cuda() noexcept {
    return false;
}

std::shared_ptr<backend> runtime_backend(int device) {
    throw cuda_error(0,
                     "ferry was built without CUDA (FERRY_CUDA=OFF, or no CUDA Toolkit found "
                     "when it was configured): no CUDA runtime for device " +
                         std::to_string(device) + "; to_cuda() and the CUDA pools need one");
}

}  // namespace ferry::cuda
