// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner's policy (engine/tuner_policy.hpp) on recorded measurements, without TBB or a
/// clock: which stage it raises and by how much, the undo of a raise after which the rate fell,
/// the CPU budget, backing off when the consumer sets the pace, a slot moved to a stage that got
/// slower, the memory budget; the same measurements give the same decisions.

#include <boost/test/unit_test.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "engine/tuner_policy.hpp"

namespace tuner_policy_test {

using ferry::detail::tuned_stage_range;
using ferry::detail::tuner_budget;
using ferry::detail::tuner_policy;
using ferry::detail::tuner_sample;

/// "read" (I/O, 1..32) and "decode" (compute, 1..4) on 4 threads, 4 cores.
tuner_policy read_and_decode(double cores = 4) {
    return tuner_policy({{"read", true, 1, 32, 1}, {"decode", false, 1, 4, 1}},
                        tuner_budget{.cpu_cores = cores, .threads = 4});
}

/// One second: `rate` items, each stage busy `util` of its current slots, `cpu` cores used.
tuner_sample second(const tuner_policy& p, double at, double rate, std::vector<double> util,
                    double cpu = 1, double full = 0, double waited = 0.5) {
    tuner_sample s;
    s.at_s = at;
    s.interval_s = 1;
    s.items = rate;
    s.cpu_s = cpu;
    s.full = full;
    s.consumer_wait_s = waited;
    for (std::size_t i = 0; i < util.size(); ++i) {
        // decode is a compute stage on 4 threads: busy seconds over min(limit, 4) slots.
        s.busy_s.push_back(util[i] * p.limits()[i]);
    }
    return s;
}

std::string text(const ferry::tuning_decision& d) {
    std::ostringstream os;
    os << d;
    return os.str();
}

}  // namespace tuner_policy_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(tuning_policy)
using namespace tuner_policy_test;

// A busy I/O stage grows by half each interval (at least one), one move per interval, up to its
// range's top; the rate after each move is filled in one interval later; the stage that is not
// busy is left alone. The same measurements give the same decisions.
BOOST_AUTO_TEST_CASE(raises_the_busiest_stage_step_by_step) {
    std::vector<std::vector<int>> runs;
    for (int run = 0; run < 2; ++run) {
        auto p = read_and_decode();
        std::vector<int> reads{p.limits()[0]};
        for (int t = 1; t <= 10; ++t) {
            const auto made = p.step(second(p, t, 100.0 * p.limits()[0], {1.0, 0.3}));
            BOOST_TEST(p.limits()[1] == 1);  // decode is 30% busy: not raised
            if (p.limits()[0] < 32) BOOST_TEST_REQUIRE(made.size() == 1U);
            reads.push_back(p.limits()[0]);
        }
        BOOST_TEST(reads == (std::vector<int>{1, 2, 3, 5, 8, 12, 18, 27, 32, 32, 32}),
                   boost::test_tools::per_element());
        const auto& log = p.decisions();
        BOOST_TEST_REQUIRE(log.size() == 8U);
        BOOST_TEST(log[0].stage == "read");
        BOOST_TEST(log[0].rate_before == 100.0);
        BOOST_TEST(log[0].rate_after == 200.0);
        BOOST_TEST(text(log[0]) ==
                   "1.0 s: read 1 -> 2 (busy 100%, CPU 1.0 of 4 cores): 100 -> "
                   "200 items/s");
        runs.push_back(reads);
    }
    BOOST_TEST(runs[0] == runs[1]);
}

// A raise after which the rate falls by more than a tenth is undone and says so; the stage is
// not raised again for `hold` intervals, then may be.
BOOST_AUTO_TEST_CASE(undoes_a_raise_that_made_things_worse) {
    tuner_policy p({{"decode", false, 1, 4, 2}}, tuner_budget{.cpu_cores = 4, .threads = 4});
    p.step(second(p, 1, 1000, {0.95}, 2));
    BOOST_TEST_REQUIRE(p.limits()[0] == 3);
    const auto made = p.step(second(p, 2, 800, {0.95}, 3));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(p.limits()[0] == 2);
    BOOST_TEST(made[0].from == 3);
    BOOST_TEST(made[0].to == 2);
    BOOST_TEST(made[0].why == "undo: the rate fell from 1000 to 800 items/s");
    BOOST_TEST(p.decisions()[0].undone);
    BOOST_TEST(p.decisions()[0].rate_after == 800.0);
    for (int t = 3; t < 3 + tuner_policy::hold - 1; ++t) {
        BOOST_TEST(p.step(second(p, t, 1000, {0.95}, 2)).empty());
    }
    BOOST_TEST(p.step(second(p, 10, 1000, {0.95}, 2)).size() == 1U);
    BOOST_TEST(p.limits()[0] == 3);
    // A rate that holds keeps the raise.
    BOOST_TEST(p.step(second(p, 11, 1000, {0.5}, 3)).empty());
    BOOST_TEST(p.limits()[0] == 3);
    BOOST_TEST(!p.decisions().back().undone);
}

