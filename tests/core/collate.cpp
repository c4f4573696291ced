// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::ops::collate of labelled samples: scalars into 1-D tensors of their dtype, pairs,
/// tuples and plain structs field by field (tensors stacked, scalars gathered), nested ones, the
/// allocator each field's batch comes from, the errors of a wrong shape or an empty batch, and
/// a pipeline that batches (tensor, label) pairs and collates them.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <ferry/collate.hpp>
#include <ferry/ferry.hpp>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../support/ops_support.hpp"

// Named, not anonymous: shared by several cases.
namespace collate_test {

using shape_t = std::vector<std::int64_t>;

/// Sample i's features: an f32 [2, 3] tensor whose element k is i * 10 + k.
ferry::tensor features(std::int64_t i) {
    ferry::tensor t(ferry::dtype::f32, {2, 3});
    for (int k = 0; k < 6; ++k) t.data_as<float>()[k] = static_cast<float>(i * 10 + k);
    return t;
}

/// The elements of a contiguous tensor as `T`s.
template <class T>
std::vector<T> values_of(const ferry::tensor& t) {
    const T* p = t.data_as<T>();
    return {p, p + t.numel()};
}

/// A labelled sample as a user writes it: collate takes it field by field.
struct sample {
    ferry::tensor pixels;
    std::int64_t label = 0;
    float weight = 1;
};

/// An allocator that counts its calls and the bytes asked for.
struct counting_allocator {
    std::shared_ptr<std::vector<std::size_t>> requests =
        std::make_shared<std::vector<std::size_t>>();
    ferry::allocator get() const {
        return [r = requests](std::size_t n) {
            r->push_back(n);
            return ferry::allocate_host(n);
        };
    }
};

// The contract's types: what collate and the builder give for a batch of each kind.
using pair_batch = std::vector<std::pair<ferry::tensor, std::int64_t>>;
static_assert(std::is_same_v<decltype(ferry::ops::collate(std::declval<pair_batch>())),
                             std::pair<ferry::tensor, ferry::tensor>>);
using tuple_batch = std::vector<std::tuple<ferry::tensor, std::int32_t, double>>;
static_assert(std::is_same_v<decltype(ferry::ops::collate(std::declval<tuple_batch>())),
                             std::tuple<ferry::tensor, ferry::tensor, ferry::tensor>>);
static_assert(std::is_same_v<decltype(ferry::ops::collate(std::declval<std::vector<sample>>())),
                             std::tuple<ferry::tensor, ferry::tensor, ferry::tensor>>);
static_assert(std::is_same_v<decltype(ferry::from(std::declval<std::vector<std::int64_t>>())
                                          .map([](std::int64_t i) {
                                              return std::pair{features(i), i};
                                          })
                                          .batch(4)
                                          .map(ferry::ops::collate))::element_type,
                             std::pair<ferry::tensor, ferry::tensor>>);

}  // namespace collate_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(collate)
using namespace collate_test;
using ops_test::expect_throw;

// A batch of (tensor, int64 label) pairs becomes (the tensors stacked, the labels as an i64
// tensor [N]), both in the batch's order: what a training loop takes as (images, labels).
BOOST_AUTO_TEST_CASE(pairs_become_stacked_tensors_and_a_label_tensor_in_order) {
    std::vector<std::pair<ferry::tensor, std::int64_t>> batch;
    for (std::int64_t i = 0; i < 3; ++i) batch.emplace_back(features(i), 7 - 2 * i);
    const auto [x, y] = ferry::ops::collate(std::move(batch));
    BOOST_TEST(x.dtype() == ferry::dtype::f32);
    BOOST_TEST(x.shape() == (shape_t{3, 2, 3}), boost::test_tools::per_element());
    BOOST_TEST(values_of<float>(x) == (std::vector<float>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15,
                                                          20, 21, 22, 23, 24, 25}),
               boost::test_tools::per_element());
    BOOST_TEST(y.dtype() == ferry::dtype::i64);
    BOOST_TEST(y.shape() == (shape_t{3}), boost::test_tools::per_element());
    BOOST_TEST(values_of<std::int64_t>(y) == (std::vector<std::int64_t>{7, 5, 3}),
               boost::test_tools::per_element());
}

