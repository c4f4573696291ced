// SPDX-License-Identifier: Apache-2.0
/// \file
/// Epochs: each loop over a pipeline is one epoch; ranges are read again, epoch factories are
/// told the epoch number, generators go on where they stopped.
#include <oneapi/tbb/task_arena.h>

#include <boost/test/unit_test.hpp>
#include <mutex>
#include <set>

#include "support.hpp"

using namespace ferry_test;

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(epochs)

// Iterating a pipeline three times reads an owned range three times, whole and in order.
BOOST_AUTO_TEST_CASE(owned_range_is_read_again_every_epoch) {
    auto p = ferry::from(iota(200)).map([](int x) { return x + 1; }, 4).build({.threads = 2});
    std::vector<int> want(200);
    std::iota(want.begin(), want.end(), 1);
    for (int epoch = 0; epoch < 3; ++epoch) {
        std::vector<int> got;
        for (int x : p) got.push_back(x);
        BOOST_TEST(got == want, boost::test_tools::per_element());
    }
    const auto s = p.stats();
    BOOST_TEST(s.epochs == 3u);
    BOOST_TEST(s.produced == 600u);
    BOOST_TEST(s.delivered == 600u);
    check_complete_accounting(s);
}

// A range passed as an lvalue is read in place each epoch, so changes between epochs show.
BOOST_AUTO_TEST_CASE(borrowed_range_is_read_in_place_each_epoch) {
    std::vector<int> data = iota(50);
    auto p = ferry::from(data).map([](int x) { return x; }, 2).build({.threads = 2});
    BOOST_TEST(drain(p) == iota(50), boost::test_tools::per_element());
    data.resize(20);
    BOOST_TEST(drain(p) == iota(20), boost::test_tools::per_element());
    BOOST_TEST(p.stats().epochs == 2u);
}

// An epoch factory is called with 0, 1, 2 and each epoch delivers exactly the range it made.
BOOST_AUTO_TEST_CASE(epoch_factory_receives_each_epoch_number) {
    std::vector<std::uint64_t> calls;
    const auto shuffled = [](std::uint64_t epoch) {
        auto v = iota(100);
        std::shuffle(v.begin(), v.end(), std::mt19937(static_cast<unsigned>(epoch)));
        return v;
    };
    auto p = ferry::from([&](std::uint64_t epoch) {
                 calls.push_back(epoch);
                 return shuffled(epoch);
             })
                 .map([](int x) { return x; }, 4)
                 .build({.threads = 2});
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
        BOOST_TEST(drain(p) == shuffled(epoch), boost::test_tools::per_element());
    }
    BOOST_TEST(calls == (std::vector<std::uint64_t>{0, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(p.stats().epochs == 3u);
}

// An epoch left early still counts: the next loop is the next epoch, and starts from the top.
BOOST_AUTO_TEST_CASE(early_break_ends_the_epoch_and_the_next_loop_starts_the_next) {
    std::vector<std::uint64_t> calls;
    auto p = ferry::from([&](std::uint64_t epoch) {
                 calls.push_back(epoch);
                 return iota(100);
             })
                 .map([](int x) { return x; }, 4)
                 .build({.threads = 2});
    int n = 0;
    for (int x : p) {
        BOOST_TEST(x == n);
        if (++n == 10) break;
    }
    BOOST_TEST(drain(p) == iota(100), boost::test_tools::per_element());
    BOOST_TEST(calls == (std::vector<std::uint64_t>{0, 1}), boost::test_tools::per_element());
    const auto s = p.stats();
    BOOST_TEST(s.epochs == 2u);
    BOOST_TEST(s.delivered == 110u);
    check_accounting(s);
}

// next() continues the running epoch: reading with next() and then a loop is one epoch.
BOOST_AUTO_TEST_CASE(loop_continues_an_epoch_started_by_next) {
    auto p = ferry::from(iota(30)).build({.threads = 1});
    BOOST_TEST(p.next().value() == 0);
    BOOST_TEST(p.next().value() == 1);
    std::vector<int> rest;
    for (int x : p) rest.push_back(x);
    std::vector<int> want(28);
    std::iota(want.begin(), want.end(), 2);
    BOOST_TEST(rest == want, boost::test_tools::per_element());
    BOOST_TEST(p.stats().epochs == 1u);
}

// A generator is not restarted: each epoch calls it on from where the last one stopped.
BOOST_AUTO_TEST_CASE(generator_continues_where_the_last_epoch_stopped) {
    auto p = ferry::from([i = 0, calls = 0]() mutable -> std::optional<int> {
                 // nullopt after every 5 items: an epoch of 5
                 if (++calls % 6 == 0) return std::nullopt;
                 return i++;
             }).build({.threads = 1});
    BOOST_TEST(drain(p) == (std::vector<int>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
    BOOST_TEST(drain(p) == (std::vector<int>{5, 6, 7, 8, 9}), boost::test_tools::per_element());
    BOOST_TEST(p.stats().epochs == 2u);
}

// A pipeline moved mid-epoch carries its epoch along: the new owner reads on from there.
BOOST_AUTO_TEST_CASE(moved_pipeline_continues_its_epoch) {
    auto p = ferry::from(iota(50)).map([](int x) { return x; }, 4).build({.threads = 2});
    BOOST_TEST(p.next().value() == 0);
    BOOST_TEST(p.next().value() == 1);
    std::vector<ferry::pipeline<int>> owners;
    owners.push_back(std::move(p));
    std::vector<int> want(48);
    std::iota(want.begin(), want.end(), 2);
    BOOST_TEST(drain(owners.front()) == want, boost::test_tools::per_element());
    BOOST_TEST(owners.front().stats().epochs == 1u);
}

// Compute stages run in the pipeline's own arena of `threads` threads in every epoch, also after
// an epoch left early (which resets the graph). Peeks at TBB (the only test that does): the arena
// a call runs in is what `threads` promises, and no other observable shows it deterministically.
BOOST_AUTO_TEST_CASE(compute_stages_keep_the_pipelines_arena_after_an_early_break) {
    std::mutex mutex;
    std::set<int> arena_sizes;
    auto p = ferry::from(iota(100))
                 .map(
                     [&](int x) {
                         std::lock_guard lock(mutex);
                         arena_sizes.insert(tbb::this_task_arena::max_concurrency());
                         return x;
                     },
                     4)
                 .build({.threads = 3});
    const auto sizes_after = [&](auto&& run_epoch) {
        {
            std::lock_guard lock(mutex);
            arena_sizes.clear();
        }
        run_epoch();
        std::lock_guard lock(mutex);
        return arena_sizes;
    };
    const std::set<int> three{3};
    BOOST_TEST(sizes_after([&] { (void)drain(p); }) == three, boost::test_tools::per_element());
    BOOST_TEST(sizes_after([&] {
                   int n = 0;
                   for (int x : p) {
                       (void)x;
                       if (++n == 5) break;
                   }
               }) == three,
               boost::test_tools::per_element());
    BOOST_TEST(sizes_after([&] { (void)drain(p); }) == three, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
