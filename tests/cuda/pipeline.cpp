// SPDX-License-Identifier: Apache-2.0
/// \file
/// `builder<T>::to_cuda()` (label `cuda`, every machine): the no-device error from build(), the
/// customization point at compile time (ferry's specializations and a user's struct), and whole
/// pipelines on the fake backend.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../support/expect.hpp"
#include "fake_backend.hpp"
#include "ferry/cuda.hpp"
#include "ferry/ferry.hpp"

namespace {

using ferry_test::fake_backend;

/// A user's batch type, and what it becomes on the device.
struct my_batch {
    ferry::tensor images;
    ferry::tensor labels;
    std::vector<std::string> paths;
};
struct my_device_batch {
    ferry::cuda_tensor images;
    ferry::cuda_tensor labels;
    std::vector<std::string> paths;
};
struct not_described {
    ferry::tensor images;
};

ferry::tensor filled(std::int64_t n, std::uint8_t value) {
    ferry::tensor t(ferry::dtype::u8, {n});
    auto* p = t.data_as<std::uint8_t>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = value;
    return t;
}

std::uint8_t first_byte(const ferry::cuda_tensor& t) {
    return *static_cast<const std::uint8_t*>(t.data());  // the fake's device memory is host memory
}

}  // namespace

/// The user's specialization, as the header's documentation shows it.
template <>
struct ferry::cuda_transfer<my_batch> {
    my_device_batch operator()(my_batch b, ferry::cuda::transfer_context& ctx) const {
        return {ctx.copy(b.images), ctx.copy(b.labels), std::move(b.paths)};
    }
};

// What can go through to_cuda() and what it becomes, checked at compile time.
static_assert(ferry::cuda::transferable<ferry::tensor>);
static_assert(std::is_same_v<ferry::cuda::transfer_result_t<ferry::tensor>, ferry::cuda_tensor>);
static_assert(std::is_same_v<ferry::cuda::transfer_result_t<std::vector<ferry::tensor>>,
                             std::vector<ferry::cuda_tensor>>);
static_assert(std::is_same_v<ferry::cuda::transfer_result_t<std::pair<ferry::tensor, int>>,
                             std::pair<ferry::cuda_tensor, int>>);
static_assert(
    std::is_same_v<ferry::cuda::transfer_result_t<std::tuple<ferry::tensor, std::string, double>>,
                   std::tuple<ferry::cuda_tensor, std::string, double>>);
static_assert(std::is_same_v<
              ferry::cuda::transfer_result_t<std::vector<std::pair<ferry::tensor, std::int64_t>>>,
              std::vector<std::pair<ferry::cuda_tensor, std::int64_t>>>);
static_assert(ferry::cuda::transferable<my_batch>);
static_assert(std::is_same_v<ferry::cuda::transfer_result_t<my_batch>, my_device_batch>);
static_assert(
    std::is_same_v<decltype(std::declval<ferry::builder<my_batch>>().to_cuda())::element_type,
                   my_device_batch>);
static_assert(
    std::is_same_v<decltype(std::declval<ferry::builder<ferry::tensor>>().to_cuda())::element_type,
                   ferry::cuda_tensor>);
// Nothing to copy: not transferable (to_cuda() on these fails to compile with a message; the
// ctest `cuda.to_cuda_rejects_unknown_types` checks that message).
static_assert(!ferry::cuda::transferable<int>);
static_assert(!ferry::cuda::transferable<std::vector<int>>);
static_assert(!ferry::cuda::transferable<std::pair<int, std::string>>);
static_assert(!ferry::cuda::transferable<not_described>);

BOOST_AUTO_TEST_SUITE(pipeline)

// Without a usable device, build() — not to_cuda(), not the first element — throws
// ferry::error with errc::cuda and a message that starts "no CUDA device: " (or says ferry was
// built without CUDA). On a GPU machine the same path is taken by asking for a device past the
// last one.
BOOST_AUTO_TEST_CASE(build_without_a_device_throws_no_cuda_device) {
    const int count = ferry::cuda::device_count();
    BOOST_TEST(count >= 0);
    auto described =
        ferry::from(std::vector<ferry::tensor>{filled(4, 1)}).to_cuda({.device = count});
    const auto e = ferry_test::expect_throw<ferry::error>(
        [&] { auto pipe = described.build({.threads = 1}); }, "build()");
    if (e) {
        BOOST_TEST((e->code() == ferry::errc::cuda));
        const std::string what = e.what();
        if (ferry::cuda::built_with_cuda()) {
            BOOST_TEST(what.rfind("no CUDA device: ", 0) == 0U, what);
        } else {
            BOOST_TEST(what.rfind("ferry was built without CUDA", 0) == 0U, what);
        }
        BOOST_TEST_MESSAGE("build() said: " << what);
    }
    // Everything else keeps working in the same process.
    auto plain = ferry::from(std::vector<int>{1, 2, 3}).map([](int x) { return x * 2; }).build();
    std::vector<int> got;
    for (int x : plain) got.push_back(x);
    BOOST_TEST(got == (std::vector<int>{2, 4, 6}));
}

