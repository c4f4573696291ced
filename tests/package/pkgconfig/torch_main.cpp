// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of ferry-torch.pc alone (no engine): `c++ -std=c++20 torch_main.cpp
/// $(pkg-config --cflags --libs ferry-torch)`. A tensor to torch and back, zero-copy both ways,
/// so the program compiles against libtorch's headers and links libferry_torch and libtorch with
/// nothing but what the .pc file says. Exits non-zero on a mismatch.

#include <cstdint>
#include <cstdio>
#include <vector>

#include <ferry/tensor.hpp>
#include <ferry/torch.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "package test (torch, pkg-config): FAILED: %s\n", what);
        ++failures;
    }
}

}  // namespace

int main() {
    ferry::tensor t(ferry::dtype::i32, {2, 3});
    for (int k = 0; k < 6; ++k) t.data_as<std::int32_t>()[k] = 100 + k;

    const torch::Tensor x = ferry::to_torch(t);
    check(x.data_ptr() == t.data(), "to_torch: the same data pointer");
    check(x.scalar_type() == torch::kInt, "i32 becomes torch::kInt");
    check(x.dim() == 2 && x.size(0) == 2 && x.size(1) == 3, "shape [2, 3]");
    check(x.data_ptr<std::int32_t>()[4] == 104, "values");

    const ferry::tensor back = ferry::from_torch(x.t());  // a transposed view: strides kept
    check(back.data() == t.data(), "from_torch: the same data pointer");
    check(back.shape() == std::vector<std::int64_t>({3, 2}), "from_torch: shape [3, 2]");
    check(back.strides() == std::vector<std::int64_t>({1, 3}), "from_torch: strides {1, 3}");
    check(ferry::torch_dtype(ferry::dtype::f32) == torch::kFloat, "torch_dtype(f32)");

    if (failures != 0) return 1;
    std::printf("package test (torch, pkg-config): ferry -> torch -> ferry OK\n");
    return 0;
}