// A rate counted in batches moves by a batch at random: with 5 outputs in the interval a fall of
// 30% is within two outputs' worth and keeps the raise; with 50 outputs it undoes it.
BOOST_AUTO_TEST_CASE(a_fall_within_two_outputs_is_noise) {
    for (const double outputs : {5.0, 50.0}) {
        tuner_policy p({{"decode", false, 1, 4, 2}}, tuner_budget{.cpu_cores = 4, .threads = 4});
        p.step(second(p, 1, 1000, {0.95}, 2));
        auto s = second(p, 2, 700, {0.5}, 2);
        s.outputs = outputs;
        p.step(s);
        BOOST_TEST(p.limits()[0] == (outputs < 10 ? 3 : 2), outputs << " outputs");
    }
}

// Over the CPU budget the least busy compute stage gives a slot back; a compute stage never
// grows past the arena's threads nor past the budget, and then takes a slot from an idle one.
BOOST_AUTO_TEST_CASE(keeps_the_cpu_budget) {
    tuner_policy p({{"resize", false, 1, 8, 3}, {"decode", false, 1, 8, 2}},
                   tuner_budget{.cpu_cores = 4, .threads = 4});
    auto made = p.step(second(p, 1, 500, {0.4, 0.9}, 4.6));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "resize");
    BOOST_TEST(made[0].to == 2);
    BOOST_TEST(made[0].why == "busy 40%, over budget: CPU 4.6 of 4 cores");
    // decode is busy but a slot more would pass 4 cores: resize (idle) gives one instead.
    made = p.step(second(p, 2, 500, {0.2, 1.0}, 3.5));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "resize");
    BOOST_TEST(made[0].why == "busy 20%, a slot moves to decode (busy 100%, CPU 3.5 of 4 cores)");
    made = p.step(second(p, 3, 500, {0.2, 1.0}, 2.5));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "decode");
    BOOST_TEST(p.limits()[1] == 3);
    tuner_policy q({{"decode", false, 1, 8, 4}}, tuner_budget{.cpu_cores = 8, .threads = 4});
    BOOST_TEST(q.step(second(q, 1, 500, {1.0}, 4)).empty());  // 4 threads: no fifth slot
}

// Over the CPU budget with no tuned compute stage left to lower (decode is at its range's
// bottom, read's calls cost CPU), the arena gives a thread up; it gets it back only where a whole
// core is free under the budget, as a raise the next interval judges (undone when the rate fell,
// then held), and a compute stage then grows into it.
BOOST_AUTO_TEST_CASE(moves_the_arena_threads_within_the_cpu_budget) {
    tuner_policy p({{"read", true, 1, 32, 4}, {"decode", false, 1, 4, 1}},
                   tuner_budget{.cpu_cores = 3, .threads = 3});
    BOOST_TEST(p.threads() == 3);
    auto made = p.step(second(p, 1, 500, {0.5, 1.0}, 3.4));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "threads");
    BOOST_TEST(made[0].from == 3);
    BOOST_TEST(made[0].to == 2);
    BOOST_TEST(made[0].why == "over budget: CPU 3.4 of 3 cores");
    made = p.step(second(p, 2, 500, {0.5, 1.0}, 3.2));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(p.threads() == 1);
    BOOST_TEST(p.limits()[0] == 4);  // read, the I/O stage, keeps its slots while threads can go
    // 2.5 cores: under the budget, but a thread more could take it over again.
    BOOST_TEST(p.step(second(p, 3, 500, {0.5, 1.0}, 2.5)).empty());
    made = p.step(second(p, 4, 500, {0.5, 1.0}, 1.8));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "threads");
    BOOST_TEST(made[0].to == 2);
    BOOST_TEST(made[0].why == "decode busy 100%, CPU 1.8 of 3 cores");
    made = p.step(second(p, 5, 300, {0.5, 1.0}, 1.8));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "threads");
    BOOST_TEST(made[0].to == 1);
    BOOST_TEST(made[0].why == "undo: the rate fell from 500 to 300 items/s");
    BOOST_TEST(p.decisions()[2].undone);
    for (int t = 6; t < 5 + tuner_policy::hold; ++t) {
        BOOST_TEST(p.step(second(p, t, 300, {0.5, 1.0}, 1.8)).empty(), t);
    }
    made = p.step(second(p, 5 + tuner_policy::hold, 300, {0.5, 1.0}, 1.8));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(p.threads() == 2);
    made = p.step(second(p, 10, 450, {0.5, 1.0}, 1.8));  // kept: the rate held
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "decode");
    BOOST_TEST(p.limits()[1] == 2);
    BOOST_TEST(p.threads() == 2);
}

