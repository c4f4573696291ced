// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner's policy (engine/tuner_policy.hpp) on measurements written out by hand, without
/// TBB or a clock: which knob it raises and by how much, the gain each raise predicts from every
/// measured bound, the undo of a raise after which the rate fell or the CPU passed the budget
/// and the rest that follows, the CPU budget kept by the lowering that keeps most, the arena's
/// threads, backing off when the consumer sets the pace, the memory budget and its hysteresis,
/// the first interval of an epoch, when an interval ends; the same measurements give the same
/// decisions. tuner_simulator.cpp drives the same policy on simulated pipelines.

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

/// One second: `rate` items, each stage busy `util` of its current slots (a compute stage's
/// slots: its limit, at most the arena's threads), `cpu` cores used, the consumer waiting
/// `waited` of it.
tuner_sample second(const tuner_policy& p, double at, double rate, std::vector<double> util,
                    double cpu = 1, double full = 0, double waited = 0.5) {
    tuner_sample s;
    s.at_s = at;
    s.interval_s = 1;
    s.items = rate;
    s.cpu_s = cpu;
    s.full = full;
    s.consumer_wait_s = waited;
    for (std::size_t i = 0; i < util.size(); ++i) s.busy_s.push_back(util[i] * p.limits()[i]);
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
// range's top; each decision says the gain the measurements leave room for (the consumer, who
// waits half the time, allows twice the rate), its rate before is the interval's delivered
// rate and its rate after is filled in one interval later; the stage that is not busy is left
// alone. The same measurements give the same decisions.
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
                   "1.0 s: read 1 -> 2 (busy 100%, CPU 1.0 of 4 cores, room for 2.00x): 100 -> "
                   "200 items/s");
        BOOST_TEST(log[7].why == "busy 100%, CPU 1.0 of 4 cores, room for 1.19x");  // 27 -> 32
        runs.push_back(reads);
    }
    BOOST_TEST(runs[0] == runs[1]);
    // Half a second with 50 items delivered: 100 items/s.
    auto p = read_and_decode();
    auto s = second(p, 1, 50, {1.0, 0.3});
    s.interval_s = 0.5;
    s.consumer_wait_s = 0.25;
    s.busy_s = {0.5, 0.15};
    BOOST_TEST_REQUIRE(p.step(s).size() == 1U);
    BOOST_TEST(p.decisions()[0].rate_before == 100.0);
}

// Every measured bound caps what a raise predicts: read, at 100%, could go 1.5x, but decode
// (90% of its 2 slots) only 1.11x, so both grow in one move, judged together; where decode
// cannot grow, read grows alone for the 1.11x left; where an untuned stage is 99% busy there is
// no gain worth a move.
BOOST_AUTO_TEST_CASE(predicts_the_gain_of_a_raise_from_every_measured_bound) {
    tuner_policy p({{"read", true, 1, 32, 4}, {"decode", false, 1, 4, 2}},
                   tuner_budget{.cpu_cores = 8, .threads = 4});
    auto made = p.step(second(p, 1, 400, {1.0, 0.9}));
    BOOST_TEST_REQUIRE(made.size() == 2U);
    BOOST_TEST(
        text(made[0]) ==
        "1.0 s: read 4 -> 6 (busy 100%, CPU 1.0 of 8 cores, room for 1.50x): 400 items/s before");
    BOOST_TEST(
        text(made[1]) ==
        "1.0 s: decode 2 -> 3 (busy 90%, CPU 1.0 of 8 cores, room for 1.50x): 400 items/s before");
    BOOST_TEST(p.step(second(p, 2, 600, {1.0, 0.9})).size() == 2U);  // kept: 6 -> 9, 3 -> 4
    BOOST_TEST(!p.decisions()[0].undone);
    BOOST_TEST(p.decisions()[1].rate_after == 600.0);

    tuner_policy q({{"read", true, 1, 32, 4}, {"decode", false, 1, 2, 2}},
                   tuner_budget{.cpu_cores = 8, .threads = 4});
    made = q.step(second(q, 1, 400, {1.0, 0.9}));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].why == "busy 100%, CPU 1.0 of 8 cores, room for 1.11x");

    tuner_policy r({{"read", true, 1, 32, 4}, {"parse", false, 2, 2, 2, false}},
                   tuner_budget{.cpu_cores = 8, .threads = 4});
    BOOST_TEST(r.step(second(r, 1, 400, {1.0, 0.99})).empty());
    BOOST_TEST(r.step(second(r, 2, 400, {1.0, 0.5})).size() == 1U);  // parse leaves room now
    BOOST_TEST(r.limits()[1] == 2);                                  // never moved
}