// Each arithmetic type with a ferry dtype becomes a 1-D tensor of that dtype holding the values
// in order, alone or as a pair's second field.
BOOST_AUTO_TEST_CASE(scalars_become_a_1d_tensor_of_their_dtype) {
    const auto check = [](auto first, ferry::dtype want) {
        using T = decltype(first);
        const std::vector<T> values{first, static_cast<T>(first + 1), static_cast<T>(first - 3)};
        BOOST_TEST_CONTEXT(ferry::to_string(want)) {
            const ferry::tensor t = ferry::ops::collate(values);
            BOOST_TEST(t.dtype() == want);
            BOOST_TEST(t.shape() == (shape_t{3}), boost::test_tools::per_element());
            BOOST_TEST(values_of<T>(t) == values, boost::test_tools::per_element());

            std::vector<std::pair<ferry::tensor, T>> pairs;
            for (std::size_t i = 0; i < values.size(); ++i)
                pairs.emplace_back(features(0), values[i]);
            const auto labels = ferry::ops::collate(std::move(pairs)).second;
            BOOST_TEST(labels.dtype() == want);
            BOOST_TEST(values_of<T>(labels) == values, boost::test_tools::per_element());
        }
    };
    check(std::int8_t{-100}, ferry::dtype::i8);
    check(std::uint8_t{200}, ferry::dtype::u8);
    check(std::int16_t{-30000}, ferry::dtype::i16);
    check(std::uint16_t{60000}, ferry::dtype::u16);
    check(std::int32_t{-2000000000}, ferry::dtype::i32);
    check(std::int64_t{-9000000000000000000}, ferry::dtype::i64);
    check(9000000000000000000LL, ferry::dtype::i64);  // long long as well as long
    check(0.25F, ferry::dtype::f32);
    check(-1e300, ferry::dtype::f64);
}

// A tuple is collated field by field: tensors stacked, each scalar field a 1-D tensor of its own
// dtype.
BOOST_AUTO_TEST_CASE(tuples_are_collated_field_by_field) {
    std::vector<std::tuple<ferry::tensor, std::int32_t, double, std::uint8_t>> batch;
    for (std::int64_t i = 0; i < 4; ++i) {
        batch.emplace_back(features(i), static_cast<std::int32_t>(100 + i),
                           0.5 * static_cast<double>(i), static_cast<std::uint8_t>(250 + i));
    }
    const auto [x, a, b, c] = ferry::ops::collate(std::move(batch));
    BOOST_TEST(x.shape() == (shape_t{4, 2, 3}), boost::test_tools::per_element());
    BOOST_TEST(values_of<float>(x)[3 * 6 + 5] == 35.0F);
    BOOST_TEST(a.dtype() == ferry::dtype::i32);
    BOOST_TEST(values_of<std::int32_t>(a) == (std::vector<std::int32_t>{100, 101, 102, 103}),
               boost::test_tools::per_element());
    BOOST_TEST(b.dtype() == ferry::dtype::f64);
    BOOST_TEST(values_of<double>(b) == (std::vector<double>{0, 0.5, 1, 1.5}),
               boost::test_tools::per_element());
    BOOST_TEST(c.dtype() == ferry::dtype::u8);
    BOOST_TEST(values_of<std::uint8_t>(c) == (std::vector<std::uint8_t>{250, 251, 252, 253}),
               boost::test_tools::per_element());
}

// A plain struct is collated field by field, in declaration order, into a tuple.
BOOST_AUTO_TEST_CASE(structs_are_collated_field_by_field_into_a_tuple) {
    std::vector<sample> batch;
    for (std::int64_t i = 0; i < 3; ++i) {
        batch.push_back({features(i), i * 3, 0.25F * static_cast<float>(i)});
    }
    const auto [pixels, labels, weights] = ferry::ops::collate(std::move(batch));
    BOOST_TEST(pixels.shape() == (shape_t{3, 2, 3}), boost::test_tools::per_element());
    BOOST_TEST(values_of<float>(pixels)[2 * 6] == 20.0F);
    BOOST_TEST(labels.dtype() == ferry::dtype::i64);
    BOOST_TEST(values_of<std::int64_t>(labels) == (std::vector<std::int64_t>{0, 3, 6}),
               boost::test_tools::per_element());
    BOOST_TEST(weights.dtype() == ferry::dtype::f32);
    BOOST_TEST(values_of<float>(weights) == (std::vector<float>{0, 0.25F, 0.5F}),
               boost::test_tools::per_element());
}

// A pair inside a pair is collated as a pair: (tensor, (label, weight)) gives
// (stacked, (i64 [N], f32 [N])).
BOOST_AUTO_TEST_CASE(nested_pairs_are_collated_as_nested_pairs) {
    std::vector<std::pair<ferry::tensor, std::pair<std::int64_t, float>>> batch;
    for (std::int64_t i = 0; i < 2; ++i) {
        batch.push_back({features(i), {i + 40, static_cast<float>(i) / 4}});
    }
    const std::pair<ferry::tensor, std::pair<ferry::tensor, ferry::tensor>> out =
        ferry::ops::collate(std::move(batch));
    BOOST_TEST(out.first.shape() == (shape_t{2, 2, 3}), boost::test_tools::per_element());
    BOOST_TEST(values_of<std::int64_t>(out.second.first) == (std::vector<std::int64_t>{40, 41}),
               boost::test_tools::per_element());
    BOOST_TEST(values_of<float>(out.second.second) == (std::vector<float>{0, 0.25F}),
               boost::test_tools::per_element());
}

