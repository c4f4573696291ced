// SPDX-License-Identifier: Apache-2.0
/// \file
/// cuda::transfer_context and cuda_tensor on the fake backend (label `cuda`, every machine):
/// staging accounting, direct copies from pinned memory, sources held until their copy finishes,
/// device memory reuse gated by consumer streams, the normalize dispatch, DLPack, errors.
#include <dlpack/dlpack.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "fake_backend.hpp"
#include "ferry/cuda.hpp"
#include "ferry/error.hpp"
#include "ferry/tensor.hpp"

namespace {

using ferry::cuda::memory_kind;
using ferry_test::fake_backend;

ferry::tensor iota_u8(std::vector<std::int64_t> shape, const ferry::allocator& alloc = {}) {
    ferry::tensor t(ferry::dtype::u8, std::move(shape), alloc);
    auto* p = t.data_as<std::uint8_t>();
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<std::uint8_t>(i * 7 + 3);
    return t;
}

std::vector<std::uint8_t> device_bytes(const ferry::cuda_tensor& t) {
    // The fake's "device" memory is host memory.
    const auto* p = static_cast<const std::uint8_t*>(t.data());
    return {p, p + t.nbytes()};
}

std::vector<std::uint8_t> host_bytes(const ferry::tensor& t) {
    const auto* p = static_cast<const std::uint8_t*>(t.data());
    return {p, p + t.nbytes()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(transfer)

// A pageable tensor is copied once into pinned staging, and the device copy reads the staging
// block (never the pageable memory, which cudaMemcpyAsync would copy synchronously).
BOOST_AUTO_TEST_CASE(pageable_tensor_is_staged_once_through_pinned_memory) {
    auto be = std::make_shared<fake_backend>();
    ferry::cuda::transfer_context ctx({.backend = be});
    ferry::tensor host = iota_u8({4, 8, 8, 3});
    ferry::cuda_tensor d = ctx.copy(host);

    BOOST_TEST(device_bytes(d) == host_bytes(host));
    BOOST_TEST(d.shape() == host.shape());
    BOOST_TEST((d.dtype() == ferry::dtype::u8));
    BOOST_TEST((d.as_tensor().device() == ferry::device{ferry::device_kind::cuda, 0}));
    const auto copies = be->copies();
    BOOST_TEST_REQUIRE(copies.size() == 1U);
    BOOST_TEST(copies[0].src != host.data());
    BOOST_TEST(copies[0].stream == ctx.stream());
    const auto s = ctx.stats();
    BOOST_TEST(s.staged_copies == 1U);
    BOOST_TEST(s.direct_copies == 0U);
    BOOST_TEST(s.staged_bytes == host.nbytes());
    BOOST_TEST(s.bytes == host.nbytes());
    BOOST_TEST(s.tensors == 1U);
    BOOST_TEST(be->allocations(memory_kind::pinned_host) == 1);
}

// A tensor already in pinned memory (collate into a pinned pool) is copied directly: no host
// copy at all.
BOOST_AUTO_TEST_CASE(pinned_tensor_is_copied_directly) {
    auto be = std::make_shared<fake_backend>();
    ferry::cuda::transfer_context ctx({.backend = be});
    ferry::cuda::memory_pool pinned(be, memory_kind::pinned_host);
    ferry::tensor host = iota_u8({2, 16, 16, 3}, pinned.as_allocator());
    ferry::cuda_tensor d = ctx.copy(host);
    const auto copies = be->copies();
    BOOST_TEST_REQUIRE(copies.size() == 1U);
    BOOST_TEST(copies[0].src == host.data());
    BOOST_TEST(device_bytes(d) == host_bytes(host));
    BOOST_TEST(ctx.stats().direct_copies == 1U);
    BOOST_TEST(ctx.stats().staged_copies == 0U);
    BOOST_TEST(ctx.pinned().stats().acquires == 0U);  // the staging pool was not touched
}

// The host memory a copy reads stays alive (and out of its pool) until the copy's event has
// completed, even when the caller drops it at once.
BOOST_AUTO_TEST_CASE(source_is_held_until_its_copy_finishes) {
    auto be = std::make_shared<fake_backend>();
    be->auto_complete = false;
    ferry::cuda::transfer_context ctx({.backend = be});
    ferry::cuda::memory_pool pinned(be, memory_kind::pinned_host);
    {
        ferry::tensor host = iota_u8({1000}, pinned.as_allocator());
        ferry::cuda_tensor d = ctx.copy(host);
    }
    BOOST_TEST(pinned.stats().bytes_in_use > 0U);  // still read by the copy
    BOOST_TEST(ctx.stats().in_flight == 1U);
    be->complete_all();
    BOOST_TEST(ctx.stats().in_flight == 0U);  // stats() lets go of finished sources
    BOOST_TEST(pinned.stats().bytes_in_use == 0U);
}

// A strided tensor arrives contiguous, in row-major order.
BOOST_AUTO_TEST_CASE(strided_tensor_arrives_contiguous) {
    auto be = std::make_shared<fake_backend>();
    ferry::cuda::transfer_context ctx({.backend = be});
    ferry::tensor full = iota_u8({4, 6});
    // Every other column: shape [4, 3], strides [6, 2].
    ferry::tensor strided(full.storage(), ferry::dtype::u8, {4, 3}, {6, 2});
    ferry::cuda_tensor d = ctx.copy(strided);
    BOOST_TEST(device_bytes(d) == host_bytes(strided.clone()));
    BOOST_TEST(d.strides() == (std::vector<std::int64_t>{3, 1}));
}

// Device memory of a released cuda_tensor is reused only after the work queued on the streams
// that used it (the copy stream and every stream passed to wait()) has finished.
BOOST_AUTO_TEST_CASE(device_memory_is_reused_only_after_consumer_streams_finish) {
    auto be = std::make_shared<fake_backend>();
    be->auto_complete = false;
    ferry::cuda::transfer_context ctx({.backend = be});
    void* consumer = reinterpret_cast<void*>(0x77);
    void* first = nullptr;
    {
        ferry::cuda_tensor d = ctx.copy(iota_u8({1 << 16}));
        first = d.data();
        d.wait(consumer);
        const auto waits = be->waits();
        BOOST_TEST_REQUIRE(waits.size() == 1U);
        BOOST_TEST(waits[0].first == consumer);
        BOOST_TEST(waits[0].second == d.event());
    }
    const auto recorded = be->recorded_streams();
    BOOST_TEST(std::count(recorded.begin(), recorded.end(), consumer) == 1);
    ferry::cuda_tensor second = ctx.copy(iota_u8({1 << 16}));
    BOOST_TEST(second.data() != first);  // the consumer may still be reading `first`
    be->complete_all();
    ferry::cuda_tensor third = ctx.copy(iota_u8({1 << 16}));
    BOOST_TEST(third.data() == first);
}

// The transfer's steady state allocates nothing: 1000 batches (images and labels) through one
// context, consumer waiting on its own stream, cost the warm-up's allocations only.
BOOST_AUTO_TEST_CASE(no_allocation_growth_over_1000_batches) {
    auto be = std::make_shared<fake_backend>();
    be->auto_complete = false;
    ferry::cuda::transfer_context ctx({.backend = be});
    ferry::tensor images = iota_u8({8, 32, 32, 3});
    ferry::tensor labels(ferry::dtype::i64, {8});
    std::iota(labels.data_as<std::int64_t>(), labels.data_as<std::int64_t>() + 8, 0);
    int pinned_after_warmup = 0;
    int device_after_warmup = 0;
    int events_after_warmup = 0;
    for (int i = 0; i < 1000; ++i) {
        ferry::cuda_tensor a = ctx.copy(images);
        ferry::cuda_tensor b = ctx.copy(labels);
        a.wait(reinterpret_cast<void*>(0x99));
        b.wait(reinterpret_cast<void*>(0x99));
        be->complete_all();
        if (i == 5) {
            pinned_after_warmup = be->allocations(memory_kind::pinned_host);
            device_after_warmup = be->allocations(memory_kind::device);
            events_after_warmup = be->events_created();
        }
    }
    BOOST_TEST(be->allocations(memory_kind::pinned_host) == pinned_after_warmup);
    BOOST_TEST(be->allocations(memory_kind::device) == device_after_warmup);
    BOOST_TEST(be->events_created() == events_after_warmup);
    BOOST_TEST(ctx.stats().tensors == 2000U);
    BOOST_TEST(be->streams_created() == 1);
}

// normalize: u8 images become f32 (CHW or HWC) with ops::normalize's arithmetic; other tensors
// (labels, a u8 mask whose last extent is not the channel count) are copied as they are.
BOOST_AUTO_TEST_CASE(normalize_converts_u8_images_and_leaves_the_rest) {
    auto be = std::make_shared<fake_backend>();
    ferry::cuda_normalize n{.mean = {0.5F, 0.25F, 0.0F}, .std = {0.5F, 0.25F, 1.0F}};
    ferry::cuda::transfer_context ctx({.normalize = n, .backend = be});
    ferry::tensor img = iota_u8({2, 4, 5, 3});
    ferry::cuda_tensor d = ctx.copy(img);
    BOOST_TEST((d.dtype() == ferry::dtype::f32));
    BOOST_TEST(d.shape() == (std::vector<std::int64_t>{2, 3, 4, 5}));
    const auto* out = static_cast<const float*>(d.data());
    const auto* in = img.data_as<std::uint8_t>();
    for (int i = 0; i < 2; ++i) {
        for (int y = 0; y < 4; ++y) {
            for (int x = 0; x < 5; ++x) {
                for (int c = 0; c < 3; ++c) {
                    const float want =
                        (static_cast<float>(in[((i * 4 + y) * 5 + x) * 3 + c]) / 255.0F -
                         n.mean[c]) /
                        n.std[c];
                    BOOST_TEST(out[((i * 3 + c) * 4 + y) * 5 + x] == want,
                               boost::test_tools::tolerance(1e-5F));
                }
            }
        }
    }
    BOOST_TEST(be->copies().at(0).bytes == img.nbytes());  // bytes on the bus, not floats

    n.chw = false;
    ferry::cuda::transfer_context hwc({.normalize = n, .backend = be});
    BOOST_TEST(hwc.copy(iota_u8({4, 5, 3})).shape() == (std::vector<std::int64_t>{4, 5, 3}));

    ferry::tensor labels(ferry::dtype::i64, {2});
    BOOST_TEST((ctx.copy(labels).dtype() == ferry::dtype::i64));
    ferry::tensor mask = iota_u8({4, 5, 1});
    ferry::cuda_tensor dm = ctx.copy(mask);
    BOOST_TEST((dm.dtype() == ferry::dtype::u8));
    BOOST_TEST(device_bytes(dm) == host_bytes(mask));
    BOOST_TEST(ctx.stats().normalized == 1U);
}

// Options that cannot work fail when the context is made (at build()), naming the problem.
BOOST_AUTO_TEST_CASE(bad_options_fail_when_the_context_is_made) {
    auto be = std::make_shared<fake_backend>();
    BOOST_CHECK_THROW(
        ferry::cuda::transfer_context(
            {.normalize = ferry::cuda_normalize{.mean = {0.5F}, .std = {1, 1}}, .backend = be}),
        ferry::invalid_argument);
    BOOST_CHECK_THROW(
        ferry::cuda::transfer_context(
            {.normalize = ferry::cuda_normalize{.mean = {0.5F}, .std = {0.0F}}, .backend = be}),
        ferry::invalid_argument);
    BOOST_CHECK_THROW(ferry::cuda::transfer_context({.device = 1, .backend = be}),
                      ferry::invalid_argument);
}

// Empty tensors give empty cuda_tensors; a tensor already on the device passes through with
// nothing to wait for; one on another device is refused.
BOOST_AUTO_TEST_CASE(empty_and_device_tensors) {
    auto be = std::make_shared<fake_backend>();
    ferry::cuda::transfer_context ctx({.backend = be});
    ferry::cuda_tensor e = ctx.copy(ferry::tensor{});
    BOOST_TEST(e.empty());
    BOOST_TEST(e.ready());
    e.wait(nullptr);  // nothing to wait for: no call
    BOOST_TEST(be->waits().empty());

    ferry::buffer dev = ferry::allocate_host(16);
    dev.device = {ferry::device_kind::cuda, 0};
    ferry::cuda_tensor same = ctx.copy(ferry::tensor(dev, ferry::dtype::u8, {16}));
    BOOST_TEST(same.data() == static_cast<void*>(dev.data));
    BOOST_TEST(same.event() == nullptr);
    BOOST_TEST(be->copies().empty());
    dev.device.index = 3;
    BOOST_CHECK_THROW((void)ctx.copy(ferry::tensor(dev, ferry::dtype::u8, {16})),
                      ferry::invalid_argument);
}

// A failing copy throws the runtime's error and leaks nothing: later copies work.
BOOST_AUTO_TEST_CASE(a_failed_copy_throws_and_the_context_goes_on) {
    auto be = std::make_shared<fake_backend>();
    ferry::cuda::transfer_context ctx({.backend = be});
    be->fail_next_copy = true;
    const auto e =
        ferry_test::expect_throw<ferry::cuda_error>([&] { (void)ctx.copy(iota_u8({64})); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->native_code() == 999);
    BOOST_TEST((e->code() == ferry::errc::cuda));
    BOOST_TEST(ctx.device_memory().stats().bytes_in_use == 0U);
    BOOST_TEST(device_bytes(ctx.copy(iota_u8({64}))) == host_bytes(iota_u8({64})));
}

// DLPack export: kDLCUDA on the right ordinal, the shape, and the consumer's stream made to wait.
BOOST_AUTO_TEST_CASE(dlpack_export_is_kdlcuda_and_waits_for_the_copy) {
    auto be = std::make_shared<fake_backend>(2);
    ferry::cuda::transfer_context ctx({.device = 2, .backend = be});
    ferry::cuda_tensor d = ctx.copy(iota_u8({2, 3}));
    void* consumer = reinterpret_cast<void*>(0x55);
    DLManagedTensor* m = d.to_dlpack(consumer);
    BOOST_TEST(m->dl_tensor.device.device_type == kDLCUDA);
    BOOST_TEST(m->dl_tensor.device.device_id == 2);
    BOOST_TEST(m->dl_tensor.ndim == 2);
    BOOST_TEST(m->dl_tensor.shape[1] == 3);
    BOOST_TEST(m->dl_tensor.data == d.data());
    BOOST_TEST(be->waits().size() == 1U);
    BOOST_TEST(be->waits()[0].first == consumer);
    const void* block = d.data();
    d = {};  // the export keeps the memory
    BOOST_TEST(ctx.device_memory().stats().bytes_in_use > 0U);
    m->deleter(m);
    BOOST_TEST(ctx.device_memory().stats().bytes_in_use == 0U);
    BOOST_TEST(ctx.copy(iota_u8({2, 3})).data() == block);
    BOOST_TEST(ctx.copy(iota_u8({2, 3})).describe() == "cuda_tensor(u8, [2, 3], cuda:2)");
}

// A failure after the copy is queued (here the normalize launch) must not hand the staging
// block the copy reads back to the pool unguarded: the next copy would rewrite it mid-transfer.
BOOST_AUTO_TEST_CASE(a_failure_after_the_copy_is_queued_never_frees_its_source_early) {
    auto be = std::make_shared<fake_backend>();
    be->auto_complete = false;  // the "GPU" finishes nothing by itself
    ferry::cuda::transfer_context ctx({.normalize = ferry::cuda_normalize{}, .backend = be});
    const ferry::tensor image = iota_u8({2, 4, 4, 3});
    be->fail_next_normalize = true;
    const auto e = ferry_test::expect_throw<ferry::cuda_error>([&] { (void)ctx.copy(image); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->native_code() == 998);
    const ferry::cuda_tensor d = ctx.copy(image);
    BOOST_TEST(be->copies().size() == 2U);
    BOOST_TEST(be->overwrites_in_flight() == 0);
    BOOST_TEST((d.dtype() == ferry::dtype::f32));
}

// The device path refuses the normalize constants the host's ops::normalize refuses (a zero,
// NaN or infinite std) and a mean that is not finite, naming the channel.
BOOST_AUTO_TEST_CASE(normalize_refuses_constants_the_host_refuses) {
    auto be = std::make_shared<fake_backend>();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const auto make = [&](std::vector<float> mean, std::vector<float> sd) {
        ferry::cuda::transfer_context ctx(
            {.normalize = ferry::cuda_normalize{.mean = std::move(mean), .std = std::move(sd)},
             .backend = be});
    };
    const auto message = [&](std::vector<float> mean, std::vector<float> sd) {
        return ferry_test::expect_throw<ferry::invalid_argument>([&] { make(mean, sd); }).what();
    };
    BOOST_TEST(message({0.5F, 0.5F}, {0.2F, nan})
                   .starts_with("to_cuda: normalize std[1] must be finite and non-zero"));
    BOOST_TEST(message({0.5F}, {inf})
                   .starts_with("to_cuda: normalize std[0] must be finite and non-zero"));
    BOOST_TEST(message({0.5F}, {0.0F})
                   .starts_with("to_cuda: normalize std[0] must be finite and non-zero"));
    BOOST_TEST(message({nan}, {0.5F}).starts_with("to_cuda: normalize mean[0] must be finite"));
    BOOST_CHECK_NO_THROW(make({0.5F}, {0.25F}));
}

// cudaStreamPerThread names another stream on the thread that releases the tensor, where the
// event guarding reuse is recorded: wait() refuses it with a message saying what to pass.
BOOST_AUTO_TEST_CASE(wait_refuses_the_per_thread_default_stream) {
    auto be = std::make_shared<fake_backend>();
    ferry::cuda::transfer_context ctx({.backend = be});
    const ferry::cuda_tensor d = ctx.copy(iota_u8({64}));
    const auto e = ferry_test::expect_throw<ferry::invalid_argument>(
        [&] { d.wait(reinterpret_cast<void*>(std::uintptr_t{0x2})); });  // cudaStreamPerThread
    BOOST_TEST(e.what().find("cudaStreamPerThread") != std::string::npos, e.what());
    BOOST_TEST(be->waits().empty());
    d.wait(nullptr);  // the legacy default stream is one stream for every thread
    BOOST_TEST(be->waits().size() == 1U);
}

// The rule for tensors already on the device: no copy, so no normalize and no new layout: they
// pass through as they are, strides included.
BOOST_AUTO_TEST_CASE(device_tensors_pass_through_unnormalized_with_their_strides) {
    auto be = std::make_shared<fake_backend>();
    ferry::cuda::transfer_context ctx({.normalize = ferry::cuda_normalize{}, .backend = be});
    ferry::buffer dev = ferry::allocate_host(4 * 4 * 3);
    dev.device = {ferry::device_kind::cuda, 0};
    // A 4x2x3 view of every other column of a 4x4x3 u8 image on the device.
    const ferry::tensor view(dev, ferry::dtype::u8, {4, 2, 3}, {12, 6, 1});
    const ferry::cuda_tensor d = ctx.copy(view);
    BOOST_TEST((d.dtype() == ferry::dtype::u8));
    BOOST_TEST(d.shape() == view.shape());
    BOOST_TEST(d.strides() == view.strides());
    BOOST_TEST(d.data() == static_cast<void*>(dev.data));
    BOOST_TEST(ctx.stats().normalized == 0U);
    BOOST_TEST(be->copies().empty());
}

BOOST_AUTO_TEST_SUITE_END()
