// SPDX-License-Identifier: Apache-2.0
/// \file
/// Stats and logs: the rate-limited failure log a pipeline's `logger` receives.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ferry_test;

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(stats)

// A custom logger receives a line for each skipped item, naming stage, item and cause.
BOOST_AUTO_TEST_CASE(logger_receives_failure_lines) {
    log_capture log;
    auto p = ferry::from(iota(30))
                 .map(
                     [](int x) {
                         if (x % 10 == 4) throw bad_record("crc mismatch");
                         return x;
                     },
                     {.name = "decode", .on_error = ferry::skip})
                 .build({.threads = 2, .logger = log.sink()});
    BOOST_TEST(drain(p).size() == 27u);
    std::vector<std::string> failure_lines;
    for (const auto& [level, line] : log.lines()) {
        if (line.find("crc mismatch") != std::string::npos) {
            BOOST_TEST((level == ferry::log_level::warning));
            failure_lines.push_back(line);
        }
    }
    const std::vector<std::string> want{"stage 'decode' skipped item 4: crc mismatch",
                                        "stage 'decode' skipped item 14: crc mismatch",
                                        "stage 'decode' skipped item 24: crc mismatch"};
    BOOST_TEST(failure_lines == want, boost::test_tools::per_element());
}

// A failure that ends the pipeline is logged at error level.
BOOST_AUTO_TEST_CASE(logger_receives_the_fatal_failure_as_an_error) {
    log_capture log;
    auto p = ferry::from(iota(30))
                 .map(
                     [](int x) {
                         if (x == 4) throw bad_record("crc mismatch");
                         return x;
                     },
                     {.name = "decode"})
                 .build({.threads = 2, .logger = log.sink()});
    BOOST_CHECK_THROW((void)drain(p), ferry::stage_error);
    const auto lines = log.lines();
    BOOST_TEST(std::count_if(lines.begin(), lines.end(), [](const auto& l) {
                   return l.first == ferry::log_level::error &&
                          l.second == "stage 'decode' failed on item 4: crc mismatch";
               }) == 1);
}

// A burst of 1000 failures inside one window logs exactly log_burst lines, then, when the epoch
// ends, one summary with the exact count left out; a second epoch in the same window prints no
// new lines (the burst is per window, not per epoch), only its own summary.
BOOST_AUTO_TEST_CASE(logger_rate_limits_a_burst_and_summarizes) {
    log_capture log;
    auto p = ferry::from(iota(2000))
                 .map(
                     [](int x) {
                         if (x % 2 == 1) throw bad_record("bad");
                         return x;
                     },
                     {.concurrency = 4, .name = "decode", .on_error = ferry::skip})
                 .build({.threads = 2,
                         .logger = log.sink(),
                         .log_burst = 3,
                         .log_window = std::chrono::minutes(10)});
    const auto is_skip_line = [](const std::pair<ferry::log_level, std::string>& l) {
        return l.first == ferry::log_level::warning &&
               l.second.starts_with("stage 'decode' skipped item ");
    };
    BOOST_TEST(drain(p).size() == 1000u);
    BOOST_TEST(p.failures().size() == 1000u);
    auto lines = log.lines();
    BOOST_REQUIRE(lines.size() == 4u);
    BOOST_TEST(std::all_of(lines.begin(), lines.begin() + 3, is_skip_line));
    BOOST_TEST((lines[3].first == ferry::log_level::warning));
    BOOST_TEST(lines[3].second ==
               "stage 'decode': 997 more failures not shown (see pipeline::failures())");

    BOOST_TEST(drain(p).size() == 1000u);
    lines = log.lines();
    BOOST_REQUIRE(lines.size() == 5u);
    BOOST_TEST((lines[4].first == ferry::log_level::warning));
    BOOST_TEST(lines[4].second ==
               "stage 'decode': 1000 more failures not shown (see pipeline::failures())");
}

// A logger that throws does not take the pipeline down.
BOOST_AUTO_TEST_CASE(throwing_logger_is_ignored) {
    auto p = ferry::from(iota(50))
                 .map(
                     [](int x) {
                         if (x % 5 == 0) throw bad_record("bad");
                         return x;
                     },
                     {.on_error = ferry::skip})
                 .build({.threads = 2, .logger = [](ferry::log_level, std::string_view) {
                             throw std::runtime_error("log sink full");
                         }});
    BOOST_TEST(drain(p).size() == 40u);
    BOOST_TEST(p.failures().size() == 10u);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
