// SPDX-License-Identifier: Apache-2.0
/// \file
/// The retry policy: what is tried again (only what can pass), how often, with which input, and
/// on which stage kinds. Suite engine/errors, as the other error policies (errors.cpp).
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../../engine/attempts.hpp"
#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ferry_test;

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(errors)

// A retried item that fails twice and then succeeds is delivered, and the retries are counted.
BOOST_DATA_TEST_CASE(retry_delivers_an_item_that_fails_twice_then_succeeds,
                     bdata::make(error_concurrencies), conc) {
    attempt_counter attempts;
    auto p = ferry::from(iota(50))
                 .map(
                     [&](int x) {
                         if (x == 5 && attempts(x) <= 2) throw bad_record("flaky");
                         return x;
                     },
                     {.concurrency = conc,
                      .on_error =
                          ferry::retry{
                              .attempts = 3, .backoff = 1ms, .then = ferry::error_action::skip}})
                 .build({.threads = 2, .logger = quiet});
    BOOST_TEST(drain(p) == iota(50), boost::test_tools::per_element());
    BOOST_TEST(attempts.of(5) == 3);
    BOOST_TEST(p.failures().empty());
    const auto s = p.stats();
    BOOST_TEST(s.stages.at(1).retries == 2u);
    BOOST_TEST(s.failed == 0u);
    check_complete_accounting(s);
}

// An item that fails every attempt is tried exactly `attempts` times, then skipped.
BOOST_AUTO_TEST_CASE(retry_then_skip_skips_after_all_attempts) {
    attempt_counter attempts;
    auto p = ferry::from(iota(20))
                 .map(
                     [&](int x) {
                         if (x == 7) {
                             attempts(x);
                             throw bad_record("always");
                         }
                         return x;
                     },
                     {.on_error =
                          ferry::retry{
                              .attempts = 3, .backoff = 1ms, .then = ferry::error_action::skip}})
                 .build({.threads = 2, .logger = quiet});
    auto got = drain(p);
    BOOST_TEST((std::find(got.begin(), got.end(), 7) == got.end()));
    BOOST_TEST(got.size() == 19u);
    BOOST_TEST(attempts.of(7) == 3);
    const auto f = p.failures();
    BOOST_REQUIRE(f.size() == 1u);
    BOOST_TEST(f[0].item == 7u);
    BOOST_TEST(p.stats().stages.at(1).retries == 2u);
    check_complete_accounting(p.stats());
}

// retry tries again only what can pass: a ferry::error that is not transient (a corrupt image,
// a missing file, a bad argument) is failed at once, a transient io_error and an exception of any
// other type get every attempt; `.when` changes the test, and `nullptr` retries everything.
BOOST_AUTO_TEST_CASE(retry_skips_the_attempts_a_permanent_failure_would_waste) {
    struct case_ {
        const char* what;
        std::function<void()> fail;
        ferry::retry_test when;
        int calls;
    };
    const ferry::retry_test always = [](const std::exception&) { return true; };
    const ferry::retry_test never = [](const std::exception&) { return false; };
    const std::vector<case_> cases{
        {"decode_error", [] { throw ferry::decode_error("not a JPEG file"); }, &ferry::is_transient,
         1},
        {"invalid_argument", [] { throw ferry::invalid_argument("bad size"); },
         &ferry::is_transient, 1},
        {"permanent io_error", [] { throw ferry::io_error("no such file", false); },
         &ferry::is_transient, 1},
        {"transient io_error", [] { throw ferry::io_error("EIO"); }, &ferry::is_transient, 3},
        {"runtime_error", [] { throw std::runtime_error("anything"); }, &ferry::is_transient, 3},
        {"non-std exception", [] { throw 42; }, &ferry::is_transient, 3},
        {"decode_error, when always", [] { throw ferry::decode_error("x"); }, always, 3},
        {"decode_error, when nullptr", [] { throw ferry::decode_error("x"); }, nullptr, 3},
        {"io_error, when never", [] { throw ferry::io_error("EIO"); }, never, 1},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.what) {
            attempt_counter attempts;
            auto p = ferry::from(iota(20))
                         .map(
                             [&](int x) {
                                 if (x == 7) {
                                     attempts(x);
                                     c.fail();
                                 }
                                 return x;
                             },
                             {.on_error = ferry::retry{.attempts = 3,
                                                       .backoff = 1ms,
                                                       .then = ferry::error_action::skip,
                                                       .when = c.when}})
                         .build({.threads = 2, .logger = quiet});
            BOOST_TEST(drain(p).size() == 19u);
            BOOST_TEST(attempts.of(7) == c.calls);
            const auto s = p.stats();
            BOOST_TEST(s.stages.at(1).retries == static_cast<std::uint64_t>(c.calls - 1));
            BOOST_TEST(s.failed == 1u);
            check_complete_accounting(s);
        }
    }
}

