// SPDX-License-Identifier: Apache-2.0
/// \file
/// What a small merged state costs the heap when it is resumed, measured with glibc's mallinfo2:
/// an executable of its own (ctest `engine.state_limits_heap`), built in every build, the Release
/// one too, because under AddressSanitizer mallinfo2 does not see the allocations (ASan's
/// allocator replaces glibc's), and there the case is reported skipped with that reason.
#define BOOST_TEST_MODULE ferry_state_limits_heap
#include "../support/watchdog_main.hpp"

#include <malloc.h>
#include <ferry/state.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace state_limits_heap_test {

/// Bytes the heap holds now (glibc: small blocks and mmap'd ones).
std::size_t heap_bytes() {
    const auto info = ::mallinfo2();
    return info.uordblks + info.hblkhd;
}

/// The precondition: mallinfo2 sees this process's allocations (an 8 MiB block shows). Where it
/// does not (AddressSanitizer), the case is reported skipped with the reason, printed on stdout
/// in the words ctest's SKIP_REGULAR_EXPRESSION looks for.
boost::test_tools::assertion_result heap_is_measured(boost::unit_test::test_unit_id) {
    constexpr std::size_t block = std::size_t{8} << 20;
    const auto before = heap_bytes();
    std::vector<char> big(block, 1);
    const volatile char* kept = big.data();
    const auto after = heap_bytes();
    (void)kept[block / 2];
    if (after >= before + block) return true;
    const std::string why = "mallinfo2 does not see an 8 MiB allocation (heap " +
                            std::to_string(before) + " bytes before, " + std::to_string(after) +
                            " after): this build's allocator is not glibc's (AddressSanitizer); "
                            "the bound is measured in the Release build";
    std::printf("SKIPPED engine/state_limits_heap: %s\n", why.c_str());
    std::fflush(stdout);
    boost::test_tools::assertion_result r(false);
    r.message() << why;
    return r;
}

}  // namespace state_limits_heap_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(state_limits_heap)
using namespace state_limits_heap_test;

// A 160-byte merged state whose one rank delivered 20 million items: its resumed share costs
// the heap under 1 MiB, not memory per item (it once took 265 MB).
BOOST_AUTO_TEST_CASE(a_small_state_cannot_make_a_resume_allocate_per_item,
                     *boost::unit_test::precondition(heap_is_measured)) {
    const std::string text =
        "ferry-state 1 epoch=0 position=0 children= failed=0 shape=map sampler=n:40000000,seed:1,"
        "rank:0,world:2,remainder:pad,shuffle:1 ranks=0,20000000 merged=1";
    BOOST_TEST(text.size() < 200U);
    const auto st = ferry::pipeline_state::parse(text);
    const auto before = heap_bytes();
    const ferry::resumed_sampler share(st, 0, 1);
    const auto after = heap_bytes();
    BOOST_TEST(after < before + (std::size_t{1} << 20),
               "the share took the heap from " << before << " to " << after << " bytes");
    BOOST_TEST(share.size() == 20'000'000U);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
