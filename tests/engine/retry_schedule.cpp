// SPDX-License-Identifier: Apache-2.0
/// \file
/// The one retry schedule (ferry/detail/retry_schedule.hpp) that stages and `http_client` share:
/// the pause before each attempt, jitter, `Retry-After`, and which failures count as transient
/// under each caller's rule. Suite engine/retry_schedule; table-driven.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <exception>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../engine/attempts.hpp"
#include "ferry/detail/retry_schedule.hpp"
#include "ferry/error.hpp"
#include "ferry/options.hpp"

namespace bdata = boost::unit_test::data;
using namespace std::chrono_literals;
using ferry::detail::retry_schedule;
using ms = std::chrono::duration<double, std::milli>;

namespace retry_schedule_test {

/// One row of the delay table: a policy, the attempt that failed, the draw and the server's
/// `Retry-After`, and the pause expected before the next attempt.
struct delay_row {
    const char* what;
    int backoff_ms;
    double multiplier;
    double jitter;
    int failed;
    double draw;
    int retry_after_ms;
    double expected_ms;
};

std::ostream& operator<<(std::ostream& os, const delay_row& r) {
    return os << r.what;
}

const std::vector<delay_row> delays = {
    {"first pause is the backoff", 10, 2.0, 0.0, 1, 0.0, 0, 10.0},
    {"second pause is backoff times multiplier", 10, 2.0, 0.0, 2, 0.0, 0, 20.0},
    {"fourth pause is backoff times multiplier cubed", 10, 2.0, 0.0, 4, 0.0, 0, 80.0},
    {"multiplier 1 keeps the pause", 25, 1.0, 0.0, 5, 0.0, 0, 25.0},
    {"multiplier below 1 shrinks it", 100, 0.5, 0.0, 3, 0.0, 0, 25.0},
    {"zero backoff stays zero", 0, 3.0, 0.0, 6, 0.0, 0, 0.0},
    {"jitter scales by 1 - jitter * draw", 1000, 2.0, 0.5, 1, 0.5, 0, 750.0},
    {"full jitter at the top of its draw", 1000, 2.0, 1.0, 2, 0.999, 0, 2.0},
    {"a draw without jitter changes nothing", 1000, 2.0, 0.0, 1, 0.9, 0, 1000.0},
    {"retry_after is a floor", 10, 2.0, 0.0, 2, 0.0, 5000, 5000.0},
    {"retry_after below the pause leaves it", 1000, 2.0, 0.0, 1, 0.0, 10, 1000.0},
    {"retry_after is a floor under jitter too", 1000, 2.0, 1.0, 1, 0.9, 400, 400.0},
};

/// One row of the transient table: what was thrown, the policy's test, the caller's rule.
struct transient_row {
    const char* what;
    std::exception_ptr (*thrown)();
    ferry::retry_test when;
    retry_schedule::others foreign;
    bool expected;
};

std::ostream& operator<<(std::ostream& os, const transient_row& r) {
    return os << r.what;
}

std::exception_ptr transient_io() {
    return std::make_exception_ptr(ferry::io_error("reset"));
}
std::exception_ptr lasting() {
    return std::make_exception_ptr(ferry::io_error("gone", false));
}
std::exception_ptr plain() {
    return std::make_exception_ptr(std::runtime_error("plain"));
}
std::exception_ptr not_std() {
    return std::make_exception_ptr(42);
}

bool never_passes(const std::exception&) {
    return false;
}
bool throws(const std::exception&) {
    throw std::logic_error("test of the test");
}

using others = retry_schedule::others;
const std::vector<transient_row> transients = {
    {"engine: transient ferry::error", &transient_io, &ferry::is_transient, others::tested, true},
    {"engine: lasting ferry::error", &lasting, &ferry::is_transient, others::tested, false},
    {"engine: plain std::exception is tested (is_transient: yes)", &plain, &ferry::is_transient,
     others::tested, true},
    {"engine: a test may refuse a plain exception", &plain, &never_passes, others::tested, false},
    {"engine: not a std::exception is retried", &not_std, &ferry::is_transient, others::tested,
     true},
    {"engine: no test retries a lasting error", &lasting, nullptr, others::tested, true},
    {"engine: a test that throws retries nothing", &transient_io, &throws, others::tested, false},
    {"http: transient ferry::error", &transient_io, &ferry::is_transient, others::never, true},
    {"http: lasting ferry::error", &lasting, &ferry::is_transient, others::never, false},
    {"http: plain std::exception is never retried", &plain, &ferry::is_transient, others::never,
     false},
    {"http: nor without a test", &plain, nullptr, others::never, false},
    {"http: not a std::exception is never retried", &not_std, nullptr, others::never, false},
    {"http: no test retries a lasting error", &lasting, nullptr, others::never, true},
};

}  // namespace retry_schedule_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(retry_schedule_cases)
using namespace retry_schedule_test;

