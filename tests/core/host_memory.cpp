// SPDX-License-Identifier: Apache-2.0
/// \file
/// Host memory (allocate_host): the bounded cache of freed blocks, slab carving, huge-page
/// alignment, what goes back to the kernel, and tensors recycling their storage through it.
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <utility>
#include <vector>

#include "../support/ops_support.hpp"

// allocate_host recycles blocks of 32 KiB and more through a bounded process-wide cache.
BOOST_AUTO_TEST_SUITE(host_block_cache)

/// Sets the cache limit for one test and puts the previous one back.
struct cache_limit {
    explicit cache_limit(std::size_t bytes) : previous(ferry::set_host_cache_limit(bytes)) {}
    ~cache_limit() { ferry::set_host_cache_limit(previous); }
    cache_limit(const cache_limit&) = delete;
    cache_limit& operator=(const cache_limit&) = delete;
    std::size_t previous;
};

BOOST_AUTO_TEST_CASE(a_freed_block_serves_the_next_request_of_its_size_class) {
    const cache_limit limit(std::size_t{8} << 20);
    ferry::set_host_cache_limit(0);  // start empty
    ferry::set_host_cache_limit(std::size_t{8} << 20);
    std::byte* first = nullptr;
    {
        ferry::buffer b = ferry::allocate_host(100'000);
        BOOST_TEST(b.size == 100'000u);
        BOOST_TEST(reinterpret_cast<std::uintptr_t>(b.data) % 64 == 0u);
        std::memset(b.data, 0x5A, b.size);  // all of it is usable
        first = b.data;
        BOOST_TEST(ferry::host_cache_bytes() == 0u);
    }
    // 100 000 bytes are in the class of 106 496 = 13 x 8 KiB (eight classes per power of two).
    BOOST_TEST(ferry::host_cache_bytes() == 106'496u);
    ferry::buffer again = ferry::allocate_host(101'000);  // same class
    BOOST_TEST(again.data == first);
    BOOST_TEST(again.size == 101'000u);
    BOOST_TEST(ferry::host_cache_bytes() == 0u);
    ferry::buffer other = ferry::allocate_host(200'000);  // another class: fresh memory
    BOOST_TEST(other.data != first);
}

BOOST_AUTO_TEST_CASE(small_blocks_are_not_cached) {
    const cache_limit limit(std::size_t{8} << 20);
    ferry::set_host_cache_limit(0);
    ferry::set_host_cache_limit(std::size_t{8} << 20);
    { ferry::buffer b = ferry::allocate_host(1000); }
    { ferry::buffer b = ferry::allocate_host(32 * 1024 - 1); }
    BOOST_TEST(ferry::host_cache_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(the_cache_never_holds_more_than_its_limit) {
    const cache_limit limit(300'000);
    ferry::set_host_cache_limit(0);
    ferry::set_host_cache_limit(300'000);
    {
        std::vector<ferry::buffer> live;
        for (int i = 0; i < 20; ++i) live.push_back(ferry::allocate_host(100'000));
    }  // 20 blocks of 106 496 bytes freed: two fit
    BOOST_TEST(ferry::host_cache_bytes() == 212'992u);
    // Lowering the limit frees what is over it; 0 empties the cache and stops recycling.
    BOOST_TEST(ferry::set_host_cache_limit(150'000) == 300'000u);
    BOOST_TEST(ferry::host_cache_bytes() == 106'496u);
    ferry::set_host_cache_limit(0);
    BOOST_TEST(ferry::host_cache_bytes() == 0u);
    { ferry::buffer b = ferry::allocate_host(100'000); }
    BOOST_TEST(ferry::host_cache_bytes() == 0u);
}

// Over its limit the cache lets the least recently freed blocks go, not the one just freed: a
// size class in use keeps its block (still mapped and warm) when other classes have gone stale.
BOOST_AUTO_TEST_CASE(a_size_class_in_use_keeps_its_block_when_stale_ones_fill_the_cache) {
    const cache_limit limit(std::size_t{1} << 20);
    ferry::set_host_cache_limit(0);
    ferry::set_host_cache_limit(std::size_t{1} << 20);
    {
        std::vector<ferry::buffer> stale;
        for (int i = 0; i < 9; ++i) stale.push_back(ferry::allocate_host(100'000));
    }  // 9 x 106 496 bytes cached: 958 464 of 1 MiB
    BOOST_TEST(ferry::host_cache_bytes() == 958'464u);
    std::byte* hot = nullptr;
    {
        const ferry::buffer b = ferry::allocate_host(200'000);  // class 212 992
        hot = b.data;
    }  // over the limit by two stale blocks: they go, the hot one stays
    BOOST_TEST(ferry::host_cache_bytes() == 7 * 106'496u + 212'992u);
    for (int i = 0; i < 3; ++i) {
        const ferry::buffer b = ferry::allocate_host(200'000);
        BOOST_TEST(b.data == hot);
    }
}

// Blocks under 2 MiB are carved from shared 2 MiB slabs: live blocks of every size must stay
// apart, aligned, and keep what was written to them.
BOOST_AUTO_TEST_CASE(live_blocks_of_mixed_sizes_never_overlap) {
    const cache_limit limit(std::size_t{64} << 20);
    std::vector<ferry::buffer> live;
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::size_t> size(32 * 1024, (std::size_t{2} << 20) - 1);
    for (int i = 0; i < 60; ++i) {
        live.push_back(ferry::allocate_host(size(rng)));
        BOOST_TEST(reinterpret_cast<std::uintptr_t>(live.back().data) % 64 == 0u);
        std::memset(live.back().data, i, live.back().size);
        if (i % 3 == 2) live.erase(live.begin() + i % 7 % static_cast<int>(live.size()));
    }
    for (const ferry::buffer& b : live) {
        const auto first = static_cast<unsigned char>(b.data[0]);
        const bool intact = std::all_of(b.data, b.data + b.size, [&](std::byte x) {
            return static_cast<unsigned char>(x) == first;
        });
        BOOST_TEST(intact);
    }
}

/// This process's resident memory, from /proc/self/statm.
std::size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    std::size_t resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// (Not under AddressSanitizer, whose allocator serves these blocks and quarantines what is
// freed, nor ThreadSanitizer, whose shadow of every byte written stays resident.)
// What the cache does not keep goes back to the kernel: a loader's memory falls when its
// buffers are freed, not only its heap's bookkeeping.
BOOST_AUTO_TEST_CASE(blocks_the_cache_does_not_keep_leave_the_resident_memory) {
    const cache_limit limit(0);
    const std::size_t before = resident_bytes();
    std::vector<ferry::buffer> kept;
    {
        std::vector<ferry::buffer> live;
        for (int i = 0; i < 200; ++i) {  // 200 x 150 528 bytes: 29 MiB
            live.push_back(ferry::allocate_host(std::size_t{224} * 224 * 3));
            std::memset(live.back().data, 1, live.back().size);
        }
        { ferry::buffer big = ferry::allocate_host(std::size_t{20} << 20); }
        BOOST_TEST(resident_bytes() > before + (std::size_t{25} << 20));
        // Every tenth stays in use: most slabs keep a live block, so their other blocks
        // must give their pages back one by one.
        for (std::size_t i = 0; i < live.size(); i += 10) kept.push_back(std::move(live[i]));
    }
    BOOST_TEST(ferry::host_cache_bytes() == 0u);
    // 20 live blocks (3 MiB), slab tails that were never carved, the slab being carved now.
    BOOST_TEST(resident_bytes() < before + (std::size_t{10} << 20));
}
#endif

BOOST_AUTO_TEST_CASE(blocks_of_2_mib_and_more_start_on_a_huge_page_boundary) {
    const ferry::buffer batch = ferry::allocate_host(std::size_t{32} * 224 * 224 * 3);
    BOOST_TEST(reinterpret_cast<std::uintptr_t>(batch.data) % (std::uintptr_t{2} << 20) == 0u);
    std::memset(batch.data, 1, batch.size);
}

BOOST_AUTO_TEST_CASE(tensors_and_batches_recycle_their_storage) {
    const cache_limit limit(std::size_t{64} << 20);
    ferry::set_host_cache_limit(0);
    ferry::set_host_cache_limit(std::size_t{64} << 20);
    const std::byte* storage = nullptr;
    {
        ferry::tensor t(ferry::dtype::u8, {32, 224, 224, 3});
        storage = t.bytes().data();
    }
    ferry::tensor again(ferry::dtype::f32, {32, 3, 224, 224 / 4});  // the same byte count
    BOOST_TEST(again.bytes().data() == storage);
}

BOOST_AUTO_TEST_SUITE_END()
