// SPDX-License-Identifier: Apache-2.0
/// \file
/// The failure recorder on its own (engine/failure_recorder.hpp): the skip budgets' verdicts,
/// the record of a failure and the epoch's failure rate, without building a pipeline.

#include "engine/failure_recorder.hpp"

#include <boost/test/unit_test.hpp>

#include <ferry/error.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace failure_recorder_test {

using ferry::detail::failure_budget;
using ferry::detail::failure_recorder;

ferry::stage_options skipping(std::uint64_t max_failures, double rate = 0,
                              std::size_t window = 100) {
    ferry::stage_options o;
    o.on_error = ferry::skip;
    o.max_failures = max_failures;
    o.max_failure_rate = rate;
    o.failure_window = window;
    return o;
}

/// A pipeline's options that log nowhere.
ferry::pipeline_options quiet_options() {
    ferry::pipeline_options o;
    o.logger = [](ferry::log_level, std::string_view) {};
    return o;
}

std::string message_of(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    }
}

}  // namespace failure_recorder_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(recorder)
using namespace failure_recorder_test;

// Protects: with ferry::fail, the first failure fails the pipeline with the error's own text.
BOOST_AUTO_TEST_CASE(fail_action_fails_the_first_item) {
    ferry::stage_options o;
    ferry::detail::failure_budget budget(o);
    const auto v = budget.failed("boom");
    BOOST_TEST(v.fail);
    BOOST_TEST(v.reason == "boom");
}

// Protects: max_failures skips exactly that many, then names the spent budget.
BOOST_AUTO_TEST_CASE(skip_budget_fails_the_item_past_max_failures) {
    ferry::detail::failure_budget budget(skipping(2));
    BOOST_TEST(!budget.failed("a").fail);
    BOOST_TEST(!budget.failed("b").fail);
    const auto v = budget.failed("c");
    BOOST_TEST(v.fail);
    BOOST_TEST(v.reason == "failure budget of 2 exhausted; last error: c");
}

// Protects: a rate budget is judged only over a full window, and successes count in it.
BOOST_AUTO_TEST_CASE(rate_budget_is_judged_over_a_full_window) {
    ferry::detail::failure_budget budget(skipping(0, 0.5, 4));
    BOOST_TEST(!budget.failed("a").fail);  // 1 of 1, the window not full
    BOOST_TEST(!budget.failed("b").fail);  // 2 of 2
    budget.succeeded();
    budget.succeeded();                    // full: 2 of 4 failed, not over 50%
    BOOST_TEST(!budget.failed("c").fail);  // the ring drops a failure: 2 of 4 again
    BOOST_TEST(!budget.failed("d").fail);  // and the other one: 2 of 4
    const auto v = budget.failed("e");     // a success dropped: 3 of 4
    BOOST_TEST(v.fail);
    BOOST_TEST(v.reason ==
               "failure rate budget of 50% exhausted (3 of the last 4 items failed); last "
               "error: e");
}

// Protects: a recorded failure keeps its stage, item, epoch, input and the error's code.
BOOST_AUTO_TEST_CASE(records_a_failure_with_its_code_and_epoch) {
    failure_recorder rec(quiet_options());
    const auto cause = std::make_exception_ptr(ferry::error(ferry::errc::timeout, "too slow"));
    rec.record("decode", 7, 1, 3, cause, "too slow", ferry::log_level::warning, "a line", "a.jpg");
    const auto fs = rec.failures();
    BOOST_TEST_REQUIRE(fs.size() == 1u);
    BOOST_TEST(fs[0].stage == "decode");
    BOOST_TEST(fs[0].item == 7u);
    BOOST_TEST(fs[0].epoch == 3u);
    BOOST_TEST(fs[0].input == "a.jpg");
    BOOST_TEST(fs[0].message == "too slow");
    BOOST_TEST((fs[0].code == ferry::errc::timeout));
}

// Protects: an epoch over max_epoch_failure_rate ends with an error naming the stage most of
// its failures came from; at or under the rate, or with the check off, it does not.
BOOST_AUTO_TEST_CASE(epoch_failure_names_the_stage_most_failed_in) {
    failure_recorder rec(quiet_options());
    const auto cause = std::make_exception_ptr(std::runtime_error("bad"));
    rec.record("fetch", 1, 1, 0, cause, "bad", ferry::log_level::warning, {});
    rec.record("decode", 2, 1, 0, cause, "bad", ferry::log_level::warning, {});
    rec.record("decode", 3, 1, 0, cause, "bad", ferry::log_level::warning, {});
    rec.record("decode", 4, 1, 1, cause, "bad", ferry::log_level::warning, {});  // epoch 1
    BOOST_TEST(!rec.epoch_failure(0.5, 0, 6, 3));
    BOOST_TEST(!rec.epoch_failure(1.0, 0, 4, 3));
    BOOST_TEST(!rec.epoch_failure(0.5, 0, 0, 0));
    const auto e = rec.epoch_failure(0.5, 0, 4, 3);
    BOOST_TEST_REQUIRE(static_cast<bool>(e));
    const std::string text = message_of(e);
    BOOST_TEST(text.find("epoch 0: 3 of 4 items failed (75%)") != std::string::npos, text);
    BOOST_TEST(text.find("most in stage 'decode' (2)") != std::string::npos, text);
    BOOST_TEST(text.find("the last: stage 'decode' on item 3: bad") != std::string::npos, text);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
