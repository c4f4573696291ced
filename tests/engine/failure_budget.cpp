// SPDX-License-Identifier: Apache-2.0
/// \file
/// The failure budget (`stage_options::max_failures`): exactly N items skipped, then the next
/// failure fails the pipeline — on compute, io and map_async stages, under concurrency, over the
/// pipeline's lifetime (all epochs), and counting items, not retried attempts.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ferry_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace failure_budget_test {

/// The stages a budget is checked on: 0 a compute map, 1 an io map, 2 a map_async.
const std::vector<int> stage_kinds{0, 1, 2};
const char* const kind_names[] = {"compute map", "io map", "map_async"};

/// A pipeline of `source` and one stage named "decode" of kind `kind` (see stage_kinds) that
/// fails the items `bad` picks with bad_record("bad <item>"), under `stage`; it logs to `log`.
template <class Source, class Bad>
ferry::pipeline<int> with_failing_stage(const Source& source, int kind, Bad bad,
                                        ferry::stage_options stage, async_service& service,
                                        log_capture& log) {
    stage.name = "decode";
    // Every line printed, so that the log says which failures were skips.
    const ferry::pipeline_options options{.threads = 2, .logger = log.sink(), .log_burst = 1000};
    if (kind == 2) {
        return source
            .template map_async<int>(
                [&service, bad](int x, ferry::completion<int> done) {
                    service.post([done, x, bad] {
                        if (bad(x)) {
                            done.fail(
                                std::make_exception_ptr(bad_record("bad " + std::to_string(x))));
                        } else {
                            done(x);
                        }
                    });
                },
                stage)
            .build(options);
    }
    if (kind == 1) stage.executor = ferry::io;
    return source
        .map(
            [bad](int x) {
                if (bad(x)) throw bad_record("bad " + std::to_string(x));
                return x;
            },
            stage)
        .build(options);
}

/// Log lines of stage 'decode' at `level` that start with `verb` ("skipped", "failed on").
long lines_saying(log_capture& log, ferry::log_level level, const std::string& verb) {
    const auto lines = log.lines();
    return std::count_if(lines.begin(), lines.end(), [&](const auto& l) {
        return l.first == level && l.second.starts_with("stage 'decode' " + verb + " ");
    });
}

bool every_tenth(int x) {
    return x % 10 == 0;
}

/// The items of 0..n-1 that `every_tenth` spares, below `below`.
std::vector<int> spared_below(int n, int below) {
    std::vector<int> out;
    for (int i = 0; i < std::min(n, below); ++i)
        if (!every_tenth(i)) out.push_back(i);
    return out;
}

}  // namespace failure_budget_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(failure_budget)
using namespace failure_budget_test;

// A budget of 3 skips exactly 3 items (0, 10, 20) and fails on the 4th failure (item 30): the
// consumer gets every other item before it, then a stage_error naming it and the budget; on
// compute, io and map_async stages alike.
BOOST_DATA_TEST_CASE(a_budget_of_n_skips_exactly_n_then_fails_on_the_next, bdata::make(stage_kinds),
                     kind) {
    BOOST_TEST_CONTEXT(kind_names[kind]) {
        async_service service(2, std::chrono::microseconds(100));
        log_capture log;
        auto p = with_failing_stage(ferry::from(iota(100)), kind, every_tenth,
                                    {.on_error = ferry::skip, .max_failures = 3}, service, log);
        std::vector<int> got;
        const auto e = expect_throw<ferry::stage_error>([&] {
            while (auto x = p.next()) got.push_back(*x);
        });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(got == spared_below(100, 30), boost::test_tools::per_element());
        BOOST_TEST(e->stage() == "decode");
        BOOST_TEST(e->item() == 30u);
        BOOST_TEST(e.what().find("failure budget of 3 exhausted") != std::string::npos, e.what());
        BOOST_TEST(lines_saying(log, ferry::log_level::warning, "skipped") == 3);
        std::vector<std::uint64_t> failed_up_to_30;
        for (const auto& f : p.failures())
            if (f.item <= 30) failed_up_to_30.push_back(f.item);
        BOOST_TEST(sorted(failed_up_to_30) == (std::vector<std::uint64_t>{0, 10, 20, 30}),
                   boost::test_tools::per_element());
        // No stage kind calls anything queued after the failing item.
        BOOST_TEST(p.failures().size() == 4u);
        check_accounting(p.stats());
    }
}

// With calls running at once, failures may end out of order, but exactly N of them are skipped
// and every later one fails; the consumer gets every good item before the failing one, in order.
BOOST_DATA_TEST_CASE(under_concurrency_exactly_n_failures_are_skipped,
                     bdata::make(stage_kinds) * bdata::make({4, 16}), kind, conc) {
    BOOST_TEST_CONTEXT(kind_names[kind]) {
        async_service service(4, std::chrono::microseconds(100));
        log_capture log;
        auto p = with_failing_stage(
            ferry::from(iota(300)), kind, every_tenth,
            {.concurrency = conc, .on_error = ferry::skip, .max_failures = 5}, service, log);
        std::vector<int> got;
        const auto e = expect_throw<ferry::stage_error>([&] {
            while (auto x = p.next()) got.push_back(*x);
        });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(e->item() % 10 == 0u);
        BOOST_TEST(e.what().find("failure budget of 5 exhausted") != std::string::npos, e.what());
        BOOST_TEST(got == spared_below(300, static_cast<int>(e->item())),
                   boost::test_tools::per_element());
        const auto failures = static_cast<long>(p.failures().size());
        BOOST_TEST(lines_saying(log, ferry::log_level::warning, "skipped") == 5);
        BOOST_TEST(lines_saying(log, ferry::log_level::error, "failed on") == failures - 5);
        check_accounting(p.stats());
    }
}

