// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: to_cuda() without <ferry/cuda.hpp>, which the umbrella header does not pull
/// in. The ctest `cuda.to_cuda_asks_for_its_header` compiles it and expects the message that says
/// which header to include.
#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{}).to_cuda();
    (void)b;
}
