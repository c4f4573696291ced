// SPDX-License-Identifier: Apache-2.0
/// \file
/// read_url under a store that throttles: a server that answers 503 SlowDown whenever more than
/// 4 requests are in flight. With adaptation (the default) every item arrives once and the server
/// sees far fewer rejected requests than without it, and http_hosts() shows a limit near 4. And
/// the AIMD rule itself, step by step: a burst of 503s halves the limit once, a second burst
/// halves it again, and answers that are not throttled raise it by 1/limit each.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <mutex>
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

/// The limit `http_hosts()` shows for `server`'s host; -1 when the host is not listed.
int limit_of(const http_server& server) {
    for (const auto& h : ferry::ops::http_hosts()) {
        if (h.host == server.url("")) return h.limit;
    }
    return -1;
}

// AIMD step by step, with bursts the server holds until all their requests have arrived: 16
// requests answered 503 together halve the limit once (to 8, not 16 halvings), the next burst of
// 8 halves it to 4, and 24 answers that are not throttled then raise it by 1/limit each.
BOOST_AUTO_TEST_CASE(aimd_halves_once_per_burst_and_recovers) {
    std::mutex m;
    std::condition_variable arrived;
    int waiting = 0;
    int burst = 0;  // requests to hold until this many have arrived; 0: answer 200 at once
    http_server server([&](const http_request& r) {
        std::unique_lock lock(m);
        if (burst == 0) return http_response{.body = r.target};
        ++waiting;
        arrived.notify_all();
        const bool full =
            arrived.wait_for(lock, std::chrono::seconds(30), [&] { return waiting >= burst; });
        return http_response{.status = full ? 503 : 500, .body = "<Error><Code>SlowDown</Code>"};
    });
    const auto throttled_burst = [&](int n) {
        {
            const std::lock_guard lock(m);
            burst = n;
            waiting = 0;
        }
        std::vector<std::thread> calls;
        std::atomic<int> refused{0};
        for (int i = 0; i < n; ++i) {
            calls.emplace_back([&, i] {
                try {
                    (void)ferry::ops::read_url(server.url("/b/" + std::to_string(i)));
                } catch (const ferry::http_error& e) {
                    if (e.status() == 503) ++refused;
                }
            });
        }
        for (auto& t : calls) t.join();
        BOOST_TEST_REQUIRE(refused.load() == n);
    };
    BOOST_TEST(limit_of(server) == -1);  // never seen: no limit yet
    throttled_burst(16);
    BOOST_TEST(limit_of(server) == 8);  // from the 16 in flight, halved once for the burst
    throttled_burst(8);
    BOOST_TEST(limit_of(server) == 4);
    {
        const std::lock_guard lock(m);
        burst = 0;
    }
    double want = 4;
    for (int i = 0; i < 24; ++i) {
        BOOST_TEST(ferry::ops::read_url(server.url("/ok")).size() == 3U);
        want += 1.0 / want;
        BOOST_TEST(limit_of(server) == static_cast<int>(std::floor(want)), "after answer " << i);
    }
    BOOST_TEST(limit_of(server) >= 8);  // recovered to where the first burst left it
}

BOOST_AUTO_TEST_SUITE_END()
