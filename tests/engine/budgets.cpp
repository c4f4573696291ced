// SPDX-License-Identifier: Apache-2.0
/// \file
/// Failure budgets as rates, the epoch that mostly failed, sane bounds on the options, and the
/// stats that judge a stage by the slots it can use: the promises that a dead server never looks
/// like a short, successful epoch and that a bad option is an error at build().

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace ferry_test;

namespace budgets_test {

struct flaky : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Spins for about `us` microseconds of CPU time.
void spin(int us) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
    volatile unsigned x = 0;
    while (std::chrono::steady_clock::now() < until) x = x + 1;
}

}  // namespace budgets_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(budgets)
using namespace budgets_test;

// An epoch in which most items failed (skipped) ends with an error naming the count and the
// stage, not as a short epoch; the pipeline stays failed.
BOOST_AUTO_TEST_CASE(an_epoch_where_most_items_failed_ends_with_an_error) {
    auto p = ferry::from(iota(100))
                 .map(
                     [](int x) {
                         if (x >= 20) throw flaky("server gone");
                         return x;
                     },
                     {.name = "fetch", .on_error = ferry::skip})
                 .build({.threads = 2, .logger = quiet});
    std::vector<int> got;
    const std::string what = expect_throw<ferry::error>([&] {
                                 while (auto x = p.next()) got.push_back(*x);
                             }).what();
    BOOST_TEST(what.starts_with("epoch 0: 80 of 100 items failed (80%), more than "
                                "max_epoch_failure_rate = 50%; most in stage 'fetch' (80)"),
               what);
    BOOST_TEST(what.find("server gone") != std::string::npos, what);
    BOOST_TEST(got == iota(20));
    const auto s = p.stats();
    BOOST_TEST(s.failed == 80U);
    check_complete_accounting(s);
    BOOST_CHECK_THROW((void)p.next(), ferry::error);  // sticky
}

// Half failed is not most; 1 turns the rule off, and then even a fully failed epoch ends.
BOOST_AUTO_TEST_CASE(half_failed_ends_normally_and_one_turns_the_rule_off) {
    auto half = ferry::from(iota(100))
                    .map(
                        [](int x) {
                            if (x % 2 == 0) throw flaky("even");
                            return x;
                        },
                        {.on_error = ferry::skip})
                    .build({.threads = 2, .logger = quiet});
    BOOST_TEST(drain(half).size() == 50U);

    auto all = ferry::from(iota(30))
                   .map([](int) -> int { throw flaky("down"); }, {.on_error = ferry::skip})
                   .build({.threads = 2, .logger = quiet, .max_epoch_failure_rate = 1.0});
    BOOST_TEST(drain(all).empty());
    BOOST_TEST(all.stats().failed == 30U);
}

// A stage's rate budget: once its window is full, the failure that leaves more than the rate
// failed among its last `failure_window` items fails the pipeline, naming the budget.
BOOST_AUTO_TEST_CASE(a_failure_rate_over_the_window_fails_the_stage) {
    auto p = ferry::from(iota(200))
                 .map(
                     [](int x) {
                         if (x >= 50) throw flaky("timeout");
                         return x;
                     },
                     {.name = "rpc",
                      .on_error = ferry::skip,
                      .max_failure_rate = 0.3,
                      .failure_window = 10})
                 .build({.threads = 1, .logger = quiet});
    std::vector<int> got;
    const auto e = expect_throw<ferry::stage_error>([&] {
        while (auto x = p.next()) got.push_back(*x);
    });
    BOOST_REQUIRE(e.has_value());
    // Items 50, 51, 52 are skipped (3 of 10 is not over 30%); 53 makes it 4 of 10.
    BOOST_TEST(e->stage() == "rpc");
    BOOST_TEST(e->item() == 53U);
    BOOST_TEST(e.what().find("failure rate budget of 30% exhausted (4 of the last 10 items "
                             "failed); last error: timeout") != std::string::npos,
               e.what());
    BOOST_TEST(got == iota(50));
    BOOST_TEST(p.stats().failed == 4U);
}

// Failures spread under the rate never end the run, however many there are in total.
BOOST_AUTO_TEST_CASE(failures_under_the_rate_pass_however_many) {
    auto p = ferry::from(iota(1000))
                 .map(
                     [](int x) {
                         if (x % 5 == 0) throw flaky("one in five");
                         return x;
                     },
                     {.on_error = ferry::skip, .max_failure_rate = 0.3, .failure_window = 10})
                 .build({.threads = 2, .logger = quiet});
    BOOST_TEST(drain(p).size() == 800U);
    BOOST_TEST(p.stats().failed == 200U);
}

