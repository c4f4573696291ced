// SPDX-License-Identifier: Apache-2.0
/// \file
/// Memory: a stalled consumer holds the pipeline at `in_flight` items, and every element the
/// engine held is freed when an epoch ends early, fails, or the pipeline is destroyed.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ferry_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace memory_test {

/// An endless source of counted elements.
auto endless_counted() {
    return [i = 0]() mutable -> std::optional<counted> { return counted(i++); };
}

constexpr std::size_t in_flight = 16;

/// What a stall leaves alive beyond `in_flight`, when the consumer holds `held` source items:
/// the consumer's own element (its items are "taken", so the limiter may already have let
/// `held` new ones in) and the one element the input node pulls from the source and keeps while
/// the limiter turns it away.
std::size_t stall_allowance(std::size_t held) {
    return held + 1;
}

/// Live elements (beyond `before`), polled every millisecond through a 200 ms stall.
struct stall_samples {
    long most = 0;       ///< the largest count seen, fill and moves in progress included
    long settled = 0;    ///< the count over the window's second half, if it held still
    bool steady = true;  ///< whether the second half saw one count only
    std::uint64_t produced_half = 0;  ///< source items pulled at the window's middle
};

/// The window starts once the source has produced `parked_at_least` items (`in_flight` plus
/// the consumer's held ones: where the limiter parks it), so that a slow machine's fill does not
/// fall inside it; a fill that never gets there fails the test.
template <class P>
stall_samples sample_stall(P& p, long before, std::uint64_t parked_at_least) {
    stall_samples out;
    BOOST_TEST(wait_until([&] { return p.stats().produced >= parked_at_least; }),
               "produced " << p.stats().produced << " of " << parked_at_least);
    const auto t0 = steady::now();
    bool second_half = false;
    while (since(t0) < 200ms) {
        const long live = live_instances.load() - before;
        out.most = std::max(out.most, live);
        if (!second_half && since(t0) >= 100ms) {
            second_half = true;
            out.settled = live;
            out.produced_half = p.stats().produced;
        } else if (second_half && live != out.settled) {
            out.steady = false;
        }
        std::this_thread::sleep_for(1ms);
    }
    return out;
}

}  // namespace memory_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(memory)
using namespace memory_test;

// A consumer that stops reading stalls the graph at in_flight items: polled every millisecond
// through the stall, live elements never pass in_flight plus the held item plus the input
// node's one cached item, and they plateau (the source stays parked).
BOOST_DATA_TEST_CASE(stalled_consumer_keeps_live_items_bounded, bdata::make({1, 16}), conc) {
    const long before = live_instances.load();
    {
        auto p = ferry::from(endless_counted())
                     .map([](counted c) { return c; }, conc)
                     .map([](counted c) { return c; }, {.concurrency = conc, .executor = ferry::io})
                     .build({.threads = 2, .in_flight = in_flight});
        const auto first = p.next();
        BOOST_TEST(first.value().value == 0);
        const stall_samples live = sample_stall(p, before, in_flight + 1);
        BOOST_TEST(live.settled >= 1);
        BOOST_TEST(live.most <= static_cast<long>(in_flight + stall_allowance(1)),
                   "most live " << live.most);
        BOOST_TEST(live.steady, "live elements changed while the consumer was stalled");
        BOOST_TEST_MESSAGE("stalled consumer, concurrency " << conc << ": at most " << live.most
                                                            << " elements alive, settled at "
                                                            << live.settled);
        const auto s = p.stats();
        BOOST_TEST(s.produced == live.produced_half);  // the source was parked
        BOOST_TEST(s.produced <= in_flight + stall_allowance(1));
        BOOST_TEST(s.in_flight == in_flight);
    }
    BOOST_TEST(live_instances.load() == before);
}

// Same with batches: a held batch of 8 counts 8 taken items, the graph holds at most in_flight
// more at any sample, and the count plateaus.
BOOST_AUTO_TEST_CASE(stalled_consumer_of_batches_keeps_live_items_bounded) {
    const long before = live_instances.load();
    {
        auto p = ferry::from(endless_counted())
                     .map([](counted c) { return c; }, 4)
                     .batch(8)
                     .build({.threads = 2, .in_flight = in_flight});
        const auto first = p.next();
        BOOST_TEST(first.value().size() == 8u);
        const stall_samples live = sample_stall(p, before, in_flight + 8);
        BOOST_TEST(live.most <= static_cast<long>(in_flight + stall_allowance(8)),
                   "most live " << live.most);
        BOOST_TEST(live.steady, "live elements changed while the consumer was stalled");
        BOOST_TEST(p.stats().produced == live.produced_half);  // the source was parked
        BOOST_TEST_MESSAGE("stalled consumer of batches: at most "
                           << live.most << " elements alive, settled at " << live.settled);
    }
    BOOST_TEST(live_instances.load() == before);
}

