// SPDX-License-Identifier: Apache-2.0
/// \file
/// Batches and the options build() checks: sizes, the in-flight room a batch needs, drop_last.
#include <boost/test/unit_test.hpp>
#include <string>

#include "support.hpp"

using namespace ferry_test;

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(batching)

// The last batch of an epoch is short, not dropped, unless asked.
BOOST_AUTO_TEST_CASE(last_batch_is_short_by_default) {
    auto p = ferry::from(iota(103)).batch(10).build({.threads = 2});
    std::vector<std::size_t> sizes;
    while (auto b = p.next()) sizes.push_back(b->size());
    BOOST_REQUIRE(sizes.size() == 11u);
    BOOST_TEST(sizes.back() == 3u);
    check_complete_accounting(p.stats());
}

// drop_last drops the partial batch and counts its items as filtered, every epoch.
BOOST_AUTO_TEST_CASE(drop_last_drops_the_partial_batch_as_filtered) {
    auto p = ferry::from(iota(103))
                 .map([](int x) { return x; }, 4)
                 .batch(10, {.drop_last = true})
                 .build({.threads = 2});
    for (int epoch = 0; epoch < 2; ++epoch) {
        const auto got = drain_flat(p);
        BOOST_TEST(got == iota(100), boost::test_tools::per_element());
    }
    const auto s = p.stats();
    BOOST_TEST(s.delivered == 200u);
    BOOST_TEST(s.filtered == 6u);
    BOOST_TEST(s.outputs == 20u);
    BOOST_TEST(s.stages.at(2).filtered == 6u);
    check_complete_accounting(s);
}

// An in_flight smaller than a batch could never fill it: build() says so.
BOOST_AUTO_TEST_CASE(in_flight_smaller_than_a_batch_is_rejected_at_build) {
    const auto b = ferry::from(iota(10)).batch(32);
    const auto e = expect_throw<ferry::invalid_argument>([&] { (void)b.build({.in_flight = 31}); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST((e->code() == ferry::errc::invalid_argument));
    BOOST_TEST(e.what().find("in_flight") != std::string::npos, e.what());
    auto p = b.build({.in_flight = 32});
    BOOST_TEST(drain_flat(p) == iota(10), boost::test_tools::per_element());
}

// Nested batches need room for the product of their sizes.
BOOST_AUTO_TEST_CASE(nested_batches_need_the_product_in_flight) {
    const auto b = ferry::from(iota(40)).batch(4).batch(4);
    BOOST_CHECK_THROW((void)b.build({.in_flight = 15}), ferry::invalid_argument);
    auto p = b.build({.threads = 2, .in_flight = 16});
    std::vector<int> got;
    while (auto outer = p.next())
        for (auto& inner : *outer) got.insert(got.end(), inner.begin(), inner.end());
    BOOST_TEST(got == iota(40), boost::test_tools::per_element());
    // unbatch undoes a level: a batch after it needs only its own size again.
    BOOST_CHECK_NO_THROW(
        (void)ferry::from(iota(4)).batch(4).unbatch().batch(4).build({.in_flight = 4}));
}

// batch(0) is refused.
BOOST_AUTO_TEST_CASE(batch_of_zero_is_rejected) {
    const auto e =
        expect_throw<ferry::invalid_argument>([] { (void)ferry::from(iota(10)).batch(0); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST((e->code() == ferry::errc::invalid_argument));
    BOOST_TEST(e.what().find("batch") != std::string::npos, e.what());
}

// Options that cannot work are refused at build() with invalid_argument.
BOOST_AUTO_TEST_CASE(unworkable_options_are_rejected_at_build) {
    const auto src = ferry::from(iota(10));
    BOOST_CHECK_THROW((void)src.map([](int x) { return x; }, 0).build(), ferry::invalid_argument);
    BOOST_CHECK_THROW((void)src.filter([](int) { return true; }, -1).build(),
                      ferry::invalid_argument);
    BOOST_CHECK_THROW((void)src.build({.threads = -1}), ferry::invalid_argument);
    BOOST_CHECK_THROW((void)src
                          .map_async<int>([](int x, ferry::completion<int> done) { done(x); },
                                          {.executor = ferry::io})
                          .build(),
                      ferry::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