// The budget is over the pipeline's lifetime: two failures an epoch against a budget of 5 pass
// epochs 0 and 1 (4 skips), skip item 3 of epoch 2 and fail on its item 13.
BOOST_DATA_TEST_CASE(the_budget_spans_epochs, bdata::make(stage_kinds), kind) {
    BOOST_TEST_CONTEXT(kind_names[kind]) {
        async_service service(2, std::chrono::microseconds(100));
        log_capture log;
        auto p = with_failing_stage(
            ferry::from([](std::uint64_t) { return iota(20); }), kind,
            [](int x) { return x % 10 == 3; }, {.on_error = ferry::skip, .max_failures = 5},
            service, log);
        std::vector<int> spared;
        for (int i = 0; i < 20; ++i)
            if (i % 10 != 3) spared.push_back(i);
        BOOST_TEST(drain(p) == spared, boost::test_tools::per_element());
        BOOST_TEST(drain(p) == spared, boost::test_tools::per_element());
        std::vector<int> got;
        const auto e = expect_throw<ferry::stage_error>([&] {
            while (auto x = p.next()) got.push_back(*x);
        });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(got == (std::vector<int>{0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12}),
                   boost::test_tools::per_element());
        BOOST_TEST(e->item() == 13u);
        std::vector<std::uint64_t> epochs;
        for (const auto& f : p.failures()) epochs.push_back(f.epoch);
        BOOST_TEST(epochs == (std::vector<std::uint64_t>{0, 0, 1, 1, 2, 2}),
                   boost::test_tools::per_element());
        BOOST_TEST(lines_saying(log, ferry::log_level::warning, "skipped") == 5);
        BOOST_TEST(p.stats().epochs == 3u);
    }
}

// With retry-then-skip the budget counts items, not attempts: an item that recovers on its
// second attempt spends nothing; an item whose 3 attempts all fail spends one skip; the 4th
// such item fails the pipeline after its own 3 attempts. On compute and io stages.
BOOST_DATA_TEST_CASE(retried_items_spend_the_budget_once_each, bdata::make({0, 1}), kind) {
    BOOST_TEST_CONTEXT(kind_names[kind]) {
        attempt_counter attempts;
        log_capture log;
        async_service service;
        // Multiples of 10 always fail; items ending in 5 fail on their first attempt only.
        const auto bad = [&attempts](int x) {
            const int n = attempts(x);
            return x % 10 == 0 || (x % 10 == 5 && n == 1);
        };
        auto p = with_failing_stage(
            ferry::from(iota(100)), kind, bad,
            {.on_error =
                 ferry::retry{.attempts = 3, .backoff = {}, .then = ferry::skip, .when = nullptr},
             .max_failures = 3},
            service, log);
        std::vector<int> got;
        const auto e = expect_throw<ferry::stage_error>([&] {
            while (auto x = p.next()) got.push_back(*x);
        });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(got == spared_below(100, 30), boost::test_tools::per_element());
        BOOST_TEST(e->item() == 30u);
        for (const int x : {0, 10, 20, 30}) BOOST_TEST(attempts.of(x) == 3, "item " << x);
        for (const int x : {5, 15, 25}) BOOST_TEST(attempts.of(x) == 2, "item " << x);
        BOOST_TEST(lines_saying(log, ferry::log_level::warning, "skipped") == 3);
        BOOST_TEST(p.failures().size() == 4u);
        BOOST_TEST(p.stats().stages.at(1).retries == 4u * 2u + 3u);
        check_accounting(p.stats());
    }
}

// A failure budget of N lets N failures be skipped; the next one fails the pipeline with a
// message that names the budget.
BOOST_AUTO_TEST_CASE(failure_budget_fails_after_n_skips) {
    auto p = ferry::from(iota(100))
                 .map(
                     [](int x) {
                         if (x % 10 == 0) throw bad_record("bad " + std::to_string(x));
                         return x;
                     },
                     {.name = "decode", .on_error = ferry::skip, .max_failures = 3})
                 .build({.threads = 2, .logger = quiet});
    std::vector<int> got;
    const auto e = expect_throw<ferry::stage_error>([&] {
        while (auto x = p.next()) got.push_back(*x);
    });
    BOOST_REQUIRE(e.has_value());
    // Items 0, 10 and 20 were skipped; 30 was the fourth failure.
    std::vector<int> want;
    for (int i = 1; i < 30; ++i)
        if (i % 10 != 0) want.push_back(i);
    BOOST_TEST(got == want, boost::test_tools::per_element());
    BOOST_TEST(e->stage() == "decode");
    BOOST_TEST(e->item() == 30u);
    BOOST_TEST(e->cause() == "bad 30");
    const std::string what = e->what();
    BOOST_TEST(what.find("failure budget of 3") != std::string::npos, what);
    BOOST_TEST(nests<bad_record>(*e));
    BOOST_TEST(p.failures().size() == 4u);
    check_accounting(p.stats());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