// When the consumer sets the pace (the pipeline full, the consumer hardly waiting) nothing is
// raised, however busy; after a few such intervals a mostly idle stage gives a slot back.
BOOST_AUTO_TEST_CASE(backs_off_when_the_consumer_sets_the_pace) {
    tuner_policy p({{"read", true, 1, 32, 8}, {"decode", false, 1, 4, 2}},
                   tuner_budget{.cpu_cores = 4, .threads = 4});
    for (int t = 1; t < tuner_policy::consumer_streak; ++t) {
        BOOST_TEST(p.step(second(p, t, 300, {0.1, 0.95}, 1, 0.95, 0.01)).empty());
    }
    const auto made = p.step(second(p, 3, 300, {0.1, 0.95}, 1, 0.95, 0.01));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "read");
    BOOST_TEST(made[0].to == 5);
    BOOST_TEST(made[0].why ==
               "busy 10%, the consumer sets the pace (pipeline full 95%, consumer waited 1%)");
    BOOST_TEST(p.limits()[1] == 2);
}

// A stage that gets slower midway (a slow disk) becomes the busiest: the next moves go to it.
BOOST_AUTO_TEST_CASE(follows_a_stage_that_gets_slower) {
    auto p = read_and_decode();
    for (int t = 1; t <= 4; ++t) p.step(second(p, t, 100.0 * t, {0.3, 0.95}, 1));
    BOOST_TEST(p.limits()[0] == 1);
    BOOST_TEST(p.limits()[1] == 4);
    for (int t = 5; t <= 8; ++t) p.step(second(p, t, 400, {1.0, 0.5}, 1));
    BOOST_TEST(p.limits()[0] == 8);  // 1 2 3 5 8
    BOOST_TEST(p.limits()[1] == 4);
}

// The memory budget keeps in_flight at what the budget holds of the items measured, within
// what the shape needs and the most: down at once when items grow, up only by more than
// `memory_margin` and not within `memory_rest` intervals of a fall.
BOOST_AUTO_TEST_CASE(keeps_the_memory_budget) {
    tuner_policy p({}, tuner_budget{.cpu_cores = 2,
                                    .threads = 2,
                                    .memory_bytes = 100'000'000,
                                    .min_in_flight = 4,
                                    .max_in_flight = 64});
    tuner_sample s;
    s.at_s = 1;
    s.interval_s = 1;
    s.items = 100;
    s.items_in_flight = 20;
    s.item_bytes = 10e6;
    const auto made = p.step(s);
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(p.in_flight() == 10U);
    BOOST_TEST(made[0].stage == "in_flight");
    BOOST_TEST(made[0].from == 64);
    BOOST_TEST(made[0].why ==
               "items hold 10.0 MB each: 10 of them hold 100.0 MB of the 100.0 MB budget");
    // Smaller items: back up, but not within memory_rest intervals of the fall.
    s.item_bytes = 1e6;
    for (int t = 1; t < tuner_policy::memory_rest; ++t) {
        s.at_s += 1;
        BOOST_TEST(p.step(s).empty());
    }
    s.at_s += 1;
    BOOST_TEST_REQUIRE(p.step(s).size() == 1U);
    BOOST_TEST(p.in_flight() == 64U);
    BOOST_TEST(!p.memory_error().has_value());
}

// A budget below what the shape holds (its minimum in flight at the bytes an item was measured
// to hold, or the largest output) is an error naming the budget, the least the shape holds and
// what holds it; in_flight is not set below what the shape needs.
BOOST_AUTO_TEST_CASE(a_budget_the_shape_cannot_keep_is_an_error_naming_both) {
    tuner_policy p(
        {}, tuner_budget{.cpu_cores = 2,
                         .threads = 2,
                         .memory_bytes = 64 << 20,
                         .min_in_flight = 128,
                         .min_in_flight_by = "batch_by 'group' holds a window of 128 elements",
                         .max_in_flight = 284});
    tuner_sample s;
    s.at_s = 1;
    s.interval_s = 1;
    s.items = 100;
    s.item_bytes = 2.4e6;
    s.largest_output_bytes = 64 * 2.4e6;
    BOOST_TEST(p.step(s).empty());
    BOOST_TEST_REQUIRE(p.memory_error().has_value());
    BOOST_TEST(*p.memory_error() ==
               "autotune: memory_budget = 67108864 bytes (67.1 MB) cannot be kept: the pipeline "
               "holds at least 128 source items at once (batch_by 'group' holds a window of 128 "
               "elements), and at 2400000 bytes an item (measured) they hold 307200000 bytes "
               "(307.2 MB); raise memory_budget to that or hold fewer items");
    BOOST_TEST(p.in_flight() == 284U);  // no decision claims a budget it cannot keep
    BOOST_TEST(p.decisions().empty());
    // One output larger than the budget, where the shape alone would fit: named as such.
    const auto one = tuner_policy::memory_check(
        tuner_budget{.memory_bytes = 1'000'000, .min_in_flight = 1, .max_in_flight = 8}, 1000,
        1'500'000);
    BOOST_TEST_REQUIRE(one.has_value());
    BOOST_TEST(*one ==
               "autotune: memory_budget = 1000000 bytes (1.0 MB) cannot be kept: one output holds "
               "1500000 bytes (1.5 MB), the largest so far; raise memory_budget to that or make "
               "outputs smaller");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
