// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: to_cuda() on an element type without a ferry::cuda_transfer. The ctest
/// `cuda.to_cuda_rejects_unknown_types` compiles it and expects the static_assert's message.
#include "ferry/cuda.hpp"
#include "ferry/ferry.hpp"

struct sample {
    int label;
};

int main() {
    auto b = ferry::from(std::vector<sample>{}).to_cuda();
    (void)b;
}
