// SPDX-License-Identifier: Apache-2.0
/// \file
/// Per-item context: a stage callable that takes `ferry::item_info` learns the epoch, the
/// dataset index, the position and the seed of its item, and `ferry::item_rng` gives the same
/// numbers for the same item whatever the concurrency.

#include <boost/test/unit_test.hpp>

#include <map>
#include <random>
#include <tuple>

#include "support.hpp"

using namespace ferry_test;

namespace items_test {

/// What one call saw: (epoch, index, position, seed, first random number).
using seen = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>;

/// Two epochs of a shuffled, sampled dataset of 50 through a map that reads its item_info, at
/// `concurrency` (optionally with a timeout, so that the calls run apart from their items).
std::vector<std::vector<seen>> two_epochs(int concurrency, std::size_t rank, bool timed) {
    auto p = ferry::from(iota(50),
                         ferry::sampling{.shuffle = true, .seed = 7, .rank = rank, .world_size = 2})
                 .map(
                     [](int, const ferry::item_info& info) {
                         auto rng = ferry::item_rng(info);
                         return seen{info.epoch, info.index, info.position, info.seed, rng()};
                     },
                     {.concurrency = concurrency,
                      .name = "augment",
                      .timeout =
                          timed ? std::chrono::milliseconds(10000) : std::chrono::milliseconds(0)})
                 .build({.threads = 2});
    std::vector<std::vector<seen>> epochs;
    for (int e = 0; e < 2; ++e) epochs.push_back(drain(p));
    return epochs;
}

}  // namespace items_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(items)
using namespace items_test;

// Each call sees its item's epoch, the sampler's dataset index for its position, the position and
// the seed; the random numbers depend only on (seed, epoch, index): the same at concurrency 1 and
// 8, in a timed stage too, and different in the next epoch.
BOOST_AUTO_TEST_CASE(item_info_and_item_rng_do_not_depend_on_concurrency) {
    const ferry::sampler order(50, {.shuffle = true, .seed = 7, .rank = 1, .world_size = 2});
    const auto one = two_epochs(1, 1, false);
    for (const auto& [conc, timed] : {std::pair{8, false}, std::pair{4, true}}) {
        BOOST_TEST_CONTEXT("concurrency " << conc << (timed ? ", timed" : "")) {
            const auto many = two_epochs(conc, 1, timed);
            BOOST_TEST((many == one));
        }
    }
    for (std::uint64_t e = 0; e < 2; ++e) {
        BOOST_REQUIRE(one[e].size() == order.size());
        for (std::uint64_t i = 0; i < order.size(); ++i) {
            const auto& [epoch, index, position, seed, number] = one[e][i];
            BOOST_TEST(epoch == e);
            BOOST_TEST(position == i);
            BOOST_TEST(index == order.index(e, i));
            BOOST_TEST(seed == 7U);
            BOOST_TEST(number == ferry::item_rng({.epoch = e, .index = index, .seed = 7})());
        }
    }
    // The same item in another epoch draws other numbers.
    std::map<std::uint64_t, std::uint64_t> first;
    for (const auto& s : one[0]) first[std::get<1>(s)] = std::get<4>(s);
    int same = 0;
    for (const auto& s : one[1]) {
        const auto it = first.find(std::get<1>(s));
        if (it != first.end() && it->second == std::get<4>(s)) ++same;
    }
    BOOST_TEST(same == 0);
}

// Without a sampler, the index is the position and the seed 0; filters and flat_maps get the
// context too, and a flat_map's outputs carry their input's.
BOOST_AUTO_TEST_CASE(filters_and_flat_maps_see_their_item) {
    auto p = ferry::from(iota(10))
                 .filter([](int x, const ferry::item_info& info) {
                     return info.index == static_cast<std::uint64_t>(x) && x % 2 == 0;
                 })
                 .flat_map([](int x, const ferry::item_info& info) {
                     return std::vector<std::uint64_t>{static_cast<std::uint64_t>(x), info.position,
                                                       info.seed};
                 })
                 .map([](std::uint64_t v, const ferry::item_info& info) {
                     return std::pair{v, info.position};
                 })
                 .build({.threads = 2});
    std::vector<std::pair<std::uint64_t, std::uint64_t>> want;
    for (std::uint64_t x = 0; x < 10; x += 2) {
        for (const std::uint64_t v : {x, x, std::uint64_t{0}}) want.emplace_back(v, x);
    }
    BOOST_TEST((drain(p) == want));
}

// item_rng works with <random>'s distributions, and two engines from the same item agree.
BOOST_AUTO_TEST_CASE(item_rng_drives_standard_distributions) {
    const ferry::item_info info{.epoch = 3, .index = 12345, .position = 9, .seed = 42};
    auto a = ferry::item_rng(info);
    auto b = ferry::item_rng(info);
    std::uniform_real_distribution<double> scale(0.7, 1.0);
    for (int i = 0; i < 100; ++i) {
        const double x = scale(a);
        BOOST_TEST(x == scale(b));
        BOOST_TEST((x >= 0.7 && x < 1.0));
    }
    auto c = ferry::item_rng({.epoch = 3, .index = 12346, .position = 9, .seed = 42});
    BOOST_TEST(ferry::item_rng(info)() != c());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
