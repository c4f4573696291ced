// SPDX-License-Identifier: Apache-2.0
/// \file
/// cuda::memory_pool's bookkeeping on the fake backend (label `cuda`, every machine): reuse,
/// bounded allocation, events gating reuse, the cache limit, out of memory, threads.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../support/expect.hpp"
#include "fake_backend.hpp"
#include "ferry/cuda.hpp"
#include "ferry/error.hpp"
#include "ferry/tensor.hpp"

namespace {

using ferry::cuda::memory_kind;
using ferry::cuda::memory_pool;
using ferry_test::fake_backend;

constexpr std::size_t batch_bytes = std::size_t{32} * 224 * 224 * 3;

}  // namespace

BOOST_AUTO_TEST_SUITE(pool)

// A released block serves the next request of its size: no second cudaHostAlloc.
BOOST_AUTO_TEST_CASE(reuses_a_released_block_without_allocating) {
    auto be = std::make_shared<fake_backend>();
    memory_pool pool(be, memory_kind::pinned_host);
    void* first = nullptr;
    {
        ferry::buffer b = pool.acquire(batch_bytes);
        first = b.data;
        BOOST_TEST((b.device == ferry::device{ferry::device_kind::cuda_host, 0}));
        BOOST_TEST(b.size == batch_bytes);
        BOOST_TEST(pool.stats().bytes_in_use >= batch_bytes);
    }
    BOOST_TEST(pool.stats().bytes_in_use == 0U);
    ferry::buffer again = pool.acquire(batch_bytes - 100);  // a short last batch fits too
    BOOST_TEST(static_cast<void*>(again.data) == first);
    BOOST_TEST(be->allocations(memory_kind::pinned_host) == 1);
    BOOST_TEST(pool.stats().reuses == 1U);
    BOOST_TEST(pool.stats().acquires == 2U);
}

// Steady state allocates nothing: 1000 acquire/release cycles of a training loop's sizes
// (images, labels, a short batch) cost the first cycle's allocations only.
BOOST_AUTO_TEST_CASE(no_allocation_growth_over_1000_acquire_release_cycles) {
    auto be = std::make_shared<fake_backend>();
    be->auto_complete = false;  // events complete one cycle late, as on a busy GPU
    memory_pool pool(be, memory_kind::device);
    int after_warmup = 0;
    int events_after_warmup = 0;
    for (int i = 0; i < 1000; ++i) {
        ferry::buffer images = pool.acquire(i % 10 == 9 ? batch_bytes / 2 : batch_bytes);
        ferry::buffer labels = pool.acquire(32 * 8);
        pool.record_use(images, reinterpret_cast<void*>(0x10));
        pool.record_use(labels, reinterpret_cast<void*>(0x10));
        images = {};
        labels = {};
        be->complete_all();
        if (i == 10) {
            after_warmup = be->allocations(memory_kind::device);
            events_after_warmup = be->events_created();
        }
    }
    BOOST_TEST(be->allocations(memory_kind::device) == after_warmup);
    BOOST_TEST(after_warmup <= 3);
    BOOST_TEST(be->events_created() == events_after_warmup);  // events are recycled too
    BOOST_TEST(pool.stats().bytes_in_use == 0U);
    BOOST_TEST(pool.stats().reuses >= 1990U);
}

// A block whose last use (an event) has not finished is not handed out again; once the event
// completes, it is.
BOOST_AUTO_TEST_CASE(events_gate_reuse) {
    auto be = std::make_shared<fake_backend>();
    be->auto_complete = false;
    memory_pool pool(be, memory_kind::device);
    ferry::buffer a = pool.acquire(4096);
    void* block = a.data;
    pool.record_use(a, reinterpret_cast<void*>(0x20));
    a = {};  // released while "the GPU" still uses it
    BOOST_TEST(pool.stats().blocks_waiting == 1U);
    BOOST_TEST(be->recorded_streams() == std::vector<void*>{reinterpret_cast<void*>(0x20)});

    ferry::buffer b = pool.acquire(4096);
    BOOST_TEST(static_cast<void*>(b.data) != block);
    BOOST_TEST(be->allocations(memory_kind::device) == 2);

    be->complete_all();
    BOOST_TEST(pool.stats().blocks_waiting == 0U);
    ferry::buffer c = pool.acquire(4096);
    BOOST_TEST(static_cast<void*>(c.data) == block);
    BOOST_TEST(be->allocations(memory_kind::device) == 2);
}

