// SPDX-License-Identifier: Apache-2.0
/// \file
/// The umbrella header alone: the ctest `cuda.umbrella_header_has_no_cuda` lists what it includes
/// and fails if <ferry/cuda.hpp> is among them (code that never copies to a GPU sees no CUDA
/// names).
#include "ferry/ferry.hpp"

int main() {}
