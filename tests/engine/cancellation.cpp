// SPDX-License-Identifier: Apache-2.0
/// \file
/// Cancellation: a stage call learns that its pipeline stops (this_call::stop_requested()), and
/// a retry's backoff sleep does not hold stop() or destruction.

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "support.hpp"

using namespace ferry_test;

namespace cancellation_test {

using steady = std::chrono::steady_clock;

/// Waits (up to 20 s) until `flag` is set.
void wait_for(const std::atomic<bool>& flag) {
    const auto until = steady::now() + std::chrono::seconds(20);
    while (!flag && steady::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace cancellation_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(cancellation)
using namespace cancellation_test;

// Outside a stage call, and in a call of a pipeline that goes on, nothing asks to stop.
BOOST_AUTO_TEST_CASE(nothing_asks_a_running_pipelines_calls_to_stop) {
    BOOST_TEST(!ferry::this_call::stop_requested());
    std::atomic<int> asked{0};
    auto p = ferry::from(iota(50))
                 .map(
                     [&](int x) {
                         if (ferry::this_call::stop_requested()) ++asked;
                         return x;
                     },
                     2)
                 .build({.threads = 2});
    BOOST_TEST(drain(p).size() == 50U);
    BOOST_TEST(asked.load() == 0);
}

// stop() from another thread reaches a call that polls this_call::stop_requested(): the call
// gives up, the loop ends, and destruction does not wait for the call's own 20 s limit.
BOOST_AUTO_TEST_CASE(stop_reaches_a_call_in_progress) {
    std::atomic<bool> started{false};
    std::atomic<bool> saw_stop{false};
    const auto t0 = steady::now();
    {
        auto p = ferry::from(iota(4))
                     .map(
                         [&](int x) {
                             started = true;
                             const auto until = steady::now() + std::chrono::seconds(20);
                             while (steady::now() < until) {
                                 if (ferry::this_call::stop_requested()) {
                                     saw_stop = true;
                                     throw ferry::error(ferry::errc::cancelled, "gave up");
                                 }
                                 std::this_thread::sleep_for(std::chrono::milliseconds(1));
                             }
                             return x;
                         },
                         {.name = "long", .executor = ferry::io})
                     .build({.threads = 1, .logger = quiet});
        std::thread stopper([&] {
            wait_for(started);
            p.stop();
        });
        for (const int x : p) (void)x;
        stopper.join();
    }
    BOOST_TEST(saw_stop.load());
    BOOST_TEST(since(t0) < std::chrono::seconds(10));  // the call's own limit is 20 s
}

// A retry's backoff (30 s here) is cut short by stop(): no second attempt, and destruction is
// prompt.
BOOST_AUTO_TEST_CASE(stop_cuts_a_retry_backoff_short) {
    std::atomic<int> calls{0};
    std::atomic<bool> failed_once{false};
    const auto t0 = steady::now();
    {
        auto p = ferry::from(iota(1))
                     .map(
                         [&](int) -> int {
                             ++calls;
                             failed_once = true;
                             throw std::runtime_error("flaky");
                         },
                         {.on_error = ferry::retry{.attempts = 3,
                                                   .backoff = std::chrono::seconds(30),
                                                   .when = nullptr},
                          .executor = ferry::io})
                     .build({.threads = 1, .logger = quiet});
        std::thread stopper([&] {
            wait_for(failed_once);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // into the backoff
            p.stop();
        });
        try {
            for (const int x : p) (void)x;
        } catch (const ferry::stage_error&) {
            // The item may fail before the stop is seen: either way the backoff was cut.
        }
        stopper.join();
    }
    BOOST_TEST(calls.load() == 1);
    BOOST_TEST(since(t0) < std::chrono::seconds(10));  // one backoff alone is 30 s
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