// A source parked at the in_flight limit goes on as soon as the consumer takes one more item:
// the consumer returns that credit at once rather than holding it for a batch of a quarter of
// the limit, and the source pulls exactly one item, then parks again.
BOOST_AUTO_TEST_CASE(parked_source_resumes_when_the_consumer_takes_one_item) {
    auto p = ferry::from(endless_counted())
                 .map([](counted c) { return c; }, 2)
                 .build({.threads = 2, .in_flight = in_flight});
    BOOST_TEST(p.next().value().value == 0);
    // Parked: the consumer took one item, in_flight more are inside the graph.
    const stall_samples parked = sample_stall(p, live_instances.load(), in_flight + 1);
    BOOST_TEST(parked.produced_half == in_flight + 1);
    BOOST_TEST(p.next().value().value == 1);
    BOOST_TEST(wait_until([&] { return p.stats().produced == in_flight + 2; }),
               "produced " << p.stats().produced << ", want " << in_flight + 2
                           << " (one credit back, one item more)");
    const stall_samples again = sample_stall(p, live_instances.load(), in_flight + 2);
    BOOST_TEST(again.produced_half == in_flight + 2);
    BOOST_TEST(p.stats().produced == in_flight + 2);  // parked again: no more than its credit
}

// With a limit of one or two items in flight the source runs out of credits on nearly every
// item: it parks and is woken again, by the consumer taking items or by a worker retiring a
// filtered one, thousands of times, and never exceeds the limit, loses or repeats an item.
BOOST_DATA_TEST_CASE(source_parks_and_resumes_at_the_in_flight_limit,
                     bdata::make({1, 2}) * bdata::make({1, 2}), threads, limit) {
    constexpr int n = 3000;
    std::atomic<int> running{0};
    std::atomic<int> most{0};
    auto p = ferry::from(iota(n))
                 .map(
                     [&](int x) {
                         const int now = ++running;
                         int seen = most.load();
                         while (now > seen && !most.compare_exchange_weak(seen, now)) {
                         }
                         --running;
                         return x;
                     },
                     2)
                 .filter([](int x) { return x % 3 != 0; }, 2)
                 .build({.threads = threads, .in_flight = static_cast<std::size_t>(limit)});
    std::vector<int> want;
    for (int i = 0; i < n; ++i)
        if (i % 3 != 0) want.push_back(i);
    for (int epoch = 0; epoch < 2; ++epoch) {
        BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
    }
    BOOST_TEST(most.load() <= limit);
    const auto s = p.stats();
    BOOST_TEST(s.produced == 2u * n);
    check_complete_accounting(s);
}

// Leaving a loop early frees every element of that epoch before the next one starts.
BOOST_AUTO_TEST_CASE(abandoned_epoch_frees_every_element) {
    const long before = live_instances.load();
    auto p = ferry::from([](std::uint64_t) { return iota(500); })
                 .map([](int x) { return counted(x); }, 8)
                 .map([](counted c) { return c; }, {.concurrency = 4, .executor = ferry::io})
                 .build({.threads = 2});
    for (int round = 0; round < 5; ++round) {
        int n = 0;
        for (auto& c : p) {
            BOOST_TEST(c.value == n);
            if (++n == 10 * (round + 1)) break;
        }
        BOOST_TEST(live_instances.load() == before);
    }
    // A whole epoch leaves nothing behind either.
    BOOST_TEST(drain(p).size() == 500u);
    BOOST_TEST(live_instances.load() == before);
}

// A failed epoch frees every element the engine held.
BOOST_AUTO_TEST_CASE(failed_epoch_frees_every_element) {
    const long before = live_instances.load();
    {
        auto p = ferry::from(iota(500))
                     .map([](int x) { return counted(x); }, 8)
                     .map(
                         [](counted c) {
                             if (c.value == 100) throw bad_record("bad");
                             return c;
                         },
                         8)
                     .batch(4)
                     .build({.threads = 2, .logger = quiet});
        BOOST_CHECK_THROW(
            {
                while (auto b = p.next()) {
                }
            },
            ferry::stage_error);
        BOOST_TEST(live_instances.load() == before);
    }
    BOOST_TEST(live_instances.load() == before);
}

// Elements too big for inline storage (heap path), through batch, unbatch and flat_map, skips
// and filters, are all freed.
BOOST_AUTO_TEST_CASE(heap_stored_elements_are_all_freed) {
    const long before = live_instances.load();
    {
        auto p = ferry::from(iota(300))
                     .map([](int x) { return counted_big(x); }, 4)
                     .filter([](const counted_big& c) { return c.value % 7 != 0; }, 2)
                     .map(
                         [](counted_big c) {
                             if (c.value % 11 == 0) throw bad_record("bad");
                             return c;
                         },
                         {.concurrency = 4, .on_error = ferry::skip})
                     .batch(5)
                     .unbatch()
                     .flat_map(
                         [](counted_big c) {
                             return std::vector<counted_big>{c, c};
                         },
                         3)
                     .build({.threads = 2, .logger = quiet});
        std::size_t n = 0;
        while (auto c = p.next()) ++n;
        std::size_t want = 0;
        for (int i = 0; i < 300; ++i)
            if (i % 7 != 0 && i % 11 != 0) want += 2;
        BOOST_TEST(n == want);
        int k = 0;
        for (auto& c : p) {
            (void)c;
            if (++k == 25) break;
        }
        BOOST_TEST(live_instances.load() == before);
    }
    BOOST_TEST(live_instances.load() == before);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
