// SPDX-License-Identifier: Apache-2.0
/// \file
/// Device cases (label `gpu`): bytes round-trip, the normalize kernel against a CPU reference
/// (bit for bit), a not-ready query before a launch, the caller's device kept (two devices), no
/// allocation growth over 1000 batches, a consumer on its own stream. Skipped, and reported as
/// skipped (Boost.Test precondition; ctest marks the `cuda.gpu` test Skipped), where
/// `cuda::device_count()` is 0.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ferry/cuda.hpp"
#include "ferry/ferry.hpp"

namespace {

/// The suite's precondition: a device must be present. Prints the skip once, on stdout, in the
/// words ctest's SKIP_REGULAR_EXPRESSION looks for.
boost::test_tools::assertion_result has_device(boost::unit_test::test_unit_id) {
    if (ferry::cuda::device_count() > 0) return true;
    static const bool said = [] {
        std::printf("SKIPPED gpu cases: no CUDA device (ferry::cuda::device_count() == 0)\n");
        std::fflush(stdout);
        return true;
    }();
    (void)said;
    boost::test_tools::assertion_result r(false);
    r.message() << "no CUDA device (ferry::cuda::device_count() == 0)";
    return r;
}

void check(cudaError_t e, const char* what) {
    BOOST_REQUIRE_MESSAGE(e == cudaSuccess, what << ": " << cudaGetErrorString(e));
}

ferry::tensor random_u8(std::vector<std::int64_t> shape, unsigned seed,
                        const ferry::allocator& alloc = {}) {
    ferry::tensor t(ferry::dtype::u8, std::move(shape), alloc);
    std::mt19937 rng(seed);
    auto* p = t.data_as<std::uint8_t>();
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<std::uint8_t>(rng());
    return t;
}

/// The device bytes, read back on `stream` after waiting for the copy.
std::vector<std::uint8_t> read_back(const ferry::cuda_tensor& d, cudaStream_t stream) {
    std::vector<std::uint8_t> out(d.nbytes());
    d.wait(stream);
    check(cudaMemcpyAsync(out.data(), d.data(), d.nbytes(), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync D2H");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return out;
}

std::vector<std::uint8_t> bytes_of(const ferry::tensor& t) {
    const auto* p = static_cast<const std::uint8_t*>(t.data());
    return {p, p + t.nbytes()};
}

struct stream_fixture {
    stream_fixture() { (void)cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); }
    ~stream_fixture() { (void)cudaStreamDestroy(stream); }
    stream_fixture(const stream_fixture&) = delete;
    stream_fixture& operator=(const stream_fixture&) = delete;
    cudaStream_t stream = nullptr;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu,
                      *boost::unit_test::label("gpu") * boost::unit_test::precondition(has_device))

// A 32x224x224x3 batch arrives byte for byte, from pageable and from pinned memory, through a
// to_cuda() pipeline.
BOOST_FIXTURE_TEST_CASE(round_trip_bytes_are_equal, stream_fixture) {
    ferry::cuda::pinned_pool pinned;
    std::vector<ferry::tensor> batches{random_u8({32, 224, 224, 3}, 1),
                                       random_u8({32, 224, 224, 3}, 2, pinned.as_allocator()),
                                       random_u8({7, 3}, 3)};
    const std::vector<ferry::tensor> expected = batches;
    auto pipe = ferry::from(std::move(batches)).to_cuda().build({.threads = 2});
    std::size_t i = 0;
    for (const ferry::cuda_tensor& d : pipe) {
        BOOST_TEST(d.shape() == expected.at(i).shape());
        BOOST_TEST(d.device_index() == 0);
        BOOST_TEST((read_back(d, stream) == bytes_of(expected[i])));
        ++i;
    }
    BOOST_TEST(i == 3U);
}

// The device normalize (CHW and HWC) matches a CPU reference of ops::normalize's arithmetic.
BOOST_FIXTURE_TEST_CASE(normalize_kernel_matches_a_cpu_reference, stream_fixture) {
    for (bool chw : {true, false}) {
        const ferry::cuda_normalize n{.chw = chw};
        ferry::cuda::transfer_context ctx({.normalize = n});
        const ferry::tensor img = random_u8({4, 37, 53, 3}, 7);
        ferry::cuda_tensor d = ctx.copy(img);
        BOOST_TEST((d.dtype() == ferry::dtype::f32));
        std::vector<float> got(static_cast<std::size_t>(d.numel()));
        d.wait(stream);
        check(cudaMemcpyAsync(got.data(), d.data(), d.nbytes(), cudaMemcpyDeviceToHost, stream),
              "D2H");
        check(cudaStreamSynchronize(stream), "sync");
        const auto* in = img.data_as<std::uint8_t>();
        float worst = 0.0F;
        const int h = 37, w = 53;
        for (int i = 0; i < 4; ++i) {
            for (int y = 0; y < h; ++y) {
                for (int x = 0; x < w; ++x) {
                    for (int c = 0; c < 3; ++c) {
                        const float want =
                            (static_cast<float>(in[((i * h + y) * w + x) * 3 + c]) / 255.0F -
                             n.mean[c]) /
                            n.std[c];
                        const std::size_t at =
                            chw ? static_cast<std::size_t>(((i * 3 + c) * h + y) * w + x)
                                : static_cast<std::size_t>(((i * h + y) * w + x) * 3 + c);
                        worst = std::max(worst, std::abs(got[at] - want));
                    }
                }
            }
        }
        BOOST_TEST(worst < 1e-5F, "chw=" << chw << " worst difference " << worst);

        // And bit for bit what the host's ops::normalize computes: x * scale, rounded, + shift,
        // rounded (no fused multiply-add on the device).
        int differ = 0;
        for (std::int64_t i = 0; i < img.numel(); ++i) {
            const int c = static_cast<int>(i % 3);
            const float scale = 1.0F / (255.0F * n.std[c]);
            const float shift = -n.mean[c] / n.std[c];
            volatile float product = static_cast<float>(in[i]) * scale;  // rounded here
            const float want = product + shift;
            const std::int64_t p = i / 3;
            const std::size_t at =
                chw ? static_cast<std::size_t>((p / (h * w) * 3 + c) * (h * w) + p % (h * w))
                    : static_cast<std::size_t>(i);
            if (got[at] != want) ++differ;
        }
        BOOST_TEST(differ == 0, "chw=" << chw << ": " << differ << " values differ from the host");
    }
}

// A "not ready" event query leaves cudaErrorNotReady as the thread's last error; the backend
// clears it, so the normalize launch right after it does not report it as its own failure.
BOOST_FIXTURE_TEST_CASE(a_not_ready_query_does_not_fail_the_next_launch, stream_fixture) {
    auto be = ferry::cuda::runtime_backend(0);
    constexpr std::size_t big = std::size_t{256} << 20;
    void* a = nullptr;
    void* b = nullptr;
    check(cudaMalloc(&a, big), "cudaMalloc");
    check(cudaMalloc(&b, big), "cudaMalloc");
    ferry::cuda::transfer_context ctx({.normalize = ferry::cuda_normalize{}, .backend = be});
    for (int round = 0; round < 4; ++round) {
        // A long copy, then an event behind it that is not ready yet when asked.
        check(cudaMemcpyAsync(b, a, big, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
        void* ev = be->create_event();
        BOOST_REQUIRE(be->record(ev, stream));
        const bool done = be->completed(ev);
        BOOST_TEST((cudaPeekAtLastError() == cudaSuccess), "round " << round << ", ready " << done);
        BOOST_CHECK_NO_THROW((void)ctx.copy(random_u8({2, 16, 16, 3}, 3)));
        check(cudaStreamSynchronize(stream), "sync");
        be->destroy_event(ev);
    }
    (void)cudaFree(a);
    (void)cudaFree(b);
}

/// Precondition: two devices (the device guard only shows with more than one).
boost::test_tools::assertion_result two_devices(boost::unit_test::test_unit_id) {
    boost::test_tools::assertion_result r(ferry::cuda::device_count() >= 2);
    r.message() << "needs two CUDA devices";
    return r;
}

// Every call of the runtime backend leaves the calling thread on the device it had, and its
// events, streams and copies belong to the backend's device.
BOOST_FIXTURE_TEST_CASE(backend_calls_keep_the_callers_device, stream_fixture,
                        *boost::unit_test::precondition(two_devices)) {
    check(cudaSetDevice(1), "cudaSetDevice(1)");
    auto be = ferry::cuda::runtime_backend(0);
    int current = -1;
    auto expect_1 = [&](const char* after) {
        check(cudaGetDevice(&current), "cudaGetDevice");
        BOOST_TEST(current == 1, "after " << after);
    };
    expect_1("runtime_backend");
    ferry::cuda::transfer_context ctx({.normalize = ferry::cuda_normalize{}, .backend = be});
    expect_1("transfer_context");
    ferry::cuda_tensor d = ctx.copy(random_u8({2, 8, 8, 3}, 9));
    expect_1("copy");
    BOOST_TEST(d.device_index() == 0);
    d.synchronize();
    expect_1("synchronize");
    (void)d.ready();
    expect_1("ready");
    cudaPointerAttributes attr{};
    check(cudaPointerGetAttributes(&attr, d.data()), "cudaPointerGetAttributes");
    BOOST_TEST(attr.device == 0);
    d = {};
    ctx.device_memory().trim();
    expect_1("release and trim");
    check(cudaSetDevice(0), "cudaSetDevice(0)");
}

// 1000 batches through one transfer (the consumer waiting on its own stream) cost the warm-up's
// allocations only, and the device's free memory does not shrink over a 1000-batch pipeline.
BOOST_FIXTURE_TEST_CASE(no_allocation_growth_over_1000_batches, stream_fixture) {
    ferry::cuda::transfer_context ctx({.normalize = ferry::cuda_normalize{}});
    const ferry::tensor images = random_u8({8, 64, 64, 3}, 11);
    ferry::tensor labels(ferry::dtype::i64, {8});
    // How far the host runs ahead of the GPU (up to 16 batches between synchronizations) decides
    // how many blocks the warm-up needs, so the count is compared between two later windows: in
    // steady state the second half of the run allocates nothing at all.
    std::uint64_t device_at_500 = 0;
    std::uint64_t pinned_at_500 = 0;
    for (int i = 0; i < 1000; ++i) {
        ferry::cuda_tensor a = ctx.copy(images);
        ferry::cuda_tensor b = ctx.copy(labels);
        a.wait(stream);
        b.wait(stream);
        if (i % 16 == 0) check(cudaStreamSynchronize(stream), "sync");
        if (i == 500) {
            device_at_500 = ctx.device_memory().stats().allocations;
            pinned_at_500 = ctx.pinned().stats().allocations;
        }
    }
    check(cudaStreamSynchronize(stream), "sync");
    BOOST_TEST(ctx.device_memory().stats().allocations == device_at_500,
               "device allocations in batches 500-999");
    BOOST_TEST(ctx.pinned().stats().allocations == pinned_at_500,
               "pinned allocations in batches 500-999");
    BOOST_TEST(device_at_500 <= 64U, "device allocations of the first 500 batches");

    std::size_t free_before = 0, free_after = 0, total = 0;
    std::vector<ferry::tensor> many(1000, images);
    auto pipe = ferry::from(std::move(many)).to_cuda().build({.threads = 2});
    int n = 0;
    for (const ferry::cuda_tensor& d : pipe) {
        d.wait(stream);
        if (n == 50) {
            check(cudaStreamSynchronize(stream), "sync");
            check(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo");
        }
        ++n;
    }
    check(cudaStreamSynchronize(stream), "sync");
    check(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
    BOOST_TEST(n == 1000);
    BOOST_TEST(free_after + (std::size_t{32} << 20) >= free_before,
               "free device memory went from " << free_before << " to " << free_after);
}

// A consumer on its own non-blocking stream that waits on the event reads the right bytes, even
// when each tensor is released right after its read was queued and the next copy may reuse the
// memory: the read finishes before the reuse (no race).
BOOST_FIXTURE_TEST_CASE(consumer_on_its_own_stream_waits_on_the_event, stream_fixture) {
    ferry::cuda::transfer_context ctx({});
    constexpr int rounds = 20;
    const std::int64_t n = std::int64_t{64} << 20;  // 64 MiB: copies long enough to race
    std::vector<ferry::tensor> sources;
    for (int r = 0; r < 2; ++r)
        sources.push_back(random_u8({n}, 100 + r, ctx.pinned().as_allocator()));
    std::vector<void*> results(rounds, nullptr);
    for (auto& p : results)
        check(cudaMallocHost(&p, static_cast<std::size_t>(n)), "cudaMallocHost");
    for (int r = 0; r < rounds; ++r) {
        ferry::cuda_tensor d = ctx.copy(sources[r % 2]);
        d.wait(stream);
        check(cudaMemcpyAsync(results[r], d.data(), d.nbytes(), cudaMemcpyDeviceToHost, stream),
              "D2H");
        // `d` goes here, with the read still queued.
    }
    check(cudaStreamSynchronize(stream), "sync");
    for (int r = 0; r < rounds; ++r) {
        BOOST_TEST(std::memcmp(results[r], sources[r % 2].data(), static_cast<std::size_t>(n)) == 0,
                   "round " << r);
        (void)cudaFreeHost(results[r]);
    }
}

// DLPack export names the CUDA device and the memory the tensor has.
BOOST_AUTO_TEST_CASE(dlpack_export_on_the_device) {
    ferry::cuda::transfer_context ctx({});
    ferry::cuda_tensor d = ctx.copy(random_u8({2, 3, 4}, 5));
    DLManagedTensor* m = d.to_dlpack(nullptr);
    BOOST_TEST(m->dl_tensor.device.device_type == kDLCUDA);
    BOOST_TEST(m->dl_tensor.device.device_id == 0);
    BOOST_TEST(m->dl_tensor.data == d.data());
    cudaPointerAttributes attr{};
    check(cudaPointerGetAttributes(&attr, m->dl_tensor.data), "cudaPointerGetAttributes");
    BOOST_TEST((attr.type == cudaMemoryTypeDevice));
    m->deleter(m);
}

BOOST_AUTO_TEST_SUITE_END()