// The pool with the CUDA runtime backend fails the same way on a machine without a device.
BOOST_AUTO_TEST_CASE(runtime_pools_without_a_device_throw_errc_cuda) {
    if (ferry::cuda::device_count() > 0) {
        BOOST_TEST_MESSAGE("a device is present: the no-device path is covered by build()");
        BOOST_CHECK_THROW(ferry::cuda::pinned_pool({.device = ferry::cuda::device_count()}),
                          ferry::error);
        return;
    }
    const auto e = ferry_test::expect_throw<ferry::error>([] { ferry::cuda::pinned_pool pool; },
                                                          "pinned_pool made without a device");
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST((e->code() == ferry::errc::cuda));
}

// Tensors go through a to_cuda() stage in order, as cuda_tensors with their bytes; the stage is
// named "to_cuda" in the stats.
BOOST_AUTO_TEST_CASE(to_cuda_delivers_device_tensors_in_order) {
    auto be = std::make_shared<fake_backend>();
    std::vector<ferry::tensor> items;
    for (int i = 0; i < 50; ++i) items.push_back(filled(100 + i, static_cast<std::uint8_t>(i)));
    auto pipe = ferry::from(std::move(items))
                    .map([](ferry::tensor t) { return t; }, 4)
                    .to_cuda({.backend = be})
                    .build({.threads = 2});
    int i = 0;
    for (const ferry::cuda_tensor& d : pipe) {
        BOOST_TEST(d.numel() == 100 + i);
        BOOST_TEST(first_byte(d) == i);
        d.synchronize();
        ++i;
    }
    BOOST_TEST(i == 50);
    bool named = false;
    for (const auto& s : pipe.stats().stages) named = named || s.name == "to_cuda";
    BOOST_TEST(named);
    BOOST_TEST(be->streams_created() == 1);
}

// A user's struct goes through its cuda_transfer specialization; its small fields come along.
BOOST_AUTO_TEST_CASE(user_struct_goes_through_its_specialization) {
    auto be = std::make_shared<fake_backend>();
    auto pipe = ferry::from(std::vector<int>{0, 1, 2})
                    .map([](int i) {
                        return my_batch{filled(8, static_cast<std::uint8_t>(i)),
                                        filled(2, static_cast<std::uint8_t>(100 + i)),
                                        {"img" + std::to_string(i) + ".jpg"}};
                    })
                    .to_cuda({.backend = be})
                    .build({.threads = 1});
    int i = 0;
    for (const my_device_batch& b : pipe) {
        BOOST_TEST(first_byte(b.images) == i);
        BOOST_TEST(first_byte(b.labels) == 100 + i);
        BOOST_TEST(b.paths.at(0) == "img" + std::to_string(i) + ".jpg");
        ++i;
    }
    BOOST_TEST(i == 3);
}

// ferry's own specializations: a batch of (tensor, label) pairs and a tuple with fields.
BOOST_AUTO_TEST_CASE(pairs_tuples_and_vectors_carry_labels_unchanged) {
    auto be = std::make_shared<fake_backend>();
    auto pipe = ferry::from(std::vector<int>{0, 1, 2, 3})
                    .map([](int i) {
                        return std::pair{filled(4, static_cast<std::uint8_t>(i)), i};
                    })
                    .batch(2)
                    .to_cuda({.backend = be})
                    .build({.threads = 1});
    std::vector<int> labels;
    for (const auto& batch : pipe) {
        for (const auto& [image, label] : batch) {
            BOOST_TEST(first_byte(image) == label);
            labels.push_back(label);
        }
    }
    BOOST_TEST(labels == (std::vector<int>{0, 1, 2, 3}));

    ferry::cuda::transfer_context ctx({.backend = be});
    auto t = ferry::cuda::transfer(std::tuple{filled(3, 9), std::string("x"), 2.5}, ctx);
    BOOST_TEST(first_byte(std::get<0>(t)) == 9);
    BOOST_TEST(std::get<1>(t) == "x");
    BOOST_TEST(std::get<2>(t) == 2.5);
}

