// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry::torch: a pipeline that collates batches and ends in
/// `.map(ferry::to_torch)`, built through `find_package(ferry COMPONENTS ferry torch)`. Checks
/// that each torch tensor is the collated batch itself (same data pointer), with its shape, type
/// and values, and that it stays valid after the pipeline is gone. Exits non-zero on a mismatch.

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <vector>

#include <ferry/collate.hpp>
#include <ferry/ferry.hpp>
#include <ferry/torch.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "package test (torch): FAILED: %s\n", what);
        ++failures;
    }
}

/// Item i as a 2x3 f32 tensor whose elements are i*10 + position.
ferry::tensor features(std::int64_t i) {
    ferry::tensor t(ferry::dtype::f32, {2, 3});
    for (int k = 0; k < 6; ++k) t.data_as<float>()[k] = static_cast<float>(i * 10 + k);
    return t;
}

}  // namespace

int main() {
    std::vector<std::int64_t> ids(20);
    for (std::int64_t i = 0; i < 20; ++i) ids[static_cast<std::size_t>(i)] = i;

    std::mutex m;
    std::set<const void*> collated;  // each batch's memory, as collate made it
    std::vector<torch::Tensor> kept;
    {
        auto pipe = ferry::from(ids)
                        .map(features, 2)
                        .batch(8)
                        .map(ferry::ops::collate)
                        .map([&](ferry::tensor b) {
                            const std::lock_guard lock(m);
                            collated.insert(b.data());
                            return b;
                        })
                        .map(ferry::to_torch)
                        .build({.threads = 2});
        for (torch::Tensor& x : pipe) kept.push_back(x);
    }  // the pipeline is gone; the torch tensors keep ferry's batches alive

    check(kept.size() == 3, "3 batches (20 items in batches of 8)");
    std::int64_t next = 0;
    for (const torch::Tensor& x : kept) {
        check(collated.count(x.data_ptr()) == 1,
              "the torch tensor is the collated batch (no copy)");
        check(x.scalar_type() == torch::kFloat, "f32 becomes torch::kFloat");
        check(x.device().is_cpu(), "on the CPU");
        check(x.dim() == 3 && x.size(1) == 2 && x.size(2) == 3, "shape [batch, 2, 3]");
        check(x.is_contiguous(), "contiguous, as collate made it");
        const float* v = x.data_ptr<float>();
        for (std::int64_t b = 0; b < x.size(0); ++b, ++next) {
            check(v[b * 6 + 5] == static_cast<float>(next * 10 + 5), "values, in order");
        }
    }
    check(next == 20, "all 20 items delivered");
    check(!kept.empty() && kept.back().size(0) == 4, "the last batch holds 4");

    if (failures != 0) return 1;
    std::printf("package test (torch): %zu batches as torch tensors over ferry's memory OK\n",
                kept.size());
    return 0;
}
