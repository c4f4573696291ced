// SPDX-License-Identifier: Apache-2.0
/// \file
/// A pipeline that ends in `.map(ferry::to_torch)`: torch tensors come out over ferry's memory,
/// in order, and stay valid after the pipeline is gone.
#include <torch/torch.h>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

#include "ferry/collate.hpp"
#include "ferry/ferry.hpp"
#include "ferry/torch.hpp"

namespace {

/// Item i as a 2x3 f32 tensor whose elements are i*10 + position.
ferry::tensor features(std::int64_t i) {
    ferry::tensor t(ferry::dtype::f32, {2, 3});
    for (int k = 0; k < 6; ++k) t.data_as<float>()[k] = static_cast<float>(i * 10 + k);
    return t;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(torch_pipeline)

// The README's loop: batches of collated tensors handed to torch, zero-copy, in order, each
// valid after the pipeline that made it is destroyed.
BOOST_AUTO_TEST_CASE(pipeline_ends_in_torch_tensors_over_ferrys_batches) {
    std::vector<std::int64_t> ids(50);
    for (std::int64_t i = 0; i < 50; ++i) ids[static_cast<std::size_t>(i)] = i;
    std::mutex m;
    std::set<const void*> collated;  // every batch's memory as collate made it
    std::vector<torch::Tensor> kept;
    {
        auto pipe = ferry::from(ids)
                        .map(features, 4)
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
    }
    BOOST_REQUIRE(kept.size() == 7u);  // 6 batches of 8, one of 2
    std::int64_t next = 0;
    for (const torch::Tensor& x : kept) {
        BOOST_TEST(collated.count(x.data_ptr()) == 1u);  // the same memory: no copy
        BOOST_TEST(x.scalar_type() == torch::kFloat);
        BOOST_TEST(x.size(1) == 2);
        BOOST_TEST(x.size(2) == 3);
        for (std::int64_t b = 0; b < x.size(0); ++b, ++next) {
            BOOST_TEST(x[b][1][2].item<float>() == static_cast<float>(next * 10 + 5));
        }
    }
    BOOST_TEST(next == 50);
    BOOST_TEST(kept.back().size(0) == 2);
}

BOOST_AUTO_TEST_SUITE_END()
