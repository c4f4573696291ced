// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::tensor: shape, strides, sizes, contiguity, sharing and cloning, describe(), and the
/// DLPack export (what a consumer sees, and how long the storage lives).
#include <dlpack/dlpack.h>

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "../support/ops_support.hpp"

// Named, not anonymous: shared by several cases.
namespace tensor_test {

using shape_t = std::vector<std::int64_t>;

/// Host memory whose release sets `*released`.
ferry::buffer flagged_buffer(std::size_t n, std::shared_ptr<bool> released,
                             ferry::device where = {}) {
    auto mem = std::make_shared<std::vector<std::byte>>(n);
    ferry::buffer b;
    b.data = mem->data();
    b.size = n;
    b.device = where;
    b.owner = std::shared_ptr<void>(mem.get(), [mem, released](void*) mutable {
        *released = true;
        mem.reset();
    });
    return b;
}

/// The shape and strides a DLTensor reports, as vectors.
shape_t dl_shape(const DLTensor& t) {
    return {t.shape, t.shape + t.ndim};
}
shape_t dl_strides(const DLTensor& t) {
    if (t.strides == nullptr) return {};
    return {t.strides, t.strides + t.ndim};
}

/// Calls a DLManagedTensor's deleter when it goes out of scope.
struct dl_guard {
    DLManagedTensor* t;
    ~dl_guard() {
        if (t != nullptr && t->deleter != nullptr) t->deleter(t);
    }
};

}  // namespace tensor_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(tensor)
using namespace tensor_test;

// A new tensor is row-major: strides, element count and byte size follow from the shape.
BOOST_AUTO_TEST_CASE(new_tensor_is_contiguous_row_major) {
    const ferry::tensor t(ferry::dtype::u8, {2, 3, 4});
    BOOST_TEST(!t.empty());
    BOOST_TEST(t.dim() == 3U);
    BOOST_TEST(t.shape() == (shape_t{2, 3, 4}), boost::test_tools::per_element());
    BOOST_TEST(t.strides() == (shape_t{12, 4, 1}), boost::test_tools::per_element());
    BOOST_TEST(t.size(1) == 3);
    BOOST_TEST(t.numel() == 24);
    BOOST_TEST(t.nbytes() == 24U);
    BOOST_TEST(t.is_contiguous());
    BOOST_TEST((t.device() == ferry::device{}));

    const ferry::tensor f(ferry::dtype::f32, {5, 7});
    BOOST_TEST(f.nbytes() == 140U);
    BOOST_TEST(f.storage().size >= 140U);
}

// Element sizes and names of every dtype.
BOOST_AUTO_TEST_CASE(dtypes_have_their_sizes_and_names) {
    using ferry::dtype;
    const std::vector<std::tuple<dtype, std::size_t, std::string>> all{
        {dtype::u8, 1, "u8"},   {dtype::i8, 1, "i8"},   {dtype::u16, 2, "u16"},
        {dtype::i16, 2, "i16"}, {dtype::i32, 4, "i32"}, {dtype::i64, 8, "i64"},
        {dtype::f16, 2, "f16"}, {dtype::f32, 4, "f32"}, {dtype::f64, 8, "f64"}};
    for (const auto& [t, size, name] : all) {
        BOOST_TEST(ferry::size_of(t) == size, name);
        BOOST_TEST(std::string(ferry::to_string(t)) == name);
        BOOST_TEST(ferry::tensor(t, {3, 2}).nbytes() == 6 * size, name);
    }
}

// A default tensor is empty: no dimensions, no elements, no storage.
BOOST_AUTO_TEST_CASE(default_tensor_is_empty) {
    const ferry::tensor t;
    BOOST_TEST(t.empty());
    BOOST_TEST(t.dim() == 0U);
    BOOST_TEST(t.numel() == 0);
    BOOST_TEST(t.nbytes() == 0U);
    BOOST_TEST(t.data() == nullptr);
}

// A negative extent is an invalid_argument.
BOOST_AUTO_TEST_CASE(negative_extent_is_rejected) {
    BOOST_CHECK_THROW((void)ferry::tensor(ferry::dtype::u8, {2, -1}), ferry::invalid_argument);
}