// A raise after which the rate falls by more than a tenth is undone and says so; the knob rests
// for `hold` intervals, then may be raised again; a second undo rests it twice as long. A raise
// after which the rate holds is kept.
BOOST_AUTO_TEST_CASE(undoes_a_raise_that_made_things_worse) {
    tuner_policy p({{"decode", false, 1, 4, 2}}, tuner_budget{.cpu_cores = 4, .threads = 4});
    p.step(second(p, 1, 1000, {0.95}, 2));
    BOOST_TEST_REQUIRE(p.limits()[0] == 3);
    auto made = p.step(second(p, 2, 800, {0.95}, 3));
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(p.limits()[0] == 2);
    BOOST_TEST(made[0].from == 3);
    BOOST_TEST(made[0].to == 2);
    BOOST_TEST(made[0].why == "undo: the rate fell from 1000 to 800 items/s");
    BOOST_TEST(p.decisions()[0].undone);
    BOOST_TEST(p.decisions()[0].rate_after == 800.0);
    int t = 3;
    for (; t < 3 + tuner_policy::hold - 1; ++t) {
        BOOST_TEST(p.step(second(p, t, 1000, {0.95}, 2)).empty(), t);
    }
    BOOST_TEST(p.step(second(p, t++, 1000, {0.95}, 2)).size() == 1U);  // rested 4: raised
    BOOST_TEST(p.step(second(p, t++, 800, {0.95}, 3)).size() == 1U);   // undone again
    BOOST_TEST(p.limits()[0] == 2);
    for (int rested = 1; rested < 2 * tuner_policy::hold; ++rested) {
        BOOST_TEST(p.step(second(p, t++, 1000, {0.95}, 2)).empty(), rested);
    }
    BOOST_TEST(p.step(second(p, t++, 1000, {0.95}, 2)).size() == 1U);
    BOOST_TEST(p.limits()[0] == 3);
    // A rate that holds keeps the raise.
    BOOST_TEST(p.step(second(p, t++, 1000, {0.5}, 3)).empty());
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

// A raise that did not pay (the rate rose less than half of `min_gain`: a bound the policy does
// not measure holds the pipeline) is kept, but its knob rests: it is not drawn up step by step.
BOOST_AUTO_TEST_CASE(a_raise_that_did_not_pay_rests_its_knob) {
    auto p = read_and_decode();
    BOOST_TEST(p.step(second(p, 1, 100, {1.0, 0.3})).size() == 1U);
    for (int t = 2; t < 2 + tuner_policy::hold; ++t) {
        BOOST_TEST(p.step(second(p, t, 100, {1.0, 0.3})).empty(), t);
    }
    BOOST_TEST(p.limits()[0] == 2);
    BOOST_TEST(!p.decisions()[0].undone);
    BOOST_TEST(p.step(second(p, 6, 100, {1.0, 0.3})).size() == 1U);
}

// Over the CPU budget (by more than `cpu_slack`) the lowering that keeps the most rate with
// the CPU it predicts within the budget is made at once: read, which sets the rate, from 12 to
// 9 slots (0.75 of the rate for 0.8 of the CPU), not decode or the arena, whose lowering would
// not cut the rate at all; read then rests. Under the budget, a raise that would pass it is held
// within it by an I/O stage: decode 1 -> 2 would give 1.6x, 1.6 cores of 1.5, so read gives a
// slot back for 1.4x; and when the next interval still finds the CPU over, both are undone.
BOOST_AUTO_TEST_CASE(keeps_the_cpu_budget) {
    tuner_policy p({{"read", true, 1, 32, 12}, {"decode", false, 1, 4, 2}},
                   tuner_budget{.cpu_cores = 2, .threads = 2});
    auto s = second(p, 1, 1000, {1.0, 0.5}, 2.5);
    s.arena_busy_s = 1.0;
    auto made = p.step(s);
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(
        text(made[0]) ==
        "1.0 s: read 12 -> 9 (busy 100%, over budget: CPU 2.5 of 2 cores): 1000 items/s before");
    s = second(p, 2, 750, {1.0, 0.375}, 1.9);
    s.arena_busy_s = 0.75;
    BOOST_TEST(p.step(s).empty());  // read rests; decode is not busy enough to raise

    tuner_policy q({{"read", true, 1, 32, 8}, {"decode", false, 1, 2, 1}},
                   tuner_budget{.cpu_cores = 1.5, .threads = 2});
    s = second(q, 1, 500, {0.625, 1.0}, 1.0);
    s.arena_busy_s = 1.0;
    made = q.step(s);
    BOOST_TEST_REQUIRE(made.size() == 2U);
    BOOST_TEST(text(made[0]) ==
               "1.0 s: read 8 -> 7 (busy 62%, holds the rest within the budget: "
               "CPU 1.0 of 1.5 cores, room for 1.40x): 500 items/s before");
    BOOST_TEST(text(made[1]) ==
               "1.0 s: decode 1 -> 2 (busy 100%, CPU 1.0 of 1.5 cores, room for 1.40x): 500 "
               "items/s before");
    s = second(q, 2, 800, {0.8, 0.8}, 1.6);
    made = q.step(s);
    BOOST_TEST_REQUIRE(made.size() == 2U);
    BOOST_TEST(made[0].why == "undo: over budget: CPU 1.6 of 1.5 cores");
    BOOST_TEST(q.limits() == (std::vector<int>{8, 1}), boost::test_tools::per_element());
}

// Over the CPU budget with no tuned stage to lower, the arena holds a thread idle; it gets it
// back only where the CPU the extra thread predicts fits the budget, and a compute stage that
// is not tuned is never moved.
BOOST_AUTO_TEST_CASE(moves_the_arena_threads_within_the_cpu_budget) {
    tuner_policy p({{"decode", false, 3, 3, 3, false}}, tuner_budget{.cpu_cores = 3, .threads = 3});
    BOOST_TEST(p.threads() == 3);
    auto s = second(p, 1, 300, {1.0}, 3.4);
    s.arena_busy_s = 3;
    auto made = p.step(s);
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].stage == "threads");
    BOOST_TEST(made[0].to == 2);
    BOOST_TEST(made[0].why == "over budget: CPU 3.4 of 3 cores");
    // 2 threads busy: a third predicts 1.5x, 3.45 cores of 3: no.
    int t = 2;
    for (; t < 2 + 2 * tuner_policy::hold; ++t) {
        s = second(p, t, 200, {1.0}, 2.3);
        s.busy_s = {2};
        s.arena_busy_s = 2;
        BOOST_TEST(p.step(s).empty(), t);
    }
    s = second(p, t, 200, {1.0}, 1.8);
    s.busy_s = {2};
    s.arena_busy_s = 2;
    made = p.step(s);
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].why == "arena busy 100%, CPU 1.8 of 3 cores, room for 1.50x");
    BOOST_TEST(p.threads() == 3);
    BOOST_TEST(p.limits()[0] == 3);
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
    for (int t = 5; t <= 8; ++t) p.step(second(p, t, 200.0 * p.limits()[0], {1.0, 0.5}, 1));
    BOOST_TEST(p.limits()[0] == 8);  // 1 2 3 5 8
    BOOST_TEST(p.limits()[1] == 4);
}

