// SPDX-License-Identifier: Apache-2.0
/// \file
/// A pipeline is a C++20 input range: standard views compose with it.
#include <boost/test/unit_test.hpp>
#include <ranges>

#include "support.hpp"

using namespace ferry_test;

// A pipeline is an input range (not a view: it owns threads), with a move-only iterator.
static_assert(std::ranges::input_range<ferry::pipeline<int>>);
static_assert(std::ranges::input_range<ferry::pipeline<std::vector<int>>>);
static_assert(!std::ranges::forward_range<ferry::pipeline<int>>);
static_assert(!std::copyable<ferry::pipeline<int>::iterator>);
static_assert(std::ranges::viewable_range<ferry::pipeline<int>&>);

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(ranges)

// std::views::take over a pipeline yields its first n items and ends the epoch early; the next
// loop is a whole new epoch.
BOOST_AUTO_TEST_CASE(views_take_yields_a_prefix_and_ends_the_epoch) {
    auto p = ferry::from(iota(100)).map([](int x) { return x; }, 4).build({.threads = 2});
    std::vector<int> got;
    for (int x : p | std::views::take(5)) got.push_back(x);
    BOOST_TEST(got == iota(5), boost::test_tools::per_element());
    BOOST_TEST(drain(p) == iota(100), boost::test_tools::per_element());
    const auto s = p.stats();
    BOOST_TEST(s.epochs == 2u);
    check_accounting(s);
}

// transform and filter views compose with a pipeline like with any input range.
BOOST_AUTO_TEST_CASE(views_transform_and_filter_compose) {
    auto p = ferry::from(iota(20)).build({.threads = 1});
    std::vector<int> got;
    for (int x : p | std::views::filter([](int x) { return x % 2 == 0; }) |
                     std::views::transform([](int x) { return x * 10; })) {
        got.push_back(x);
    }
    BOOST_TEST(got == (std::vector<int>{0, 20, 40, 60, 80, 100, 120, 140, 160, 180}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