// A block released without recorded GPU use needs no event; one used on two streams waits for
// both (an event per stream).
BOOST_AUTO_TEST_CASE(records_one_event_per_stream_used) {
    auto be = std::make_shared<fake_backend>();
    memory_pool pool(be, memory_kind::device);
    { ferry::buffer host_only = pool.acquire(100); }
    BOOST_TEST(be->recorded_streams().empty());
    {
        ferry::buffer b = pool.acquire(100);
        pool.record_use(b, reinterpret_cast<void*>(0x1));
        pool.record_use(b, reinterpret_cast<void*>(0x2));
        pool.record_use(b, reinterpret_cast<void*>(0x1));  // once per stream
    }
    BOOST_TEST(be->recorded_streams().size() == 2U);
}

// A small request never takes a large idle block (best fit, at most twice the size).
BOOST_AUTO_TEST_CASE(does_not_spend_a_large_block_on_a_small_request) {
    auto be = std::make_shared<fake_backend>();
    memory_pool pool(be, memory_kind::pinned_host);
    { ferry::buffer big = pool.acquire(batch_bytes); }
    ferry::buffer small = pool.acquire(256);
    BOOST_TEST(be->allocations(memory_kind::pinned_host) == 2);
    BOOST_TEST(pool.stats().bytes_cached >= batch_bytes);
}

// Idle memory beyond max_cached_bytes goes back to the backend.
BOOST_AUTO_TEST_CASE(frees_idle_blocks_beyond_the_cache_limit) {
    auto be = std::make_shared<fake_backend>();
    memory_pool pool(be, memory_kind::pinned_host, {.max_cached_bytes = std::size_t{3} << 20});
    {
        std::vector<ferry::buffer> held;
        for (int i = 0; i < 5; ++i) held.push_back(pool.acquire(std::size_t{1} << 20));
    }
    BOOST_TEST(pool.stats().bytes_cached <= std::size_t{3} << 20);
    BOOST_TEST(be->frees(memory_kind::pinned_host) == 2);
    pool.trim();
    BOOST_TEST(pool.stats().bytes_cached == 0U);
    BOOST_TEST(be->live_bytes(memory_kind::pinned_host) == 0U);
}

