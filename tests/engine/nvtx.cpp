// SPDX-License-Identifier: Apache-2.0
/// \file
/// NVTX ranges (pipeline_options::nvtx), read through the observer that sees what a run emits:
/// one range per call of the source and of each map and filter, named by the stage, with the
/// item's position, opened and closed on the thread that runs the call; the consumer's waits as
/// ranges of their own; none with nvtx = false.

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ferry/detail/range_observer.hpp"
#include "support.hpp"

using namespace ferry_test;

namespace nvtx_test {

/// What the observer saw: per stage name, the positions of the ranges opened; and whether every
/// thread closed its ranges in the reverse order it opened them, all of them.
struct seen_ranges {
    std::mutex mutex;
    std::map<std::string, std::multiset<std::uint64_t>> opened;
    std::map<std::thread::id, std::vector<std::string>> open_now;
    bool nested = true;

    void take(const ferry::detail::range_event& e) {
        const std::lock_guard lock(mutex);
        auto& stack = open_now[std::this_thread::get_id()];
        if (e.begin) {
            opened[std::string(e.name)].insert(e.position);
            stack.emplace_back(e.name);
        } else if (stack.empty() || stack.back() != e.name) {
            nested = false;
        } else {
            stack.pop_back();
        }
    }
    bool all_closed() {
        const std::lock_guard lock(mutex);
        for (const auto& [id, stack] : open_now) {
            if (!stack.empty()) return false;
        }
        return true;
    }
};

/// Observes the ranges of the pipelines built while it lives.
struct observing {
    seen_ranges seen;
    observing() {
        ferry::detail::observe_ranges(
            [this](const ferry::detail::range_event& e) { seen.take(e); });
    }
    ~observing() { ferry::detail::observe_ranges({}); }
    observing(const observing&) = delete;
    observing& operator=(const observing&) = delete;
};

std::multiset<std::uint64_t> positions(std::uint64_t n) {
    std::multiset<std::uint64_t> out;
    for (std::uint64_t i = 0; i < n; ++i) out.insert(i);
    return out;
}

}  // namespace nvtx_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(nvtx)
using namespace nvtx_test;

BOOST_AUTO_TEST_CASE(each_call_is_a_range_named_by_its_stage) {
    observing o;
    {
        auto p = ferry::from(iota(40))
                     .map(
                         [](int x) {
                             std::this_thread::sleep_for(std::chrono::microseconds(300));
                             return x;
                         },
                         {.concurrency = 3, .name = "decode"})
                     .filter([](int x) { return x % 4 != 0; }, {.name = "keep"})
                     .map([](int x) { return x; },
                          {.concurrency = 2, .name = "upload", .executor = ferry::io})
                     .batch(4)
                     .build({.threads = 2});
        BOOST_TEST(drain(p).size() == 8U);  // 30 kept, in batches of 4 (one of 2)
    }
    auto& s = o.seen;
    BOOST_TEST(s.nested);
    BOOST_TEST(s.all_closed());
    BOOST_TEST((s.opened["decode"] == positions(40)));
    BOOST_TEST((s.opened["keep"] == positions(40)));
    std::multiset<std::uint64_t> kept;
    for (std::uint64_t i = 0; i < 40; ++i) {
        if (i % 4 != 0) kept.insert(i);
    }
    BOOST_TEST((s.opened["upload"] == kept));
    // The source's calls: one per item, and the one that finds the epoch's end.
    BOOST_TEST(s.opened["source"].size() == 41U);
    BOOST_TEST(s.opened["source"].count(39) == 1U);
    // The consumer waited for the first batch at least.
    BOOST_TEST(s.opened["waiting for the pipeline"].size() >= 1U);
    // Batching calls no user code: no range of its own.
    BOOST_TEST(s.opened.size() == 5U);
}

BOOST_AUTO_TEST_CASE(none_with_nvtx_off) {
    observing o;
    {
        auto p = ferry::from(iota(10))
                     .map([](int x) { return x; }, {.name = "decode"})
                     .build({.nvtx = false});
        BOOST_TEST(drain(p).size() == 10U);
    }
    BOOST_TEST(o.seen.opened.empty());
}

// A call that throws closes its range too, and each attempt of a retried call is one.
BOOST_AUTO_TEST_CASE(failed_calls_close_their_ranges) {
    observing o;
    {
        auto p = ferry::from(iota(10))
                     .map(
                         [](int x) {
                             if (x == 3) throw ferry::decode_error("bad");
                             return x;
                         },
                         {.name = "decode", .on_error = ferry::skip})
                     .build({.logger = quiet});
        BOOST_TEST(drain(p).size() == 9U);
    }
    BOOST_TEST(o.seen.nested);
    BOOST_TEST(o.seen.all_closed());
    BOOST_TEST((o.seen.opened["decode"] == positions(10)));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
