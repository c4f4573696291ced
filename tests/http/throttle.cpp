// SPDX-License-Identifier: Apache-2.0
/// \file
/// read_url under a store that throttles: a server that answers 503 SlowDown whenever more than
/// 4 requests are in flight. With adaptation (the default) every item arrives once and the server
/// sees far fewer rejected requests than without it, and http_hosts() shows a limit near 4.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../support/http_server.hpp"

using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;

namespace {

constexpr int capacity = 4;
constexpr int items = 120;

struct throttling_server {
    std::atomic<int> in_flight{0};
    std::atomic<int> rejected{0};
    std::atomic<int> served{0};
    http_server server{[this](const http_request& r) {
        const int now = ++in_flight;
        if (now > capacity) {
            --in_flight;
            ++rejected;
            return http_response{.status = 503, .body = "<Error><Code>SlowDown</Code></Error>"};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        --in_flight;
        ++served;
        return http_response{.body = r.target};
    }};
};

/// Runs `items` fetches at I/O concurrency 32 with a patient retry policy; returns the bodies.
/// `throttled` gets the fetch stage's "throttled" counter (`this_call::count`; 0 when absent).
std::multiset<std::string> run(throttling_server& s, bool adaptive, std::uint64_t& throttled) {
    std::vector<std::string> urls;
    for (int i = 0; i < items; ++i) urls.push_back(s.server.url("/item/" + std::to_string(i)));
    auto pipe = ferry::from(urls)
                    .map(
                        [adaptive](const std::string& u) {
                            const auto b = ferry::ops::read_url(u, {.adaptive = adaptive});
                            return std::string(reinterpret_cast<const char*>(b.data()), b.size());
                        },
                        {.concurrency = 32,
                         .on_error = ferry::retry{.attempts = 50,
                                                  .backoff = std::chrono::milliseconds(5),
                                                  .multiplier = 1.5,
                                                  .then = ferry::skip,
                                                  .jitter = 0.5},
                         .executor = ferry::io})
                    .build({.logger = [](ferry::log_level, std::string_view) {}});
    std::multiset<std::string> got;
    for (auto& b : pipe) got.insert(b);
    throttled = 0;
    const ferry::pipeline_stats stats = pipe.stats();
    for (const auto& [name, n] : stats.stages.at(1).counters) {
        if (name == "throttled") throttled = n;
    }
    return got;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http)

// Adapting to 503s, the client settles near what the server takes: every item once, and fewer
// rejections (counted by the server) than the same job sends without adapting.
BOOST_AUTO_TEST_CASE(a_throttled_host_gets_fewer_requests) {
    throttling_server adaptive;
    std::uint64_t counted = 0;
    const auto got = run(adaptive, true, counted);
    // The stage's stats count the 503s its calls met, as the server sent them (adapting or not).
    BOOST_TEST(counted == static_cast<std::uint64_t>(adaptive.rejected.load()));
    BOOST_TEST(counted > 0U);
    BOOST_TEST(got.size() == static_cast<std::size_t>(items));
    BOOST_TEST(std::set<std::string>(got.begin(), got.end()).size() ==
               static_cast<std::size_t>(items));
    throttling_server plain;
    std::uint64_t counted_plain = 0;
    const auto got_plain = run(plain, false, counted_plain);
    BOOST_TEST(counted_plain == static_cast<std::uint64_t>(plain.rejected.load()));
    BOOST_TEST(got_plain.size() == static_cast<std::size_t>(items));
    BOOST_TEST_MESSAGE("rejected: adaptive " << adaptive.rejected.load() << ", plain "
                                             << plain.rejected.load());
    BOOST_TEST(adaptive.rejected.load() * 2 < plain.rejected.load());
    bool seen = false;
    for (const auto& h : ferry::ops::http_hosts()) {
        if (h.host != adaptive.server.url("")) continue;
        seen = true;
        BOOST_TEST(h.limit >= 1);
        BOOST_TEST(h.limit <= 2 * capacity);
        BOOST_TEST(h.in_flight == 0);
        BOOST_TEST(h.throttled == static_cast<std::uint64_t>(adaptive.rejected.load()));
        BOOST_TEST(h.requests == static_cast<std::uint64_t>(adaptive.rejected.load() + items));
    }
    BOOST_TEST(seen);
}

BOOST_AUTO_TEST_SUITE_END()
