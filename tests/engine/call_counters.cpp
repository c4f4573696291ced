// SPDX-License-Identifier: Apache-2.0
/// \file
/// What a stage's calls count about themselves: results reported truncated
/// (`this_call::note_truncated`) and counters by name (`this_call::count`), in `stage_stats` and
/// on the stage's line of the printed stats; and the share of the pipeline's threads a call may
/// use (`this_call::cpu_share`).
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support.hpp"

using namespace ferry_test;

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(call_counters)

// Results a call reports truncated (this_call::note_truncated) are counted for its stage, with
// every executor and with a timeout, and named in the printed stats; outside a call nothing
// is counted.
BOOST_AUTO_TEST_CASE(truncated_results_are_counted_per_stage) {
    ferry::this_call::note_truncated();  // no stage call: ignored
    auto note_every_third = [](int x) {
        if (x % 3 == 0) ferry::this_call::note_truncated();
        return x;
    };
    auto p = ferry::from(iota(90))
                 .map(note_every_third, 4)
                 .map(note_every_third, {.concurrency = 2, .executor = ferry::io})
                 .map(note_every_third, {.timeout = std::chrono::seconds(30)})
                 .map([](int x) { return x; })
                 .build({.threads = 2});
    BOOST_TEST(drain(p).size() == 90u);
    const auto s = p.stats();
    BOOST_TEST(s.stages.at(0).truncated == 0u);  // source
    BOOST_TEST(s.stages.at(1).truncated == 30u);
    BOOST_TEST(s.stages.at(2).truncated == 30u);
    BOOST_TEST(s.stages.at(3).truncated == 30u);
    BOOST_TEST(s.stages.at(4).truncated == 0u);
    std::ostringstream text;
    text << s;
    BOOST_TEST(text.str().find("stage 'map#1': 30 results truncated") != std::string::npos,
               text.str());
    BOOST_TEST(text.str().find("stage 'map#4'") == std::string::npos, text.str());
}

// Counters by name: summed per stage over every call (compute, I/O, timed, map_async, the
// source), in the order first counted, printed on the stage's line; outside a call nothing.
BOOST_AUTO_TEST_CASE(named_counts_are_summed_per_stage_and_printed) {
    ferry::this_call::count("outside");  // no stage call: ignored
    auto count_kinds = [](int x) {
        ferry::this_call::count(x % 2 == 0 ? "even" : "odd");
        if (x % 10 == 0) ferry::this_call::count("tens", 2);
        return x;
    };
    int next = 0;
    auto p = ferry::from([&]() -> std::optional<int> {
                 if (next == 100) return std::nullopt;
                 ferry::this_call::count("pulled");
                 return next++;
             })
                 .map(count_kinds, 4)
                 .map(count_kinds, {.concurrency = 2, .executor = ferry::io})
                 .map(count_kinds, {.timeout = std::chrono::seconds(30)})
                 .map_async([](int x) {
                     std::promise<int> promise;
                     promise.set_value(x);
                     return promise.get_future();
                 })
                 .map([](int x) { return x; })
                 .build({.threads = 2});
    BOOST_TEST(drain(p).size() == 100u);
    const auto s = p.stats();
    using counts = std::vector<std::pair<std::string, std::uint64_t>>;
    BOOST_TEST((s.stages.at(0).counters == counts{{"pulled", 100}}));
    for (const std::size_t i : {1U, 2U, 3U}) {
        auto c = s.stages.at(i).counters;
        // First counted: item 0 (even, tens) in order; the rest may interleave at concurrency.
        std::sort(c.begin(), c.end());
        BOOST_TEST((c == counts{{"even", 50}, {"odd", 50}, {"tens", 20}}), "stage " << i);
    }
    BOOST_TEST(s.stages.at(4).counters.empty());
    BOOST_TEST(s.stages.at(5).counters.empty());
    std::ostringstream text;
    text << s;
    BOOST_TEST(text.str().find("stage 'source': pulled 100") != std::string::npos, text.str());
    BOOST_TEST(text.str().find("even 50") != std::string::npos, text.str());
    BOOST_TEST(text.str().find("tens 20") != std::string::npos, text.str());
    BOOST_TEST(text.str().find("outside") == std::string::npos, text.str());
    BOOST_TEST(text.str().find("stage 'map#5'") == std::string::npos, text.str());
}

// A call's share of the pipeline's threads (this_call::cpu_share, what video decoders take as
// their thread count) is the threads over the stage's concurrency, whatever runs the call: the
// arena, the I/O threads, or either with a timeout; outside a call it is 0.
BOOST_AUTO_TEST_CASE(a_call_gets_its_share_of_the_threads_with_every_executor) {
    BOOST_TEST(ferry::this_call::cpu_share() == 0);
    const auto share = [](int) { return ferry::this_call::cpu_share(); };
    const auto timeout = std::chrono::seconds(30);
    const std::vector<std::pair<std::string, ferry::stage_options>> stages{
        {"arena, concurrency 1", {.concurrency = 1}},
        {"arena, concurrency 2", {.concurrency = 2}},
        {"I/O, concurrency 1", {.concurrency = 1, .executor = ferry::io}},
        {"arena, concurrency 1, timeout", {.concurrency = 1, .timeout = timeout}},
        {"arena, concurrency 2, timeout", {.concurrency = 2, .timeout = timeout}},
        {"I/O, concurrency 1, timeout",
         {.concurrency = 1, .executor = ferry::io, .timeout = timeout}},
    };
    const std::vector<int> want{2, 1, 2, 2, 1, 2};
    for (std::size_t i = 0; i < stages.size(); ++i) {
        BOOST_TEST_CONTEXT(stages[i].first) {
            auto p = ferry::from(iota(8)).map(share, stages[i].second).build({.threads = 2});
            const auto got = drain(p);
            BOOST_TEST(got == std::vector<int>(8, want[i]), boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
