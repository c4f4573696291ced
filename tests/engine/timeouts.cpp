// SPDX-License-Identifier: Apache-2.0
/// \file
/// Stage timeouts (`stage_options::timeout`) and the watchdog: a call past its deadline fails its
/// item with `ferry::timeout_error` under the stage's policy, ordered output does not wait for it,
/// and stats name the calls in progress.

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "support.hpp"

using namespace ferry_test;

namespace timeouts_test {

/// How long these cases wait for a call to hang or give up (their calls wait up to 20 s).
constexpr auto long_wait = std::chrono::seconds(20);

/// The timeout of the timed stages. Every call of such a stage is timed, the trivial ones too:
/// the limit must be one a thread preempted on a loaded machine (a 2-core CI runner, ASan) does
/// not reach, and far below the hanging calls' 1.5-20 s.
constexpr auto call_limit = std::chrono::milliseconds(250);

/// A call that runs until asked to stop (or `limit` passes), then throws `cancelled`; counts
/// how often it saw the request.
int give_up_or_wait(int x, std::atomic<int>& gave_up, std::chrono::milliseconds limit) {
    const auto until = steady::now() + limit;
    while (steady::now() < until) {
        if (ferry::this_call::stop_requested()) {
            ++gave_up;
            throw ferry::error(ferry::errc::cancelled, "gave up");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return x;
}

const std::vector<ferry::executor> executors{ferry::compute, ferry::io};

}  // namespace timeouts_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(timeouts)
using namespace timeouts_test;

// Under `fail`, a call past its timeout ends the pipeline with a stage_error whose nested cause is
// a timeout_error naming the stage, the item and the limit; the call is told to give up.
BOOST_AUTO_TEST_CASE(a_call_past_its_timeout_fails_the_pipeline_with_timeout_error) {
    for (const auto ex : executors) {
        std::atomic<int> gave_up{0};
        const auto t0 = steady::now();
        std::optional<ferry::stage_error> err;
        {
            auto p = ferry::from(iota(8))
                         .map([&](int x) { return x == 3 ? give_up_or_wait(x, gave_up, 20s) : x; },
                              {.name = "slow", .executor = ex, .timeout = call_limit})
                         .build({.threads = 2, .logger = quiet});
            err = expect_throw<ferry::stage_error>([&] { (void)drain(p); });
            BOOST_REQUIRE(err.has_value());
            check_accounting(p.stats());
        }
        BOOST_TEST(since(t0) < prompt);  // the call's own limit is 20 s
        BOOST_TEST(err->stage() == "slow");
        BOOST_TEST(err->item() == 3U);
        BOOST_TEST(nests<ferry::timeout_error>(*err));
        BOOST_TEST(err->cause() == "stage 'slow' timed out on item 3 after 250 ms (its timeout)");
        BOOST_TEST(gave_up.load() == 1);
    }
}

// Under `skip`, ordered output goes on past an item whose call hangs and ignores the request to
// give up: every other item arrives, in order, while that call still runs; the failure is
// recorded with errc::timeout, and destroying the pipeline waits for the call to return.
BOOST_AUTO_TEST_CASE(skip_passes_a_stuck_call_by_and_destruction_waits_for_it) {
    for (const auto ex : executors) {
        for (const int conc : {1, 4}) {
            BOOST_TEST_CONTEXT("executor " << static_cast<int>(ex) << ", concurrency " << conc) {
                std::atomic<bool> stuck_returned{false};
                std::vector<int> got;
                ferry::pipeline_stats s;
                std::vector<ferry::failure> failures;
                {
                    auto p = ferry::from(iota(20))
                                 .map(
                                     [&](int x) {
                                         if (x == 5) {
                                             std::this_thread::sleep_for(1500ms);  // deaf
                                             stuck_returned = true;
                                         }
                                         return x;
                                     },
                                     {.concurrency = conc,
                                      .name = "fetch",
                                      .on_error = ferry::skip,
                                      .executor = ex,
                                      .timeout = call_limit})
                                 .build({.threads = 2, .logger = quiet});
                    got = drain(p);
                    BOOST_TEST(!stuck_returned.load());  // the output did not wait for it
                    s = p.stats();
                    failures = p.failures();
                }
                BOOST_TEST(stuck_returned.load());  // destruction waited for the call
                std::vector<int> want = iota(20);
                want.erase(want.begin() + 5);
                BOOST_TEST(got == want, boost::test_tools::per_element());
                BOOST_REQUIRE(failures.size() == 1U);
                BOOST_TEST(failures[0].item == 5U);
                BOOST_TEST(failures[0].stage == "fetch");
                BOOST_TEST((failures[0].code == ferry::errc::timeout));
                const auto& r = row_named(s, "fetch");
                BOOST_TEST(r.timeouts == 1U);
                BOOST_TEST(r.failed == 1U);
                BOOST_TEST(r.items_out == 19U);
                check_complete_accounting(s);
                BOOST_TEST(s.failed == 1U);
            }
        }
    }
}

// With retry, an attempt past its timeout is followed by a fresh one while the first gives up;
// the item arrives, and the stats count one timeout and one retry.
BOOST_AUTO_TEST_CASE(retry_runs_a_fresh_attempt_after_a_timeout) {
    for (const auto ex : executors) {
        std::atomic<int> gave_up{0};
        attempt_counter attempts;
        auto p = ferry::from(iota(10))
                     .map(
                         [&](int x) {
                             if (x == 2 && attempts(x) == 1)
                                 return give_up_or_wait(x, gave_up, 20s);
                             return x;
                         },
                         {.concurrency = 2,
                          .name = "fetch",
                          .on_error = ferry::retry{.attempts = 3, .backoff = 1ms},
                          .executor = ex,
                          .timeout = call_limit})
                     .build({.threads = 2, .logger = quiet});
        BOOST_TEST(drain(p) == iota(10), boost::test_tools::per_element());
        const auto s = p.stats();
        const auto& r = row_named(s, "fetch");
        BOOST_TEST(r.timeouts == 1U);
        BOOST_TEST(r.retries == 1U);
        BOOST_TEST(r.failed == 0U);
        BOOST_TEST(attempts.of(2) == 2);
        check_complete_accounting(s);
        BOOST_TEST(wait_until([&] { return gave_up.load() == 1; }, long_wait));
    }
}

// Filters and flat_maps time out as maps do: the item is skipped, the others pass.
BOOST_AUTO_TEST_CASE(filter_and_flat_map_calls_time_out_too) {
    std::atomic<int> gave_up{0};
    auto p =
        ferry::from(iota(12))
            .filter(
                [&](int x) {
                    if (x == 4) (void)give_up_or_wait(x, gave_up, 20s);
                    return x % 3 != 0;
                },
                {.name = "keep", .on_error = ferry::skip, .timeout = call_limit})
            .flat_map(
                [&](int x) {
                    if (x == 7) (void)give_up_or_wait(x, gave_up, 20s);
                    return std::vector<int>{x, x};
                },
                {.concurrency = 2, .name = "twice", .on_error = ferry::skip, .timeout = call_limit})
            .build({.threads = 2, .logger = quiet, .max_epoch_failure_rate = 1});
    const std::vector<int> want{1, 1, 2, 2, 5, 5, 8, 8, 10, 10, 11, 11};
    BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
    const auto s = p.stats();
    BOOST_TEST(row_named(s, "keep").timeouts == 1U);
    BOOST_TEST(row_named(s, "twice").timeouts == 1U);
    BOOST_TEST(s.failed == 2U);
    BOOST_TEST(s.filtered == 4U);  // 0, 3, 6, 9
    check_complete_accounting(s);
}

// A map_async call whose completion never comes fails at its timeout; a late completion is
// ignored.
BOOST_AUTO_TEST_CASE(a_map_async_call_that_never_completes_times_out) {
    std::mutex mutex;
    std::vector<ferry::completion<int>> held;
    auto p =
        ferry::from(iota(6))
            .map_async<int>(
                [&](int x, ferry::completion<int> done) {
                    if (x == 1) {
                        std::lock_guard lock(mutex);
                        held.push_back(done);  // never completed in time
                        return;
                    }
                    done(x * 10);
                },
                {.concurrency = 2, .name = "rpc", .on_error = ferry::skip, .timeout = call_limit})
            .build({.threads = 2, .logger = quiet});
    const std::vector<int> want{0, 20, 30, 40, 50};
    BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
    {
        std::lock_guard lock(mutex);
        BOOST_REQUIRE(held.size() == 1U);
        held[0](10);  // too late: ignored
    }
    const auto s = p.stats();
    BOOST_TEST(row_named(s, "rpc").timeouts == 1U);
    BOOST_TEST(s.failed == 1U);
    BOOST_TEST(s.delivered == 5U);
    const auto f = p.failures();
    BOOST_REQUIRE(f.size() == 1U);
    BOOST_TEST((f[0].code == ferry::errc::timeout));
    check_complete_accounting(s);
}

// Leaving the loop early while a timed call hangs returns promptly (the call gives up), and the
// next epoch runs in full.
BOOST_AUTO_TEST_CASE(leaving_an_epoch_lets_go_of_a_hanging_timed_call) {
    std::atomic<int> gave_up{0};
    std::atomic<int> epoch_calls{0};
    std::atomic<bool> hanging{false};
    auto p = ferry::from([&](std::uint64_t) { return iota(10); })
                 .map(
                     [&](int x) {
                         if (x == 3 && epoch_calls.fetch_add(1) == 0) {
                             hanging = true;
                             return give_up_or_wait(x, gave_up, 20s);
                         }
                         return x;
                     },
                     {.concurrency = 2, .name = "slow", .executor = ferry::io, .timeout = 10s})
                 .build({.threads = 2, .logger = quiet});
    auto t0 = steady::now();
    int seen = 0;
    for (const int x : p) {
        (void)x;
        if (++seen == 2) {
            // Items 0 and 1 may arrive before item 3's call starts (a slow machine, ASan):
            // leave once it hangs, or the next epoch would make the hanging call instead.
            BOOST_REQUIRE(wait_until([&] { return hanging.load(); }, long_wait));
            t0 = steady::now();  // what is timed: leaving
            break;
        }
    }
    BOOST_TEST(since(t0) < prompt);
    BOOST_TEST(wait_until([&] { return gave_up.load() == 1; }, long_wait));
    BOOST_TEST(drain(p) == iota(10), boost::test_tools::per_element());
    check_accounting(p.stats());
}

// A negative timeout is refused at build(), naming the stage.
BOOST_AUTO_TEST_CASE(a_negative_timeout_is_refused) {
    const auto err = expect_throw<ferry::invalid_argument>([] {
        (void)ferry::from(iota(3))
            .map([](int x) { return x; }, {.name = "m", .timeout = -1ms})
            .build();
    });
    BOOST_REQUIRE(err.has_value());
    BOOST_TEST(std::string(err->what()) ==
               "stage 'm': timeout must be 0 (none) or positive, got -1 ms");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(watchdog)
using namespace timeouts_test;

// While ordered output waits for one long call, stats name it: the stage, the item, how long it
// has run; the bottleneck is that stage, not the waiting consumer; p99 counts the running call.
BOOST_AUTO_TEST_CASE(a_head_of_line_stall_names_the_stage_and_item) {
    std::atomic<bool> release{false};
    auto p = ferry::from(iota(40))
                 .map(
                     [&](int x) {
                         if (x == 5) {
                             while (!release) std::this_thread::sleep_for(1ms);
                         }
                         return x;
                     },
                     {.concurrency = 2, .name = "read"})
                 .build({.threads = 2, .in_flight = 16, .logger = quiet});
    std::vector<int> got;
    std::thread consumer([&] { got = drain(p); });
    ferry::pipeline_stats s;
    const bool stalled = wait_until(
        [&] {
            s = p.stats();
            return s.consumer_waiting >= 300ms && !s.stall().empty();
        },
        long_wait);
    release = true;
    consumer.join();
    BOOST_REQUIRE(stalled);
    const auto& r = row_named(s, "read");
    BOOST_TEST(r.running == 1U);
    BOOST_TEST(r.oldest_item == 5U);
    BOOST_TEST(r.oldest_running >= 300ms);
    BOOST_TEST(r.task_p99 >= 250ms);  // the running call, with its time so far
    BOOST_TEST(s.bottleneck() == "read");
    const std::string stall = s.stall();
    BOOST_TEST(stall.find("output waits for item 5 in stage 'read' (running ") == 0U, stall);
    std::ostringstream table;
    table << s;
    BOOST_TEST(
        table.str().find("bottleneck: read (stalled: output waits for item 5") != std::string::npos,
        table.str());
    BOOST_TEST(table.str().find("stage 'read': 1 call in progress, the oldest running ") !=
                   std::string::npos,
               table.str());
    BOOST_TEST(got == iota(40), boost::test_tools::per_element());
}

// With nothing stalled, no stall is reported and nothing is running once the epoch is over.
BOOST_AUTO_TEST_CASE(no_stall_without_a_waiting_consumer) {
    auto p = ferry::from(iota(100)).map([](int x) { return x + 1; }, 2).build({.threads = 2});
    BOOST_TEST(drain(p).size() == 100U);
    const auto s = p.stats();
    BOOST_TEST(s.stall().empty());
    BOOST_TEST(s.consumer_waiting.count() == 0);
    for (const auto& r : s.stages) BOOST_TEST(r.running == 0U, r.name);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