// A pair whose tensor has another shape than the first fails as collate of the tensors alone
// does: an invalid_argument naming its index and both shapes.
BOOST_AUTO_TEST_CASE(a_wrong_shape_in_a_pair_fails_as_collate_of_tensors_does) {
    std::vector<std::pair<ferry::tensor, std::int64_t>> batch;
    std::vector<ferry::tensor> tensors;
    for (std::int64_t i = 0; i < 4; ++i) {
        ferry::tensor t = i == 2 ? ferry::tensor(ferry::dtype::f32, {3, 2}) : features(i);
        tensors.push_back(t);
        batch.emplace_back(t, i);
    }
    const auto e =
        expect_throw<ferry::invalid_argument>([&] { (void)ferry::ops::collate(std::move(batch)); });
    BOOST_TEST(e.what() ==
               "collate: tensor 2 is tensor(f32, [3, 2], cpu) but tensor 0 is tensor(f32, [2, 3], "
               "cpu)");
    BOOST_TEST(e.what() == expect_throw<ferry::invalid_argument>([&] {
                               (void)ferry::ops::collate(tensors);
                           }).what());
}

// An empty batch of pairs, or of scalars, is refused as an empty batch of tensors is.
BOOST_AUTO_TEST_CASE(an_empty_batch_of_pairs_or_scalars_is_refused) {
    BOOST_TEST(expect_throw<ferry::invalid_argument>([] {
                   (void)ferry::ops::collate(std::vector<std::pair<ferry::tensor, int>>{});
               }).what() == "collate: the batch is empty");
    BOOST_TEST(expect_throw<ferry::invalid_argument>([] {
                   (void)ferry::ops::collate(std::vector<std::pair<std::int64_t, ferry::tensor>>{});
               }).what() == "collate: the batch is empty");
    BOOST_TEST(expect_throw<ferry::invalid_argument>([] {
                   (void)ferry::ops::collate(std::vector<float>{});
               }).what() == "collate: the batch is empty");
}

// Every field's batch is allocated with options.alloc (in front of to_cuda(): pinned memory),
// each exactly its size.
BOOST_AUTO_TEST_CASE(every_field_is_allocated_with_the_given_allocator) {
    const counting_allocator alloc;
    std::vector<std::pair<ferry::tensor, std::int64_t>> batch;
    for (std::int64_t i = 0; i < 5; ++i) batch.emplace_back(features(i), i);
    const auto [x, y] = ferry::ops::collate(std::move(batch), {.alloc = alloc.get()});
    BOOST_TEST(*alloc.requests == (std::vector<std::size_t>{5 * 6 * 4, 5 * 8}),
               boost::test_tools::per_element());
    BOOST_TEST(values_of<std::int64_t>(y) == (std::vector<std::int64_t>{0, 1, 2, 3, 4}),
               boost::test_tools::per_element());
    BOOST_TEST(values_of<float>(x)[4 * 6 + 1] == 41.0F);
}

// batch(4).map(collate) over (tensor, label) pairs: each batch is (its tensors stacked, its
// labels), in order, the last one short.
BOOST_AUTO_TEST_CASE(a_pipeline_batches_and_collates_labelled_pairs) {
    std::vector<std::int64_t> ids(10);
    for (std::int64_t i = 0; i < 10; ++i) ids[static_cast<std::size_t>(i)] = i;
    auto pipe = ferry::from(ids)
                    .map(
                        [](std::int64_t i) {
                            return std::pair{features(i), 100 + i};
                        },
                        3)
                    .batch(4)
                    .map(ferry::ops::collate)
                    .build({.threads = 2});
    shape_t shapes;  // every batch's shape, one after the other
    std::vector<std::int64_t> labels;
    std::vector<float> last_elements;  // element [b][1][2] of each item: i * 10 + 5
    for (auto& [x, y] : pipe) {
        shapes.insert(shapes.end(), x.shape().begin(), x.shape().end());
        BOOST_TEST(y.dtype() == ferry::dtype::i64);
        for (const std::int64_t label : values_of<std::int64_t>(y)) labels.push_back(label);
        const std::vector<float> v = values_of<float>(x);
        for (std::int64_t b = 0; b < x.size(0); ++b) last_elements.push_back(v[b * 6 + 5]);
    }
    BOOST_TEST(shapes == (shape_t{4, 2, 3, 4, 2, 3, 2, 2, 3}), boost::test_tools::per_element());
    BOOST_TEST(
        labels == (std::vector<std::int64_t>{100, 101, 102, 103, 104, 105, 106, 107, 108, 109}),
        boost::test_tools::per_element());
    BOOST_TEST(last_elements == (std::vector<float>{5, 15, 25, 35, 45, 55, 65, 75, 85, 95}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