// An epoch's first interval (its start to its first output: the pipeline filling) leads a move
// (decode, holding the first batch up, is raised at once) but judges none: a raise made before
// it is neither undone nor given a rate after by the fill's low rate.
BOOST_AUTO_TEST_CASE(the_first_output_moves_and_judges_nothing) {
    tuner_policy p({{"decode", false, 1, 4, 1}}, tuner_budget{.cpu_cores = 4, .threads = 4});
    auto s = second(p, 0.3, 20, {1.0}, 0.3, 0, 0.29);
    s.interval_s = 0.3;  // 1 core, decode's one slot busy throughout, the consumer waiting
    s.busy_s = {0.3};
    s.first = true;
    auto made = p.step(s);
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].to == 2);
    BOOST_TEST(made[0].rate_before == 20.0 / 0.3, boost::test_tools::tolerance(1e-9));
    p.step(second(p, 1.3, 400, {1.0}, 2));  // judged: kept; raised 2 -> 3
    BOOST_TEST(p.limits()[0] == 3);
    s = second(p, 5, 50, {1.0}, 1, 0, 0.9);  // the next epoch's fill
    s.first = true;
    made = p.step(s);
    BOOST_TEST(p.decisions()[1].rate_after == 0.0);
    BOOST_TEST(!p.decisions()[1].undone);
    BOOST_TEST_REQUIRE(made.size() == 1U);
    BOOST_TEST(made[0].to == 4);
}

// An interval ends after `autotune.interval` once it holds `min_outputs` outputs (a rate
// counted in one or two batches is off by half), or at `max_stretch` times its length.
BOOST_AUTO_TEST_CASE(an_interval_holds_a_few_outputs) {
    BOOST_TEST(!tuner_policy::interval_done(0.4, 0.5, 100));
    BOOST_TEST(tuner_policy::interval_done(0.5, 0.5, 4));
    BOOST_TEST(!tuner_policy::interval_done(0.5, 0.5, 3));
    BOOST_TEST(!tuner_policy::interval_done(3.9, 0.5, 1));
    BOOST_TEST(tuner_policy::interval_done(4.0, 0.5, 0));
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

// Items measured at 2.4 MB and 2.0 MB in turn (photos of two sizes) under 100 MB: in_flight
// falls once, to what 2.4 MB items allow, and stays there: 50 is not a quarter above 41.
BOOST_AUTO_TEST_CASE(in_flight_does_not_swing_with_items_of_two_sizes) {
    tuner_policy p({}, tuner_budget{.cpu_cores = 2,
                                    .threads = 2,
                                    .memory_bytes = 100'000'000,
                                    .min_in_flight = 4,
                                    .max_in_flight = 284});
    tuner_sample s;
    s.interval_s = 1;
    s.items = 100;
    for (int t = 1; t <= 20; ++t) {
        s.at_s = t;
        s.item_bytes = t % 2 == 1 ? 2.4e6 : 2.0e6;
        p.step(s);
    }
    BOOST_TEST_REQUIRE(p.decisions().size() == 1U);
    BOOST_TEST(p.decisions()[0].from == 284);
    BOOST_TEST(p.decisions()[0].to == 41);
    BOOST_TEST(p.in_flight() == 41U);
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
