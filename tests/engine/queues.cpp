// SPDX-License-Identifier: Apache-2.0
/// \file
/// The stats' `queue` column is a count of what waits in front of each stage, so it can never
/// pass what can be in flight: for merge, route, zip and mix, with a slow stage that fills the
/// queues, across abandoned epochs and after a resume; a branch that gets nothing shows 0.

#include <boost/test/unit_test.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ferry/merge.hpp"
#include "ferry/mix.hpp"
#include "ferry/zip.hpp"
#include "support.hpp"

namespace queues_test {

using namespace ferry_test;

/// The options every case builds with: a small in-flight limit, so that a queue counted wrong
/// passes it soon.
constexpr std::size_t in_flight = 16;
const ferry::pipeline_options options{.threads = 2, .in_flight = in_flight};

/// A stage slow enough that the items in flight wait in front of it.
template <class T>
T slowly(T x) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return x;
}

/// Two epochs left after 40 outputs (their items cancelled where they wait), then a whole one.
template <class T>
std::size_t run_with_abandoned_epochs(ferry::pipeline<T>& p) {
    for (int e = 0; e < 2; ++e) {
        int taken = 0;
        for (const auto& x : p) {
            (void)x;
            if (++taken == 40) break;
        }
    }
    return drain(p).size();
}

/// Every stage's queue, its mean and its max, is at most what can be in flight; the slow stage's
/// queue did fill (so the bound was tested against full queues).
void check_queues_within_in_flight(const ferry::pipeline_stats& s) {
    std::ostringstream table;
    table << s;
    BOOST_TEST_CONTEXT(table.str()) {
        BOOST_TEST(s.in_flight == in_flight);
        for (const auto& r : s.stages) {
            BOOST_TEST_CONTEXT("stage " << r.name) {
                BOOST_TEST(r.queue_mean <= static_cast<double>(in_flight));
                BOOST_TEST(r.queue_max <= in_flight);
            }
        }
        BOOST_TEST(row_named(s, "slow").queue_max > 0U);
    }
}

/// A branch stage that received nothing shows no queue.
void check_empty_branch(const ferry::pipeline_stats& s, const std::string& name) {
    std::ostringstream table;
    table << s;
    BOOST_TEST_CONTEXT(table.str() << "stage " << name) {
        const auto& r = row_named(s, name);
        BOOST_TEST(r.items_in == 0U);
        BOOST_TEST(r.queue_mean == 0.0);
        BOOST_TEST(r.queue_max == 0U);
    }
}

/// A merge of a long branch, a short one and an empty one, each with a stage of its own, and a
/// slow stage after it.
ferry::builder<int> merged(std::vector<int> many, std::vector<int> few) {
    auto tag = [](const char* name) { return ferry::stage_options{.name = name}; };
    return ferry::merge(
               {ferry::from(std::move(many)).map([](int x) { return x; }, tag("many.map")),
                ferry::from(std::move(few)).map([](int x) { return x; }, tag("few.map")),
                ferry::from(std::vector<int>{}).map([](int x) { return x; }, tag("none.map"))},
               {.names = {"many", "few", "none"}})
        .map(slowly<int>, {.name = "slow"});
}

}  // namespace queues_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(queues)
using namespace queues_test;

// A merge's branches each count what waits in front of them, not what another branch passed
// on: no stage's queue passes in_flight, and the empty branch shows none.
BOOST_AUTO_TEST_CASE(merge_queues_stay_within_in_flight) {
    auto p = merged(iota(600), iota(20)).build(options);
    BOOST_TEST(run_with_abandoned_epochs(p) == 620U);
    const auto s = p.stats();
    check_queues_within_in_flight(s);
    check_empty_branch(s, "none.map");
}

// The same for a route whose last branch gets nothing, and one whose branch expands (its join
// renumbers).
BOOST_AUTO_TEST_CASE(route_queues_stay_within_in_flight) {
    for (const bool expands : {false, true}) {
        BOOST_TEST_CONTEXT("a branch expands: " << expands) {
            auto p =
                ferry::from(iota(600))
                    .route([](int x) { return x % 10 == 0 ? 1 : 0; },
                           [](auto b) { return b.map([](int x) { return x; }); },
                           [expands](auto b) {
                               if (!expands) return b.map([](int x) { return x; });
                               return b.flat_map([](int x) { return std::vector<int>{x}; });
                           },
                           [](auto b) { return b.map([](int x) { return x; }, {.name = "never"}); })
                    .map(slowly<int>, {.name = "slow"})
                    .build(options);
            BOOST_TEST(run_with_abandoned_epochs(p) == 600U);
            const auto s = p.stats();
            check_queues_within_in_flight(s);
            check_empty_branch(s, "never");
        }
    }
}

// zip and mix are sources: their stages form a line, and what an abandoned epoch left queued is
// not counted into the next one's queues.
BOOST_AUTO_TEST_CASE(zip_and_mix_queues_stay_within_in_flight) {
    auto z = ferry::zip(iota(600), iota(600))
                 .map([](std::pair<int, int> x) { return x.first + x.second; })
                 .map(slowly<int>, {.name = "slow"})
                 .build(options);
    BOOST_TEST(run_with_abandoned_epochs(z) == 600U);
    check_queues_within_in_flight(z.stats());
    auto m = ferry::mix<int>({{iota(400), 3}, {iota(200), 1}},
                             {.seed = 5, .stop = ferry::mix_stop::first_exhausted})
                 .map([](int x) { return x; })
                 .map(slowly<int>, {.name = "slow"})
                 .build(options);
    BOOST_TEST(run_with_abandoned_epochs(m) > 0U);
    check_queues_within_in_flight(m.stats());
}

// A merge resumed past the end of its short branch: that branch gets nothing and shows no
// queue, and no stage's queue passes in_flight.
BOOST_AUTO_TEST_CASE(a_resumed_merge_counts_only_what_waits) {
    const auto many = iota(600);
    const auto few = iota(5);
    std::optional<ferry::pipeline_state> saved;
    {
        auto p = merged(many, few).build(options);
        for (int i = 0; i < 100; ++i) BOOST_TEST_REQUIRE(p.next().has_value());
        saved = p.state();
    }
    auto opts = options;
    opts.resume_from = saved;
    auto q = merged(many, few).build(opts);
    BOOST_TEST(drain(q).size() == 505U);
    const auto s = q.stats();
    check_queues_within_in_flight(s);
    check_empty_branch(s, "few.map");
    check_empty_branch(s, "none.map");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
