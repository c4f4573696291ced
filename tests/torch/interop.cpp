// SPDX-License-Identifier: Apache-2.0
/// \file
/// to_torch / from_torch: the same memory on both sides (data pointer, shape, strides, values),
/// every dtype, lifetimes both ways, pinned and device memory, and what cannot convert.
#include <ATen/Context.h>
#include <torch/torch.h>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../cuda/fake_backend.hpp"
#include "../support/expect.hpp"
#include "../support/skipped.hpp"
#include "ferry/collate.hpp"
#include "ferry/cuda.hpp"
#include "ferry/error.hpp"
#include "ferry/torch.hpp"

namespace {

/// A host buffer of `bytes` whose release sets `*released`: how a test sees who keeps it alive.
ferry::buffer watched_buffer(std::size_t bytes, std::shared_ptr<bool> released,
                             ferry::device where = {}) {
    auto* memory = new std::byte[bytes];
    ferry::buffer b;
    b.data = memory;
    b.size = bytes;
    b.owner = std::shared_ptr<void>(memory, [released](void* p) {
        *released = true;
        delete[] static_cast<std::byte*>(p);
    });
    b.device = where;
    return b;
}

/// The precondition of the case that checks a CPU-only libtorch's refusal of device memory: where
/// libtorch has CUDA, device memory converts instead, so the case is reported skipped with that
/// reason (also printed on stdout, which ctest's output shows).
boost::test_tools::assertion_result libtorch_lacks_cuda(boost::unit_test::test_unit_id id) {
    if (!at::hasCUDA()) return true;
    const std::string why =
        "this libtorch has CUDA (at::hasCUDA()): device memory converts, nothing is refused";
    return ferry_test::skipped(id, why);
}

/// Element (i, j) of a 2-D ferry tensor read through its strides, as double.
template <class T>
double at2(const ferry::tensor& t, std::int64_t i, std::int64_t j) {
    const T* p = static_cast<const T*>(t.data());
    return static_cast<double>(p[i * t.strides()[0] + j * t.strides()[1]]);
}

struct dtype_case {
    ferry::dtype ferry;
    torch::ScalarType torch;
};
const dtype_case dtype_cases[] = {
    {ferry::dtype::u8, torch::kByte},   {ferry::dtype::i8, torch::kChar},
    {ferry::dtype::i16, torch::kShort}, {ferry::dtype::i32, torch::kInt},
    {ferry::dtype::i64, torch::kLong},  {ferry::dtype::f16, torch::kHalf},
    {ferry::dtype::f32, torch::kFloat}, {ferry::dtype::f64, torch::kDouble},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(torch_interop)

// Every ferry dtype torch has crosses both ways without a copy: same pointer, type, shape, bytes.
BOOST_AUTO_TEST_CASE(every_dtype_shares_the_same_memory_both_ways) {
    for (const auto& c : dtype_cases) {
        BOOST_TEST_CONTEXT(ferry::to_string(c.ferry)) {
            ferry::tensor f(c.ferry, {2, 3});
            auto* bytes = static_cast<std::uint8_t*>(f.data());
            for (std::size_t i = 0; i < f.nbytes(); ++i)
                bytes[i] = static_cast<std::uint8_t>(i * 7);
            const torch::Tensor t = ferry::to_torch(f);
            BOOST_TEST(t.data_ptr() == f.data());
            BOOST_TEST(t.scalar_type() == c.torch);
            BOOST_TEST(t.sizes().vec() == f.shape());
            BOOST_TEST(t.strides().vec() == f.strides());
            BOOST_TEST(t.device().is_cpu());
            BOOST_TEST(static_cast<std::size_t>(t.nbytes()) == f.nbytes());
            BOOST_TEST(std::memcmp(t.data_ptr(), bytes, f.nbytes()) == 0);

            const ferry::tensor back = ferry::from_torch(t);
            BOOST_TEST(back.data() == f.data());
            BOOST_TEST((back.dtype() == c.ferry));
            BOOST_TEST(back.shape() == f.shape());
            BOOST_TEST(back.strides() == f.strides());
            BOOST_TEST((back.device() == ferry::device{}));
            BOOST_TEST(ferry::torch_dtype(c.ferry) == c.torch);
            BOOST_TEST((ferry::ferry_dtype(c.torch) == c.ferry));
        }
    }
}

// Values read through torch are the ones ferry wrote (not just the same bytes somewhere).
BOOST_AUTO_TEST_CASE(torch_reads_the_values_ferry_wrote) {
    ferry::tensor f(ferry::dtype::f32, {3, 4});
    for (int i = 0; i < 12; ++i) f.data_as<float>()[i] = 0.5F * static_cast<float>(i) - 2.0F;
    const torch::Tensor t = ferry::to_torch(f);
    BOOST_TEST(t[2][1].item<float>() == 0.5F * 9.0F - 2.0F);
    BOOST_TEST(t.sum().item<float>() == 9.0F);  // 0.5 * 66 - 24
}

// Writes through either side are seen through the other: one memory, not two.
BOOST_AUTO_TEST_CASE(writes_are_seen_both_ways) {
    ferry::tensor f(ferry::dtype::i32, {4});
    for (int i = 0; i < 4; ++i) f.data_as<std::int32_t>()[i] = i;
    torch::Tensor t = ferry::to_torch(f);
    t.mul_(10);
    BOOST_TEST(f.data_as<std::int32_t>()[3] == 30);
    f.data_as<std::int32_t>()[0] = -5;
    BOOST_TEST(t[0].item<std::int32_t>() == -5);

    torch::Tensor u = torch::zeros({3}, torch::kDouble);
    ferry::tensor g = ferry::from_torch(u);
    g.data_as<double>()[1] = 2.5;
    BOOST_TEST(u[1].item<double>() == 2.5);
}

// ferry strides (a transposed view over ferry's memory) arrive in torch as they are.
BOOST_AUTO_TEST_CASE(ferry_strides_are_kept) {
    auto released = std::make_shared<bool>(false);
    ferry::buffer b = watched_buffer(6 * sizeof(float), released);
    auto* v = reinterpret_cast<float*>(b.data);
    for (int i = 0; i < 6; ++i) v[i] = static_cast<float>(i);
    // Row-major [2, 3] seen as its transpose [3, 2]: strides {1, 3}.
    const ferry::tensor f(b, ferry::dtype::f32, {3, 2}, {1, 3});
    const torch::Tensor t = ferry::to_torch(f);
    BOOST_TEST(t.strides().vec() == (std::vector<std::int64_t>{1, 3}));
    BOOST_TEST(!t.is_contiguous());
    for (std::int64_t i = 0; i < 3; ++i) {
        for (std::int64_t j = 0; j < 2; ++j) {
            BOOST_TEST(t[i][j].item<float>() == static_cast<float>(j * 3 + i));
        }
    }
}

// torch views (transposed, sliced, expanded) come to ferry with their strides and offset.
BOOST_AUTO_TEST_CASE(torch_views_keep_their_strides_and_offset) {
    const torch::Tensor base = torch::arange(24, torch::kFloat).reshape({4, 6});
    const torch::Tensor views[] = {
        base.t(),                               // strides {1, 6}
        base.slice(0, 1, 3).slice(1, 2, 6, 2),  // offset 8, strides {6, 2}
        base[2].unsqueeze(0).expand({3, 6}),    // stride 0 on dimension 0
    };
    for (const auto& view : views) {
        BOOST_TEST_CONTEXT(view.sizes() << " strides " << view.strides()) {
            const ferry::tensor f = ferry::from_torch(view);
            BOOST_TEST(f.data() == view.data_ptr());
            BOOST_TEST(f.shape() == view.sizes().vec());
            BOOST_TEST(f.strides() == view.strides().vec());
            for (std::int64_t i = 0; i < view.size(0); ++i) {
                for (std::int64_t j = 0; j < view.size(1); ++j) {
                    BOOST_TEST(at2<float>(f, i, j) == view[i][j].item<float>());
                }
            }
            // And back again: still the same memory and layout.
            const torch::Tensor again = ferry::to_torch(f);
            BOOST_TEST(again.data_ptr() == view.data_ptr());
            BOOST_TEST(again.strides().vec() == view.strides().vec());
            BOOST_TEST(torch::equal(again, view));
        }
    }
}

// A torch tensor outlives the ferry tensor it came from; ferry's memory goes with the last one.
BOOST_AUTO_TEST_CASE(torch_tensor_keeps_ferry_memory_alive) {
    auto released = std::make_shared<bool>(false);
    torch::Tensor t;
    {
        ferry::buffer b = watched_buffer(8 * sizeof(std::int64_t), released);
        ferry::tensor f(std::move(b), ferry::dtype::i64, {8});
        for (int i = 0; i < 8; ++i) f.data_as<std::int64_t>()[i] = 100 + i;
        t = ferry::to_torch(f);
    }
    BOOST_TEST(!*released);
    BOOST_TEST(t.sum().item<std::int64_t>() == 8 * 100 + 28);  // read after the ferry side went
    torch::Tensor view = t.slice(0, 2, 4);
    t = torch::Tensor();
    BOOST_TEST(!*released);  // a view still holds the storage
    BOOST_TEST(view[1].item<std::int64_t>() == 103);
    view = torch::Tensor();
    BOOST_TEST(*released);
}

// A ferry tensor outlives the torch tensor it came from; torch's storage goes with the last one.
BOOST_AUTO_TEST_CASE(ferry_tensor_keeps_torch_memory_alive) {
    auto released = std::make_shared<bool>(false);
    auto* memory = new float[5]{1, 2, 3, 4, 5};
    ferry::tensor f;
    {
        torch::Tensor t = torch::from_blob(
            memory, {5},
            [released](void* p) {
                *released = true;
                delete[] static_cast<float*>(p);
            },
            torch::kFloat);
        t.add_(1);
        f = ferry::from_torch(t);
    }
    BOOST_TEST(!*released);
    BOOST_TEST(f.data_as<float>()[4] == 6.0F);
    ferry::tensor copy = f;
    f = ferry::tensor();
    BOOST_TEST(!*released);
    BOOST_TEST(copy.data_as<float>()[0] == 2.0F);
    copy = ferry::tensor();
    BOOST_TEST(*released);
}

// The ferry tensor holds the data, not the autograd graph: a tensor that requires grad shares.
BOOST_AUTO_TEST_CASE(from_torch_shares_the_data_of_a_tensor_that_requires_grad) {
    torch::Tensor w = torch::ones({2, 2}, torch::requires_grad());
    const ferry::tensor f = ferry::from_torch(w);
    BOOST_TEST(f.data() == w.data_ptr());
    BOOST_TEST(f.data_as<float>()[3] == 1.0F);
}

// A 0-dimensional tensor (a scalar) and tensors with no elements cross both ways.
BOOST_AUTO_TEST_CASE(scalars_and_empty_tensors_cross) {
    ferry::tensor scalar(ferry::dtype::f64, {});
    scalar.data_as<double>()[0] = 3.25;
    const torch::Tensor s = ferry::to_torch(scalar);
    BOOST_TEST(s.dim() == 0);
    BOOST_TEST(s.item<double>() == 3.25);
    BOOST_TEST(ferry::from_torch(s).numel() == 1);

    const ferry::tensor none(ferry::dtype::f32, {0, 3});
    const torch::Tensor n = ferry::to_torch(none);
    BOOST_TEST(n.defined());
    BOOST_TEST(n.sizes().vec() == (std::vector<std::int64_t>{0, 3}));
    BOOST_TEST(n.scalar_type() == torch::kFloat);
    const ferry::tensor m = ferry::from_torch(torch::empty({2, 0}, torch::kLong));
    BOOST_TEST(m.shape() == (std::vector<std::int64_t>{2, 0}));
    BOOST_TEST((m.dtype() == ferry::dtype::i64));
    BOOST_TEST(m.numel() == 0);

    // Nothing at all on either side is nothing on the other.
    BOOST_TEST(!ferry::to_torch(ferry::tensor()).defined());
    BOOST_TEST(ferry::from_torch(torch::Tensor()).empty());
}

// Pinned (cuda_host) memory is CPU memory to torch: the same pages, on the CPU device. Where
// libtorch has CUDA, torch asks the runtime and sees real pinned memory as pinned (the gpu case
// in pipeline.cpp); a CPU-only libtorch sees none.
BOOST_AUTO_TEST_CASE(pinned_memory_is_cpu_memory_to_torch) {
    auto released = std::make_shared<bool>(false);
    const ferry::tensor f(watched_buffer(64, released, {ferry::device_kind::cuda_host, 0}),
                          ferry::dtype::u8, {64});
    const torch::Tensor t = ferry::to_torch(f);
    BOOST_TEST(t.device().is_cpu());
    BOOST_TEST(t.data_ptr() == f.data());
    if (!at::hasCUDA()) BOOST_TEST(!t.is_pinned());
}

// A batch collated into a pinned pool (how a pipeline feeding the GPU builds it) is handed to
// torch in place, and its block goes back to the pool only when the torch tensor lets go.
BOOST_AUTO_TEST_CASE(pinned_pool_block_returns_when_the_torch_tensor_goes) {
    ferry::cuda::memory_pool pool(std::make_shared<ferry_test::fake_backend>(),
                                  ferry::cuda::memory_kind::pinned_host);
    std::vector<ferry::tensor> items;
    for (int i = 0; i < 4; ++i) {
        ferry::tensor t(ferry::dtype::u8, {2, 2});
        for (int k = 0; k < 4; ++k)
            t.data_as<std::uint8_t>()[k] = static_cast<std::uint8_t>(i * 4 + k);
        items.push_back(t);
    }
    torch::Tensor x;
    const void* block = nullptr;
    {
        const ferry::tensor batch = ferry::ops::collate(items, {.alloc = pool.as_allocator()});
        BOOST_TEST((batch.device().kind == ferry::device_kind::cuda_host));
        block = batch.data();
        x = ferry::to_torch(batch);
    }
    BOOST_TEST(x.data_ptr() == block);
    BOOST_TEST(x.device().is_cpu());
    BOOST_TEST(pool.stats().bytes_in_use > 0u);       // the batch is gone, torch still holds it
    BOOST_TEST(x.sum().item<std::int64_t>() == 120);  // 0 + 1 + ... + 15
    x = torch::Tensor();
    BOOST_TEST(pool.stats().bytes_in_use == 0u);
}

// Device memory needs a libtorch with CUDA; without it the error says so instead of a tensor
// that crashes on first use (skipped, saying so, where libtorch has CUDA).
BOOST_AUTO_TEST_CASE(device_memory_without_cuda_in_torch_is_refused,
                     *boost::unit_test::precondition(libtorch_lacks_cuda)) {
    static float fake_device_memory[4];
    ferry::buffer b;
    b.data = reinterpret_cast<std::byte*>(fake_device_memory);
    b.size = sizeof fake_device_memory;
    b.device = {ferry::device_kind::cuda, 1};
    const ferry::tensor f(b, ferry::dtype::f32, {4});
    const auto e =
        ferry_test::expect_throw<ferry::invalid_argument>([&] { (void)ferry::to_torch(f); });
    BOOST_TEST(e.what().find("cuda:1") != std::string::npos, e.what());
    BOOST_TEST(e.what().find("no CUDA") != std::string::npos, e.what());
    // The same memory as what to_cuda() delivers.
    const ferry::cuda_tensor c(f, nullptr);
    const auto e2 =
        ferry_test::expect_throw<ferry::invalid_argument>([&] { (void)ferry::to_torch(c); });
    BOOST_TEST(e2.what().find("no CUDA") != std::string::npos, e2.what());
    BOOST_TEST(!ferry::to_torch(ferry::cuda_tensor()).defined());
}

// What has no counterpart is refused, naming the type: torch's bool, bfloat16, complex, sparse
// and quantized tensors; ferry's u16 before libtorch 2.3.
BOOST_AUTO_TEST_CASE(what_cannot_convert_is_refused_by_name) {
    const std::pair<torch::Tensor, std::string> refused[] = {
        {torch::ones({2}, torch::kBool), "Bool"},
        {torch::ones({2}, torch::kBFloat16), "BFloat16"},
        {torch::ones({2}, torch::kComplexFloat), "ComplexFloat"},
        {torch::eye(3).to_sparse(), "dense strided"},
        {torch::quantize_per_tensor(torch::ones({2}), 0.1, 0, torch::kQUInt8), "dense strided"},
    };
    for (const auto& [t, word] : refused) {
        BOOST_TEST_CONTEXT(word) {
            const auto e = ferry_test::expect_throw<ferry::invalid_argument>(
                [&] { (void)ferry::from_torch(t); });
            BOOST_TEST(e.what().find(word) != std::string::npos, e.what());
            BOOST_TEST(e.what().starts_with("from_torch"), e.what());
        }
    }
    BOOST_TEST(ferry_test::expect_throw<ferry::invalid_argument>(
                   [] { (void)ferry::ferry_dtype(torch::kBool); })
                   .what()
                   .find("Bool") != std::string::npos);
#if !(TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3))
    const ferry::tensor u16(ferry::dtype::u16, {2});
    const auto e =
        ferry_test::expect_throw<ferry::invalid_argument>([&] { (void)ferry::to_torch(u16); });
    BOOST_TEST(e.what().find("uint16") != std::string::npos, e.what());
    BOOST_TEST(e.what().find("i32") != std::string::npos, e.what());
#endif
}

BOOST_AUTO_TEST_SUITE_END()
