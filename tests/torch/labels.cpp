// SPDX-License-Identifier: Apache-2.0
/// \file
/// Labels through collate and to_torch: `to_torch` of a pair or tuple of ferry tensors gives
/// torch tensors over the same memory, element by element; `batch(64).map(collate)
/// .map(to_torch)` over (image, label) samples gives (images, labels).
#include <torch/torch.h>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <mutex>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/collate.hpp"
#include "ferry/ferry.hpp"
#include "ferry/torch.hpp"

namespace labels_test {

/// Item i's "image": a u8 [4, 5, 1] tensor whose pixel k is (i * 7 + k) mod 256.
ferry::tensor image_of(std::int64_t i) {
    ferry::tensor t(ferry::dtype::u8, {4, 5, 1});
    for (int k = 0; k < 20; ++k)
        t.data_as<std::uint8_t>()[k] = static_cast<std::uint8_t>(i * 7 + k);
    return t;
}

/// An i64 [n] tensor holding first, first + 1, ...
ferry::tensor counting(std::int64_t n, std::int64_t first) {
    ferry::tensor t(ferry::dtype::i64, {n});
    for (std::int64_t k = 0; k < n; ++k) t.data_as<std::int64_t>()[k] = first + k;
    return t;
}

static_assert(std::is_same_v<decltype(ferry::to_torch(
                                 std::declval<const std::pair<ferry::tensor, ferry::tensor>&>())),
                             std::pair<torch::Tensor, torch::Tensor>>);
static_assert(std::is_same_v<
              decltype(ferry::to_torch(
                  std::declval<const std::tuple<ferry::tensor, ferry::tensor, ferry::tensor>&>())),
              std::tuple<torch::Tensor, torch::Tensor, torch::Tensor>>);

}  // namespace labels_test

BOOST_AUTO_TEST_SUITE(torch_labels)
using namespace labels_test;

// to_torch of a pair converts each tensor without a copy: the same data pointers, dtypes,
// shapes and values.
BOOST_AUTO_TEST_CASE(to_torch_of_a_pair_shares_each_tensor) {
    const std::pair<ferry::tensor, ferry::tensor> batch{image_of(3), counting(6, 10)};
    const auto [x, y] = ferry::to_torch(batch);
    BOOST_TEST(x.data_ptr() == batch.first.data());
    BOOST_TEST(y.data_ptr() == batch.second.data());
    BOOST_TEST(x.scalar_type() == torch::kByte);
    BOOST_TEST(y.scalar_type() == torch::kLong);
    BOOST_TEST(x.sizes().vec() == (std::vector<std::int64_t>{4, 5, 1}));
    BOOST_TEST(y.sizes().vec() == (std::vector<std::int64_t>{6}));
    BOOST_TEST(x[3][4][0].item<std::int64_t>() == 3 * 7 + 19);
    BOOST_TEST(y[5].item<std::int64_t>() == 15);
}

// to_torch of a tuple converts each element without a copy, nested pairs included.
BOOST_AUTO_TEST_CASE(to_torch_of_a_tuple_shares_each_tensor) {
    ferry::tensor weights(ferry::dtype::f64, {2});
    weights.data_as<double>()[0] = 0.5;
    weights.data_as<double>()[1] = -2;
    const std::tuple<ferry::tensor, ferry::tensor, std::pair<ferry::tensor, ferry::tensor>> batch{
        image_of(1), weights, {counting(2, 0), counting(3, 7)}};
    const std::tuple<torch::Tensor, torch::Tensor, std::pair<torch::Tensor, torch::Tensor>> out =
        ferry::to_torch(batch);
    BOOST_TEST(std::get<0>(out).data_ptr() == std::get<0>(batch).data());
    BOOST_TEST(std::get<1>(out).data_ptr() == weights.data());
    BOOST_TEST(std::get<2>(out).first.data_ptr() == std::get<2>(batch).first.data());
    BOOST_TEST(std::get<2>(out).second.data_ptr() == std::get<2>(batch).second.data());
    BOOST_TEST(std::get<1>(out).scalar_type() == torch::kDouble);
    BOOST_TEST(std::get<1>(out)[1].item<double>() == -2.0);
    BOOST_TEST(std::get<2>(out).second[2].item<std::int64_t>() == 9);
}

// The README's loop with labels: batch(64).map(collate).map(to_torch) over (image, label)
// samples gives (images u8 [64, H, W, C], labels i64 [64]) over collate's memory, in order.
BOOST_AUTO_TEST_CASE(a_pipeline_gives_images_and_labels_as_torch_tensors) {
    std::vector<std::int64_t> ids(150);
    for (std::int64_t i = 0; i < 150; ++i) ids[static_cast<std::size_t>(i)] = i;
    std::mutex m;
    std::set<const void*> collated;  // every batch's memory as collate made it
    std::vector<std::pair<torch::Tensor, torch::Tensor>> kept;
    {
        auto pipe = ferry::from(ids)
                        .map(
                            [](std::int64_t i) {
                                return std::pair{image_of(i), i % 10};
                            },
                            4)
                        .batch(64)
                        .map(ferry::ops::collate)
                        .map([&](std::pair<ferry::tensor, ferry::tensor> b) {
                            const std::lock_guard lock(m);
                            collated.insert(b.first.data());
                            collated.insert(b.second.data());
                            return b;
                        })
                        .map(ferry::to_torch)
                        .build({.threads = 2});
        for (auto& [images, labels] : pipe) kept.emplace_back(images, labels);
    }
    BOOST_REQUIRE(kept.size() == 3U);  // 64, 64 and 22
    std::int64_t next = 0;
    for (const auto& [images, labels] : kept) {
        BOOST_TEST(collated.count(images.data_ptr()) == 1U);  // no copy
        BOOST_TEST(collated.count(labels.data_ptr()) == 1U);
        BOOST_TEST(images.scalar_type() == torch::kByte);
        BOOST_TEST(labels.scalar_type() == torch::kLong);
        BOOST_TEST(images.sizes().vec() == (std::vector<std::int64_t>{labels.size(0), 4, 5, 1}));
        BOOST_TEST(labels.dim() == 1);
        for (std::int64_t b = 0; b < labels.size(0); ++b, ++next) {
            BOOST_TEST(labels[b].item<std::int64_t>() == next % 10);
            BOOST_TEST(images[b][2][3][0].item<std::int64_t>() == (next * 7 + 13) % 256);
        }
    }
    BOOST_TEST(next == 150);
    BOOST_TEST(kept.back().second.size(0) == 22);
}

BOOST_AUTO_TEST_SUITE_END()