// An adopted buffer with strides is a view: not contiguous, and clone() gathers its elements
// in logical order into fresh contiguous memory.
BOOST_AUTO_TEST_CASE(strided_view_clones_to_contiguous) {
    auto released = std::make_shared<bool>(false);
    ferry::buffer b = flagged_buffer(12 * sizeof(float), released);
    auto* raw = reinterpret_cast<float*>(b.data);
    std::iota(raw, raw + 12, 0.0F);
    // The transpose of a 4 x 3 row-major matrix: shape 3 x 4, strides 1, 3.
    const ferry::tensor view(b, ferry::dtype::f32, {3, 4}, {1, 3});
    BOOST_TEST(!view.is_contiguous());
    BOOST_TEST(view.numel() == 12);
    BOOST_TEST(view.data() == static_cast<void*>(raw));
    const ferry::tensor dense = view.clone();
    BOOST_TEST(dense.is_contiguous());
    BOOST_TEST(dense.strides() == (shape_t{4, 1}), boost::test_tools::per_element());
    BOOST_TEST(dense.data() != view.data());
    const float* d = dense.data_as<float>();
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) BOOST_TEST(d[i * 4 + j] == raw[i + j * 3]);
}

// Adopting a buffer too small for the shape (or strides) is an invalid_argument.
BOOST_AUTO_TEST_CASE(adopting_too_small_a_buffer_is_rejected) {
    auto released = std::make_shared<bool>(false);
    const ferry::buffer b = flagged_buffer(10, released);
    BOOST_CHECK_THROW((void)ferry::tensor(b, ferry::dtype::u8, {4, 4}), ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::tensor(b, ferry::dtype::f32, {3}), ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::tensor(b, ferry::dtype::u8, {2, 2}, {8, 4}),
                      ferry::invalid_argument);
    BOOST_CHECK_NO_THROW((void)ferry::tensor(b, ferry::dtype::u8, {2, 5}));
}

// Copies share the storage (writes show through); clone() copies it, with the given allocator.
BOOST_AUTO_TEST_CASE(copies_share_storage_and_clone_copies) {
    ferry::tensor a(ferry::dtype::i32, {4});
    for (int i = 0; i < 4; ++i) a.data_as<std::int32_t>()[i] = i;
    const ferry::tensor b = a;
    BOOST_TEST(b.data() == a.data());
    a.data_as<std::int32_t>()[0] = 42;
    BOOST_TEST(b.data_as<std::int32_t>()[0] == 42);

    auto released = std::make_shared<bool>(false);
    int calls = 0;
    const ferry::allocator alloc = [&](std::size_t n) {
        ++calls;
        return flagged_buffer(n, released);
    };
    {
        const ferry::tensor c = a.clone(alloc);
        BOOST_TEST(calls == 1);
        BOOST_TEST(c.data() != a.data());
        BOOST_TEST(std::memcmp(c.data(), a.data(), 16) == 0);
        a.data_as<std::int32_t>()[1] = 7;
        BOOST_TEST(c.data_as<std::int32_t>()[1] == 1);
    }
    BOOST_TEST(*released);
}

// data_as<T> refuses a T whose size is not the dtype's. (Which exception is not documented;
// any ferry::error is accepted here.)
BOOST_AUTO_TEST_CASE(data_as_checks_the_element_size) {
    ferry::tensor t(ferry::dtype::u8, {8});
    BOOST_CHECK_THROW((void)t.data_as<float>(), ferry::error);
    BOOST_CHECK_NO_THROW((void)t.data_as<std::uint8_t>());
}

// describe() names dtype, shape and device.
BOOST_AUTO_TEST_CASE(describe_names_dtype_shape_and_device) {
    BOOST_TEST(ferry::tensor(ferry::dtype::u8, {32, 224, 224, 3}).describe() ==
               "tensor(u8, [32, 224, 224, 3], cpu)");
    BOOST_TEST(ferry::tensor(ferry::dtype::f32, {2, 3}).describe() == "tensor(f32, [2, 3], cpu)");
}