// The transient test itself: ferry's errors by code and by what made them, a stage_error by its
// cause, anything else retried.
BOOST_AUTO_TEST_CASE(is_transient_reads_the_cause) {
    const auto nested = [](auto cause) {
        try {
            throw cause;
        } catch (...) {
            return ferry::stage_error("inner", 0, 1, cause.what(), "stage 'inner' failed");
        }
    };
    struct case_ {
        const char* what;
        std::shared_ptr<const std::exception> error;
        bool transient;
    };
    const std::vector<case_> cases{
        {"transient io_error", std::make_shared<ferry::io_error>("EIO"), true},
        {"permanent io_error", std::make_shared<ferry::io_error>("ENOENT", false), false},
        {"decode_error", std::make_shared<ferry::decode_error>("corrupt"), false},
        {"invalid_argument", std::make_shared<ferry::invalid_argument>("bad"), false},
        {"errc::cuda", std::make_shared<ferry::error>(ferry::errc::cuda, "busy"), true},
        {"errc::internal", std::make_shared<ferry::error>(ferry::errc::internal, "bug"), false},
        {"runtime_error", std::make_shared<std::runtime_error>("?"), true},
        {"stage_error of a transient io_error",
         std::make_shared<ferry::stage_error>(nested(ferry::io_error("EIO"))), true},
        {"stage_error of a decode_error",
         std::make_shared<ferry::stage_error>(nested(ferry::decode_error("corrupt"))), false},
    };
    for (const auto& c : cases) {
        BOOST_TEST_CONTEXT(c.what) {
            BOOST_TEST(ferry::is_transient(*c.error) == c.transient);
        }
    }
    const std::vector<std::pair<int, bool>> errnos{
        {ENOENT, false}, {EACCES, false}, {EIO, true}, {EAGAIN, true}};
    for (const auto& [code, transient] : errnos) {
        BOOST_TEST_CONTEXT("errno " << code) {
            BOOST_TEST(ferry::transient_errno(code) == transient);
        }
    }
}