// The rate is judged only over a full window: two failures among the first items (100% of
// what the stage has seen, 2% of a window of 100) do not end a run under a 1% budget, while the
// same two failures once the window is full do.
BOOST_AUTO_TEST_CASE(two_early_failures_do_not_end_a_run_under_a_rate_budget) {
    auto failing_at = [](int first) {
        return ferry::from(iota(300))
            .map(
                [first](int x) {
                    if (x == first || x == first + 1) throw flaky("early");
                    return x;
                },
                {.name = "rpc",
                 .on_error = ferry::skip,
                 .max_failure_rate = 0.01,
                 .failure_window = 100})
            .build({.threads = 1, .logger = quiet});
    };
    auto early = failing_at(0);
    std::vector<int> expected = iota(300);
    expected.erase(expected.begin(), expected.begin() + 2);
    BOOST_TEST(drain(early) == expected, boost::test_tools::per_element());
    BOOST_TEST(early.stats().failed == 2U);

    auto late = failing_at(150);
    const auto e = expect_throw<ferry::stage_error>([&] { (void)drain(late); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->stage() == "rpc");
    BOOST_TEST(e->item() == 151U);
    BOOST_TEST(e.what().find("failure rate budget of 1% exhausted (2 of the last 100 items "
                             "failed)") != std::string::npos,
               e.what());
}

// Options beyond sane bounds are invalid_argument at build(), before any thread is made.
BOOST_AUTO_TEST_CASE(options_beyond_sane_bounds_are_refused_at_build) {
    const auto threads = expect_throw<ferry::invalid_argument>(
        [] { (void)ferry::from(iota(4)).build({.threads = 100000}); });
    BOOST_TEST(threads.what().starts_with("threads = 100000 is more than 1024"));
    const auto concurrency = expect_throw<ferry::invalid_argument>([] {
        (void)ferry::from(iota(4))
            .map([](int x) { return x; },
                 {.concurrency = 100000, .name = "read", .executor = ferry::io})
            .build();
    });
    BOOST_TEST(
        concurrency.what().starts_with("stage 'read': concurrency 100000 is more than 4096"));
    const auto in_flight = expect_throw<ferry::invalid_argument>(
        [] { (void)ferry::from(iota(4)).build({.in_flight = std::size_t{1} << 40}); });
    BOOST_TEST(in_flight.what().starts_with("in_flight = 1099511627776 is more than"));
    const auto rate = expect_throw<ferry::invalid_argument>([] {
        (void)ferry::from(iota(4)).map([](int x) { return x; }, {.max_failure_rate = 1.5}).build();
    });
    BOOST_TEST(rate.what().starts_with("stage 'map#1': max_failure_rate must be in [0, 1]"));
    const auto epoch_rate = expect_throw<ferry::invalid_argument>(
        [] { (void)ferry::from(iota(4)).build({.max_epoch_failure_rate = -0.1}); });
    BOOST_TEST(epoch_rate.what().starts_with("max_epoch_failure_rate must be in [0, 1]"));
}

// threads = 0, the default, builds an arena of half the machine's hardware threads (at least 1),
// or with an autotune CPU budget as many as its whole cores; the pipeline runs and says so.
BOOST_AUTO_TEST_CASE(zero_threads_means_the_documented_default) {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    auto p = ferry::from(iota(50)).map([](int x) { return x * 2; }, 4).build({.threads = 0});
    const auto got = drain(p);
    BOOST_TEST(got.size() == 50U);
    BOOST_TEST(got.back() == 98);
    BOOST_TEST(p.stats().threads == std::max(1, hw / 2));
    auto q = ferry::from(iota(50))
                 .map([](int x) { return x * 2; }, 4)
                 .build({.threads = 0, .autotune = ferry::autotune{.cpu_budget = 3.5}});
    BOOST_TEST(q.stats().threads == 3);
    BOOST_TEST(drain(q).size() == 50U);
}

// A CPU-bound stage with more slots than threads is judged against the threads it can use: on
// 2 threads with concurrency 4 it is busy all the time, and the stats name it the bottleneck.
BOOST_AUTO_TEST_CASE(an_oversubscribed_stage_is_judged_by_the_threads_it_can_use) {
    // Every item admitted at once, so that the stage always has work queued and the verdict
    // does not hang on how soon a busy machine schedules the source and the consumer.
    auto p = ferry::from(iota(120))
                 .map(
                     [](int x) {
                         spin(5000);
                         return x;
                     },
                     {.concurrency = 4, .name = "spin"})
                 .build({.threads = 2, .in_flight = 120, .fast_start = false});
    BOOST_TEST(drain(p).size() == 120U);
    const auto s = p.stats();
    std::ostringstream table;
    table << s;
    // Judged against its 4 slots it could never pass 50% (2 threads run at most 2 calls).
    BOOST_TEST(row_named(s, "spin").utilization > 0.5, table.str());
    BOOST_TEST(s.bottleneck() == "spin", table.str());
}

// The stats table has a retries column, and it shows the stage's retries.
BOOST_AUTO_TEST_CASE(the_stats_table_shows_retries) {
    std::atomic<int> calls{0};
    auto p = ferry::from(iota(10))
                 .map(
                     [&](int x) {
                         if (++calls % 2 == 1) throw std::runtime_error("once");
                         return x;
                     },
                     {.name = "twice",
                      .on_error = ferry::retry{.attempts = 2, .backoff = {}, .when = nullptr}})
                 .build({.threads = 1});
    BOOST_TEST(drain(p).size() == 10U);
    std::ostringstream table;
    table << p.stats();
    std::istringstream lines(table.str());
    std::string header;
    std::getline(lines, header);
    std::istringstream h(header);
    std::vector<std::string> columns{std::istream_iterator<std::string>(h), {}};
    const auto col = std::find(columns.begin(), columns.end(), "retry") - columns.begin();
    BOOST_REQUIRE(col < static_cast<long>(columns.size()));
    std::string line;
    bool seen = false;
    while (std::getline(lines, line)) {
        std::istringstream l(line);
        std::vector<std::string> cells{std::istream_iterator<std::string>(l), {}};
        if (!cells.empty() && cells[0] == "twice") {
            BOOST_TEST(cells.at(static_cast<std::size_t>(col)) == "10", table.str());
            seen = true;
        }
    }
    BOOST_TEST(seen, table.str());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
