// SPDX-License-Identifier: Apache-2.0
/// \file
/// fast_start: until the consumer takes an epoch's first output, the source admits only the
/// items that output needs; then the pipeline fills to `in_flight`. Nothing is lost on the way.
#include <boost/test/unit_test.hpp>

#include "support.hpp"

using namespace ferry_test;

namespace fast_start_test {

constexpr int items = 1000;

/// A source of 0..n-1 per epoch that counts what the engine pulled from it (all epochs).
auto counting_source(std::atomic<int>& pulled, int n = items) {
    return [&pulled, n, i = 0]() mutable -> std::optional<int> {
        if (i == n) {
            i = 0;
            return std::nullopt;
        }
        pulled.fetch_add(1);
        return i++;
    };
}

/// Holds the first item's call a while (at most 50 ms) for more than `n` items to be pulled:
/// without fast_start they are, at once; with it, never before the first output is taken.
void linger_unless_pulled(const std::atomic<int>& pulled, int n) {
    const auto deadline = steady::now() + 50ms;
    while (pulled.load() <= n && steady::now() < deadline) std::this_thread::sleep_for(1ms);
}

std::vector<int> iota_vector(int first, int n, int step = 1) {
    std::vector<int> v;
    for (int i = 0; i < n; ++i) v.push_back(first + i * step);
    return v;
}

}  // namespace fast_start_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(fast_start)
using namespace fast_start_test;

// The first batch of 8 is all the source gives out until the consumer takes it (the stage after
// the batch sees exactly 8 pulled), then the pipeline fills to in_flight, and every item comes,
// in order.
BOOST_AUTO_TEST_CASE(the_source_admits_one_batch_until_the_first_is_taken) {
    std::atomic<int> pulled{0};
    int pulled_at_first_batch = -1;
    auto p = ferry::from(counting_source(pulled))
                 .map([](int x) { return x; }, {.concurrency = 4, .executor = ferry::io})
                 .map(
                     [&](int x) {
                         if (x == 0) linger_unless_pulled(pulled, 8);
                         return x;
                     },
                     2)
                 .batch(8)
                 .map(
                     [&](std::vector<int> b) {
                         if (pulled_at_first_batch < 0) pulled_at_first_batch = pulled.load();
                         return b;
                     },
                     {.name = "look"})
                 .build({.threads = 2, .in_flight = 64});
    BOOST_TEST(p.stats().in_flight == 64u);
    auto first = p.next();
    BOOST_REQUIRE(first.has_value());
    BOOST_TEST(*first == iota_vector(0, 8), boost::test_tools::per_element());
    BOOST_TEST(pulled_at_first_batch == 8);
    // Holding nothing, the consumer leaves room for in_flight items: the source fills it.
    BOOST_TEST(wait_until([&] { return pulled.load() >= 64; }), "pulled " << pulled.load());
    std::vector<int> all = *first;
    while (auto b = p.next()) all.insert(all.end(), b->begin(), b->end());
    BOOST_TEST(all == iota_vector(0, items), boost::test_tools::per_element());
    BOOST_TEST(pulled.load() == items);
}

// With fast_start off the source fills in_flight before the first batch is out: the first item's
// call waits for 40 items to be pulled, which never happens under fast_start.
BOOST_AUTO_TEST_CASE(without_it_the_source_fills_in_flight_from_the_start) {
    std::atomic<int> pulled{0};
    std::atomic<bool> filled{false};
    auto p = ferry::from(counting_source(pulled))
                 .map(
                     [&](int x) {
                         if (x == 0) filled = wait_until([&] { return pulled.load() >= 40; });
                         return x;
                     },
                     2)
                 .batch(8)
                 .build({.threads = 2, .in_flight = 64, .fast_start = false});
    auto first = p.next();
    BOOST_REQUIRE(first.has_value());
    BOOST_TEST(filled.load(), "pulled " << pulled.load() << " before the first batch");
    BOOST_TEST(*first == iota_vector(0, 8), boost::test_tools::per_element());
    int n = 8;
    while (auto b = p.next()) n += static_cast<int>(b->size());
    BOOST_TEST(n == items);
}

// Items filtered or skipped while the first batch gathers give their places to new ones: the
// first batch of 8 kept items needs 32 pulled ones, and comes; then the rest, all accounted.
BOOST_AUTO_TEST_CASE(filtered_and_skipped_items_let_others_in) {
    std::atomic<int> pulled{0};
    auto p = ferry::from(counting_source(pulled))
                 .filter([](int x) { return x % 2 == 0; }, 2)
                 .map(
                     [](int x) {
                         if (x % 4 == 2) throw std::runtime_error("bad item");
                         return x;
                     },
                     {.concurrency = 2, .on_error = ferry::skip})
                 .batch(8)
                 .build({.threads = 2, .in_flight = 64, .logger = quiet});
    auto first = p.next();
    BOOST_REQUIRE(first.has_value());
    BOOST_TEST(*first == iota_vector(0, 8, 4), boost::test_tools::per_element());
    std::size_t n = first->size();
    while (auto b = p.next()) n += b->size();
    const auto s = p.stats();
    BOOST_TEST(n == static_cast<std::size_t>(items / 4));
    BOOST_TEST(s.produced == static_cast<std::uint64_t>(items));
    BOOST_TEST(s.delivered == static_cast<std::uint64_t>(items / 4));
    BOOST_TEST(s.filtered == static_cast<std::uint64_t>(items / 2));
    BOOST_TEST(s.failed == static_cast<std::uint64_t>(items / 4));
}

// Every epoch starts the same way: in the second epoch too, the first batch sees 8 pulled.
BOOST_AUTO_TEST_CASE(every_epoch_starts_with_one_batch) {
    std::atomic<int> pulled{0};
    std::vector<int> pulled_at_first_batch;
    bool first_of_epoch = true;
    int epoch_base = 0;  // pulled before the epoch
    auto p = ferry::from(counting_source(pulled, 200))
                 .map(
                     [&](int x) {
                         if (x == 0) linger_unless_pulled(pulled, epoch_base + 8);
                         return x;
                     },
                     2)
                 .batch(8)
                 .map(
                     [&](std::vector<int> b) {
                         if (first_of_epoch) pulled_at_first_batch.push_back(pulled.load());
                         first_of_epoch = false;
                         return b;
                     },
                     {.name = "look"})
                 .build({.threads = 2, .in_flight = 64});
    for (int epoch = 0; epoch < 2; ++epoch) {
        first_of_epoch = true;
        epoch_base = pulled.load();
        int n = 0;
        for (const auto& b : p) n += static_cast<int>(b.size());
        BOOST_TEST(n == 200);
    }
    BOOST_TEST(pulled_at_first_batch == (std::vector<int>{8, 208}),
               boost::test_tools::per_element());
}

// A pipeline without batches starts with one item, then fills.
BOOST_AUTO_TEST_CASE(without_batches_the_first_output_needs_one_item) {
    std::atomic<int> pulled{0};
    int pulled_at_first = -1;
    auto p = ferry::from(counting_source(pulled))
                 .map(
                     [&](int x) {
                         if (x == 0) {
                             linger_unless_pulled(pulled, 1);
                             pulled_at_first = pulled.load();
                         }
                         return x;
                     },
                     4)
                 .build({.threads = 2, .in_flight = 32});
    BOOST_TEST(p.next().value() == 0);
    BOOST_TEST(pulled_at_first == 1);
    int expected = 1;
    bool in_order = true;
    while (auto x = p.next()) in_order = in_order && *x == expected++;
    BOOST_TEST(in_order);
    BOOST_TEST(expected == items);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