// Each build() makes its own transfer context (its own stream): two pipelines from one builder
// run side by side.
BOOST_AUTO_TEST_CASE(each_build_gets_its_own_transfer_context) {
    auto be = std::make_shared<fake_backend>();
    auto described = ferry::from(std::vector<ferry::tensor>{filled(4, 5)}).to_cuda({.backend = be});
    auto a = described.build({.threads = 1});
    auto b = described.build({.threads = 1});
    BOOST_TEST(be->streams_created() == 2);
    BOOST_TEST(first_byte(*a.next()) == 5);
    BOOST_TEST(first_byte(*b.next()) == 5);
}

// A failing copy fails the pipeline like any stage: a stage_error naming "to_cuda" and the item,
// with the runtime's error nested.
BOOST_AUTO_TEST_CASE(a_failing_copy_is_a_stage_error_naming_to_cuda) {
    auto be = std::make_shared<fake_backend>();
    be->fail_next_copy = true;
    auto pipe = ferry::from(std::vector<ferry::tensor>{filled(4, 1), filled(4, 2)})
                    .to_cuda({.backend = be})
                    .build({.threads = 1});
    const auto e = ferry_test::expect_throw<ferry::stage_error>([&] {
        for (const auto& d : pipe) (void)d;
    });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->stage() == "to_cuda");
    BOOST_TEST(e->item() == 0U);
    BOOST_TEST(e->cause().find("fake cudaMemcpyAsync failed") != std::string::npos);
}

// The map right before to_cuda() (the collate, as a rule) builds its tensors in the transfer's
// pinned pool, so the copy to the device reads them directly (one host copy, not two); stages
// further up, and the consumer's thread, keep the heap. `.pinned_batches = false` turns it off.
BOOST_AUTO_TEST_CASE(the_stage_before_to_cuda_builds_its_tensors_in_pinned_memory) {
    for (const bool pinned : {true, false}) {
        auto be = std::make_shared<fake_backend>();
        std::atomic<int> made_pinned{0};
        std::atomic<int> earlier_pinned{0};
        auto pipe = ferry::from(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
                        .map(
                            [&](int i) {
                                const ferry::tensor scratch(ferry::dtype::u8, {64});
                                if (be->is_pinned_block(scratch.data())) ++earlier_pinned;
                                return i;
                            },
                            2)
                        .map(
                            [&](int i) {
                                ferry::tensor t(ferry::dtype::u8, {1000});
                                std::memset(t.data(), i, 1000);
                                if (be->is_pinned_block(t.data()) &&
                                    t.device().kind == ferry::device_kind::cuda_host) {
                                    ++made_pinned;
                                }
                                return t;
                            },
                            2)
                        .to_cuda({.pinned_batches = pinned, .backend = be})
                        .build({.threads = 2});
        int i = 0;
        for (const ferry::cuda_tensor& d : pipe) {
            BOOST_TEST(d.numel() == 1000);
            BOOST_TEST(first_byte(d) == i);
            d.synchronize();
            ++i;
        }
        BOOST_TEST(i == 10);
        BOOST_TEST(made_pinned.load() == (pinned ? 10 : 0), "pinned_batches = " << pinned);
        BOOST_TEST(earlier_pinned.load() == 0);
    }
    const ferry::tensor here(ferry::dtype::u8, {64});
    BOOST_TEST(!ferry::default_tensor_allocator());
    BOOST_TEST((here.device().kind == ferry::device_kind::cpu));
}

// scoped_tensor_allocator nests and puts the previous allocator back.
BOOST_AUTO_TEST_CASE(scoped_tensor_allocator_nests) {
    int outer_calls = 0;
    int inner_calls = 0;
    const ferry::allocator outer = [&](std::size_t n) {
        ++outer_calls;
        return ferry::allocate_host(n);
    };
    const ferry::allocator inner = [&](std::size_t n) {
        ++inner_calls;
        return ferry::allocate_host(n);
    };
    {
        const ferry::scoped_tensor_allocator a(outer);
        { const ferry::tensor t(ferry::dtype::f32, {4}); }
        {
            const ferry::scoped_tensor_allocator b(inner);
            { const ferry::tensor t(ferry::dtype::f32, {4}); }
            // An explicit allocator still wins.
            { const ferry::tensor t(ferry::dtype::f32, {4}, outer); }
        }
        { const ferry::tensor t(ferry::dtype::f32, {4}); }
    }
    { const ferry::tensor t(ferry::dtype::f32, {4}); }
    BOOST_TEST(outer_calls == 3);
    BOOST_TEST(inner_calls == 1);
    BOOST_TEST(!ferry::default_tensor_allocator());
}

BOOST_AUTO_TEST_SUITE_END()