// to_dlpack hands out the tensor as it is: same data pointer, shape, strides, dtype, CPU device.
BOOST_AUTO_TEST_CASE(to_dlpack_describes_the_tensor_without_copying) {
    const ferry::tensor t(ferry::dtype::u8, {2, 61, 97, 3});
    const dl_guard g{t.to_dlpack()};
    BOOST_TEST_REQUIRE(g.t != nullptr);
    const DLTensor& d = g.t->dl_tensor;
    BOOST_TEST(d.ndim == 4);
    BOOST_TEST(dl_shape(d) == t.shape(), boost::test_tools::per_element());
    // DLPack allows NULL strides for a compact row-major tensor.
    if (d.strides != nullptr)
        BOOST_TEST(dl_strides(d) == t.strides(), boost::test_tools::per_element());
    BOOST_TEST(d.dtype.code == kDLUInt);
    BOOST_TEST(d.dtype.bits == 8);
    BOOST_TEST(d.dtype.lanes == 1);
    BOOST_TEST(d.device.device_type == kDLCPU);
    BOOST_TEST(d.device.device_id == 0);
    BOOST_TEST(static_cast<const void*>(static_cast<const std::byte*>(d.data) + d.byte_offset) ==
               t.data());
}

// Every dtype maps to its DLPack code and width.
BOOST_AUTO_TEST_CASE(to_dlpack_maps_every_dtype) {
    using ferry::dtype;
    const std::vector<std::tuple<dtype, int, int>> all{
        {dtype::u8, kDLUInt, 8},    {dtype::i8, kDLInt, 8},     {dtype::u16, kDLUInt, 16},
        {dtype::i16, kDLInt, 16},   {dtype::i32, kDLInt, 32},   {dtype::i64, kDLInt, 64},
        {dtype::f16, kDLFloat, 16}, {dtype::f32, kDLFloat, 32}, {dtype::f64, kDLFloat, 64}};
    for (const auto& [t, code, bits] : all) {
        const dl_guard g{ferry::tensor(t, {3}).to_dlpack()};
        BOOST_TEST(g.t->dl_tensor.dtype.code == code, ferry::to_string(t));
        BOOST_TEST(g.t->dl_tensor.dtype.bits == bits, ferry::to_string(t));
        BOOST_TEST(g.t->dl_tensor.dtype.lanes == 1);
    }
}

// A strided view exports its strides (in elements).
BOOST_AUTO_TEST_CASE(to_dlpack_exports_strides_of_a_view) {
    auto released = std::make_shared<bool>(false);
    const ferry::tensor view(flagged_buffer(12 * sizeof(float), released), ferry::dtype::f32,
                             {3, 4}, {1, 3});
    const dl_guard g{view.to_dlpack()};
    BOOST_TEST_REQUIRE(g.t->dl_tensor.strides != nullptr);
    BOOST_TEST(dl_strides(g.t->dl_tensor) == (shape_t{1, 3}), boost::test_tools::per_element());
}

// Pinned host memory is exported as kDLCUDAHost.
BOOST_AUTO_TEST_CASE(to_dlpack_reports_pinned_memory_as_cuda_host) {
    auto released = std::make_shared<bool>(false);
    const ferry::tensor t(flagged_buffer(16, released, {ferry::device_kind::cuda_host, 0}),
                          ferry::dtype::u8, {16});
    const dl_guard g{t.to_dlpack()};
    BOOST_TEST(g.t->dl_tensor.device.device_type == kDLCUDAHost);
}

// The exported tensor keeps the storage alive after the ferry tensor is gone, until the
// consumer calls the deleter.
BOOST_AUTO_TEST_CASE(to_dlpack_keeps_the_storage_until_the_deleter_runs) {
    auto released = std::make_shared<bool>(false);
    int calls = 0;
    const ferry::allocator alloc = [&](std::size_t n) {
        ++calls;
        return flagged_buffer(n, released);
    };
    DLManagedTensor* exported = nullptr;
    {
        ferry::tensor t(ferry::dtype::f32, {4, 4}, alloc);
        BOOST_TEST(calls == 1);
        for (int i = 0; i < 16; ++i) t.data_as<float>()[i] = static_cast<float>(i);
        exported = t.to_dlpack();
    }
    BOOST_TEST_REQUIRE(exported != nullptr);
    BOOST_TEST(!*released, "storage released while the DLPack tensor still refers to it");
    BOOST_TEST(static_cast<const float*>(exported->dl_tensor.data)[15] == 15.0F);
    BOOST_TEST(exported->dl_tensor.shape[0] == 4);  // the shape array lives on too
    exported->deleter(exported);
    BOOST_TEST(*released, "storage not released by the DLPack deleter");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