// Out of memory: the pool first gives its idle blocks back and retries; if that is not enough
// it throws a cuda_error naming the kind, the size and what it holds.
BOOST_AUTO_TEST_CASE(out_of_memory_frees_the_cache_then_throws) {
    auto be = std::make_shared<fake_backend>();
    be->memory_limit = std::size_t{3} << 20;
    memory_pool pool(be, memory_kind::device);
    { ferry::buffer idle = pool.acquire(std::size_t{2} << 20); }
    ferry::buffer a = pool.acquire(std::size_t{3} << 20);  // fits only once `idle` is freed
    BOOST_TEST(be->frees(memory_kind::device) == 1);
    const auto e = ferry_test::expect_throw<ferry::cuda_error>(
        [&] { (void)pool.acquire(std::size_t{1} << 20); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST((e->code() == ferry::errc::cuda));
    const std::string what = e.what();
    BOOST_TEST(what.find("out of device memory") != std::string::npos, what);
    BOOST_TEST(what.find("1048576 bytes") != std::string::npos, what);
}

// as_allocator() is the hook collate takes: a tensor built with it lives in the pool's memory
// and gives it back when it goes.
BOOST_AUTO_TEST_CASE(as_allocator_builds_tensors_in_pool_memory) {
    auto be = std::make_shared<fake_backend>();
    memory_pool pool(be, memory_kind::pinned_host);
    {
        ferry::tensor t(ferry::dtype::f32, {8, 3, 4}, pool.as_allocator());
        BOOST_TEST((t.device().kind == ferry::device_kind::cuda_host));
        BOOST_TEST(be->is_pinned_block(t.data()));
        BOOST_TEST(pool.stats().bytes_in_use >= 8U * 3 * 4 * 4);
    }
    BOOST_TEST(pool.stats().bytes_in_use == 0U);
}

// record_use on memory the pool did not hand out is a caller's bug, reported as such.
BOOST_AUTO_TEST_CASE(record_use_rejects_a_foreign_buffer) {
    memory_pool pool(std::make_shared<fake_backend>(), memory_kind::device);
    ferry::buffer heap = ferry::allocate_host(64);
    BOOST_CHECK_THROW(pool.record_use(heap, nullptr), ferry::invalid_argument);
    BOOST_CHECK_THROW(memory_pool(nullptr, memory_kind::device), ferry::invalid_argument);
}

// Buffers keep the pool alive: memory released after the pool handle is gone still returns,
// and everything is freed at the end.
BOOST_AUTO_TEST_CASE(buffers_outlive_the_pool_handle) {
    auto be = std::make_shared<fake_backend>();
    ferry::buffer b;
    {
        memory_pool pool(be, memory_kind::device);
        b = pool.acquire(1000);
    }
    std::memset(b.data, 7, 1000);
    b = {};
    BOOST_TEST(be->live_bytes(memory_kind::device) == 0U);
}

// Acquire and release from several threads at once (the consumer releases while the stage
// acquires): counts stay consistent and nothing leaks.
BOOST_AUTO_TEST_CASE(concurrent_acquire_and_release_stay_consistent) {
    auto be = std::make_shared<fake_backend>();
    memory_pool pool(be, memory_kind::device);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&pool, t] {
            for (int i = 0; i < 500; ++i) {
                ferry::buffer b = pool.acquire(4096 * static_cast<std::size_t>(1 + (i + t) % 3));
                pool.record_use(b, reinterpret_cast<void*>(0x30));
                static_cast<unsigned char*>(static_cast<void*>(b.data))[0] = 1;
            }
        });
    }
    for (auto& th : threads) th.join();
    const auto s = pool.stats();
    BOOST_TEST(s.bytes_in_use == 0U);
    BOOST_TEST(s.acquires == 2000U);
    BOOST_TEST(be->allocations(memory_kind::device) <= 12);  // at most 3 sizes x 4 threads
}

// Out of memory while the cache holds blocks the GPU is still using: the pool waits for their
// last use, frees them and retries, instead of failing an allocation that fits.
BOOST_AUTO_TEST_CASE(out_of_memory_waits_for_busy_cached_blocks_then_retries) {
    auto be = std::make_shared<fake_backend>();
    be->memory_limit = std::size_t{3} << 20;
    be->auto_complete = false;  // the block's last use stays pending until waited for
    void* const stream = reinterpret_cast<void*>(std::uintptr_t{0x77});
    memory_pool pool(be, memory_kind::device);
    {
        ferry::buffer busy = pool.acquire(std::size_t{2} << 20);
        pool.record_use(busy, stream);
    }
    BOOST_TEST(pool.stats().blocks_waiting == 1U);
    ferry::buffer a = pool.acquire(std::size_t{3} << 20);  // fits only once `busy` is freed
    BOOST_TEST(a.size == (std::size_t{3} << 20));
    BOOST_TEST(be->frees(memory_kind::device) == 1);
    BOOST_TEST(pool.stats().retries_after_waiting == 1U);
    BOOST_TEST(pool.stats().bytes_cached == 0U);
}

// A block whose release cannot record its event (its consumer stream was destroyed first) is
// never handed out again, and the pool says so.
BOOST_AUTO_TEST_CASE(a_block_without_an_event_is_abandoned_not_reused) {
    auto be = std::make_shared<fake_backend>();
    void* const gone = reinterpret_cast<void*>(std::uintptr_t{0x99});
    be->fail_record_on = gone;
    memory_pool pool(be, memory_kind::device);
    void* first = nullptr;
    {
        ferry::buffer b = pool.acquire(4096);
        first = b.data;
        pool.record_use(b, gone);
    }
    BOOST_TEST(pool.stats().blocks_abandoned == 1U);
    BOOST_TEST(pool.stats().bytes_cached == 0U);
    ferry::buffer next = pool.acquire(4096);
    BOOST_TEST(static_cast<void*>(next.data) != first);
    BOOST_TEST(be->allocations(memory_kind::device) == 2);
}

BOOST_AUTO_TEST_SUITE_END()