// retry with the default `then = fail` ends the pipeline once every attempt failed.
BOOST_AUTO_TEST_CASE(retry_then_fail_throws_after_all_attempts) {
    attempt_counter attempts;
    auto p = ferry::from(iota(20))
                 .map(
                     [&](int x) {
                         if (x == 7) {
                             attempts(x);
                             throw bad_record("always");
                         }
                         return x;
                     },
                     {.name = "fetch", .on_error = ferry::retry{.attempts = 2, .backoff = 1ms}})
                 .build({.threads = 2, .logger = quiet});
    const auto e = expect_throw<ferry::stage_error>([&] { (void)drain(p); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->stage() == "fetch");
    BOOST_TEST(e->item() == 7u);
    BOOST_TEST(attempts.of(7) == 2);
}

// Retry also applies to flat_map: a flat_map call that fails once and then succeeds delivers
// its outputs.
BOOST_AUTO_TEST_CASE(retry_applies_to_flat_map) {
    attempt_counter attempts;
    auto p = ferry::from(iota(20))
                 .flat_map(
                     [&](int x) {
                         if (x == 7 && attempts(x) == 1) throw bad_record("flaky");
                         return std::vector<int>{x};
                     },
                     {.on_error =
                          ferry::retry{
                              .attempts = 3, .backoff = 1ms, .then = ferry::error_action::skip}})
                 .build({.threads = 2, .logger = quiet});
    BOOST_TEST(drain(p) == iota(20), boost::test_tools::per_element());
    BOOST_TEST(attempts.of(7) == 2);
    BOOST_TEST(p.failures().empty());
}

// Retrying a move-only element never calls the stage again with a moved-from value: the retry
// gets the original, or the item fails with the original error.
BOOST_AUTO_TEST_CASE(retry_never_calls_again_with_a_moved_from_element) {
    attempt_counter attempts;
    std::atomic<int> null_inputs{0};
    auto p = ferry::from([i = 0]() mutable -> std::optional<std::unique_ptr<int>> {
                 if (i == 10) return std::nullopt;
                 return std::make_unique<int>(i++);
             })
                 .map(
                     [&](std::unique_ptr<int> v) {
                         if (!v) {
                             null_inputs.fetch_add(1);
                             throw bad_record("null input");
                         }
                         if (*v == 4 && attempts(*v) == 1) throw bad_record("flaky");
                         return *v;
                     },
                     {.on_error =
                          ferry::retry{
                              .attempts = 2, .backoff = 1ms, .then = ferry::error_action::skip}})
                 .build({.threads = 1, .logger = quiet});
    const auto got = drain(p);
    BOOST_TEST(null_inputs.load() == 0);
    const bool delivered = std::find(got.begin(), got.end(), 4) != got.end();
    const auto f = p.failures();
    const bool failed_with_original_error = f.size() == 1 && f[0].message == "flaky";
    BOOST_TEST((delivered || failed_with_original_error));
}

// A failure that says how long to wait (ferry::error::retry_after, an HTTP Retry-After) is
// retried no sooner, however short the policy's backoff; on every stage path (plain and timed).
BOOST_DATA_TEST_CASE(retry_waits_at_least_what_the_failure_asks, bdata::make({0, 5000}),
                     timeout_ms) {
    attempt_counter attempts;
    std::vector<std::chrono::steady_clock::time_point> at;
    std::mutex m;
    auto p = ferry::from(iota(3))
                 .map(
                     [&](int x) {
                         if (x == 1) {
                             const std::lock_guard lock(m);
                             at.push_back(std::chrono::steady_clock::now());
                         }
                         if (x == 1 && attempts(x) == 1) {
                             ferry::io_error e("busy");
                             e.set_retry_after(300ms);
                             throw e;
                         }
                         return x;
                     },
                     {.on_error = ferry::retry{.attempts = 2, .backoff = 1ms},
                      .timeout = std::chrono::milliseconds(timeout_ms)})
                 .build({.threads = 2, .logger = quiet});
    BOOST_TEST(drain(p) == iota(3), boost::test_tools::per_element());
    BOOST_REQUIRE(at.size() == 2U);
    BOOST_TEST((at[1] - at[0] >= 300ms));
}

// Jitter scales each pause by a factor in [1 - jitter, 1], spread over that range; retry_after
// is a floor under it.
BOOST_AUTO_TEST_CASE(jitter_spreads_pauses_within_its_range) {
    ferry::error_policy policy = ferry::retry{.backoff = 1000ms, .jitter = 0.5};
    const auto plain = std::make_exception_ptr(std::runtime_error("x"));
    double lo = 1e9;
    double hi = 0;
    for (int i = 0; i < 2000; ++i) {
        const double ms = ferry::detail::pause_before_retry(policy, 1000ms, plain).count();
        BOOST_TEST_REQUIRE(ms >= 500.0);
        BOOST_TEST_REQUIRE(ms <= 1000.0);
        lo = std::min(lo, ms);
        hi = std::max(hi, ms);
    }
    BOOST_TEST(lo < 550.0);
    BOOST_TEST(hi > 950.0);
    ferry::io_error slow("slow down");
    slow.set_retry_after(5000ms);
    BOOST_TEST(
        ferry::detail::pause_before_retry(policy, 1000ms, std::make_exception_ptr(slow)).count() ==
        5000.0);
    const ferry::error_policy none = ferry::retry{.backoff = 1000ms};
    BOOST_TEST(ferry::detail::pause_before_retry(none, 1000ms, plain).count() == 1000.0);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