// The pause before each attempt: backoff * multiplier^(k - 1), jittered, never under
// Retry-After — computed once for stages and http_client.
BOOST_DATA_TEST_CASE(pause_follows_backoff_multiplier_jitter_and_retry_after, bdata::make(delays),
                     row) {
    const retry_schedule s =
        retry_schedule::of(ferry::retry{.backoff = std::chrono::milliseconds(row.backoff_ms),
                                        .multiplier = row.multiplier,
                                        .jitter = row.jitter});
    const ms got = s.pause(s.backoff_after(row.failed),
                           std::chrono::milliseconds(row.retry_after_ms), row.draw);
    BOOST_TEST(got.count() == row.expected_ms, boost::test_tools::tolerance(1e-9));
}

// Which failures are tried again, under the engine's rule and under http_client's.
BOOST_DATA_TEST_CASE(transient_rule_per_caller, bdata::make(transients), row) {
    const retry_schedule s = retry_schedule::of(ferry::retry{.when = row.when}, row.foreign);
    BOOST_TEST(s.transient(row.thrown()) == row.expected);
}

// A stage's policy and http_client's retry become the same schedule: the same pauses, each
// caller keeping its own rule for exceptions that are not ferry::error.
BOOST_AUTO_TEST_CASE(stage_policy_and_http_retry_share_the_schedule) {
    const ferry::retry r{.attempts = 5, .backoff = 7ms, .multiplier = 3.0, .jitter = 0.25};
    const retry_schedule stage = ferry::detail::schedule_of(ferry::error_policy(r));
    const retry_schedule http = retry_schedule::of(r, others::never);
    BOOST_TEST(stage.attempts == http.attempts);
    BOOST_TEST((stage.foreign == others::tested));
    BOOST_TEST((http.foreign == others::never));
    for (int k = 1; k < 5; ++k) {
        BOOST_TEST(stage.backoff_after(k).count() == http.backoff_after(k).count());
        BOOST_TEST(stage.pause(stage.backoff_after(k), 0ms, 0.5).count() ==
                   http.pause(http.backoff_after(k), 0ms, 0.5).count());
    }
    BOOST_TEST(http.backoff_after(4).count() == 7.0 * 3 * 3 * 3);
}

// What a policy may not say is read as error_policy reads it: at least one attempt, a jitter
// within [0, 1].
BOOST_AUTO_TEST_CASE(schedule_clamps_attempts_and_jitter) {
    BOOST_TEST(retry_schedule::of(ferry::retry{.attempts = 0}).attempts == 1);
    BOOST_TEST(retry_schedule::of(ferry::retry{.attempts = -3}).attempts == 1);
    BOOST_TEST(retry_schedule::of(ferry::retry{.jitter = 2.0}).jitter == 1.0);
    BOOST_TEST(retry_schedule::of(ferry::retry{.jitter = -1.0}).jitter == 0.0);
}

// The drawn pause of a failure stays in [(1 - jitter) * nominal, nominal] and honours the
// failure's retry_after.
BOOST_AUTO_TEST_CASE(drawn_pause_stays_in_the_jitter_range) {
    const retry_schedule s = retry_schedule::of(ferry::retry{.backoff = 100ms, .jitter = 0.5});
    for (int i = 0; i < 500; ++i) {
        const double got = s.pause_after(2, plain()).count();
        BOOST_TEST_REQUIRE(got >= 100.0);
        BOOST_TEST_REQUIRE(got <= 200.0);
    }
    ferry::io_error slow("slow down");
    slow.set_retry_after(3000ms);
    BOOST_TEST(s.pause_after(2, std::make_exception_ptr(slow)).count() == 3000.0);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
