// SPDX-License-Identifier: Apache-2.0
/// \file
/// read_url in pipelines, as a loader uses it: many concurrent fetches on I/O threads delivered
/// in order over few connections, a flaky server made whole by the stage's retry policy, and
/// failed URLs accounted for under skip.
#include <atomic>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "pipeline_support.hpp"

namespace bdata = boost::unit_test::data;
using ferry_test::as_string;
using ferry_test::check_accounting;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using namespace std::chrono_literals;

// Named, not anonymous: data test cases are templates with external linkage.
namespace http_pipeline_test {

const ferry::logger quiet = [](ferry::log_level, std::string_view) {};

/// The body served for item `i`: its own size (a few bytes to ~60 KB) and contents.
std::string body_of(std::size_t i) {
    std::string s = "item " + std::to_string(i) + ":";
    const std::size_t n = (i * 7919) % 60000;
    for (std::size_t k = 0; k < n; ++k) s += static_cast<char>((i + k * 31) & 0xFF);
    return s;
}

/// `/item/<i>` -> i.
std::size_t index_of(const std::string& target) {
    return std::stoul(target.substr(target.rfind('/') + 1));
}

std::vector<std::string> urls(const http_server& server, std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(server.url("/item/" + std::to_string(i)));
    return out;
}

const std::vector<int> io_concurrencies{1, 8};

}  // namespace http_pipeline_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(pipeline)
using namespace http_pipeline_test;

// 200 URLs fetched by `conc` I/O threads arrive in source order with the right bytes, and the
// per-thread handles reuse keep-alive connections: at most one connection per fetching thread.
BOOST_DATA_TEST_CASE(concurrent_fetches_arrive_in_order_over_few_connections,
                     bdata::make(io_concurrencies), conc) {
    http_server server(
        [](const http_request& r) { return http_response{.body = body_of(index_of(r.target))}; });
    const std::vector<std::string> items = urls(server, 200);
    auto p = ferry::from(items)
                 .map(ferry::ops::read_url,
                      {.concurrency = conc, .name = "fetch", .executor = ferry::io})
                 .build({.threads = 2, .logger = quiet});
    std::size_t i = 0;
    std::size_t wrong = 0;
    for (const ferry::bytes& b : p) {
        if (as_string(b) != body_of(i)) ++wrong;
        ++i;
    }
    BOOST_TEST(i == 200u);
    BOOST_TEST(wrong == 0u);
    BOOST_TEST(server.requests() == 200u);
    BOOST_TEST(server.connections() <= static_cast<std::uint64_t>(conc));
    BOOST_TEST_MESSAGE("io concurrency " << conc << ": " << server.connections()
                                         << " connections for 200 requests");
    const auto s = p.stats();
    BOOST_TEST(s.delivered == 200u);
    BOOST_TEST(s.failed == 0u);
    check_accounting(s);
}

// A server that fails every other request for each URL (503 first, then 200): a stage with
// ferry::retry delivers every item, and stats() shows one retry per item.
BOOST_AUTO_TEST_CASE(retry_policy_rides_out_flaky_server) {
    std::mutex mutex;
    std::map<std::string, int> attempts;
    http_server server([&](const http_request& r) {
        int n;
        {
            std::lock_guard lock(mutex);
            n = attempts[r.target]++;
        }
        if (n % 2 == 0) return http_response{.status = 503, .body = "try again"};
        return http_response{.body = body_of(index_of(r.target))};
    });
    const std::vector<std::string> items = urls(server, 60);
    auto p =
        ferry::from(items)
            .map(ferry::ops::read_url, {.concurrency = 8,
                                        .name = "fetch",
                                        .on_error = ferry::retry{.attempts = 3, .backoff = 1ms},
                                        .executor = ferry::io})
            .build({.threads = 2, .logger = quiet});
    std::size_t i = 0;
    std::size_t wrong = 0;
    for (const ferry::bytes& b : p) {
        if (as_string(b) != body_of(i)) ++wrong;
        ++i;
    }
    BOOST_TEST(i == 60u);
    BOOST_TEST(wrong == 0u);
    BOOST_TEST(p.failures().empty());
    const auto s = p.stats();
    BOOST_TEST(s.stages.at(1).name == "fetch");
    BOOST_TEST(s.stages.at(1).retries == 60u);
    BOOST_TEST(s.stages.at(1).failed == 0u);
    BOOST_TEST(s.delivered == 60u);
    BOOST_TEST(server.requests() == 120u);
    check_accounting(s);
}

// ferry::retry asks again only where an answer can change: a 404 or a 403 is asked for once, a
// 503 or a 429 `attempts` times; every URL ends delivered or failed, with http_error's status.
BOOST_AUTO_TEST_CASE(retry_does_not_ask_again_for_what_the_server_does_not_have) {
    http_server server([](const http_request& r) {
        switch (index_of(r.target) % 5) {
            case 1:
                return http_response{.status = 404};
            case 2:
                return http_response{.status = 403};
            case 3:
                return http_response{.status = 503, .body = "try again"};
            case 4:
                return http_response{.status = 429};
            default:
                return http_response{.body = body_of(index_of(r.target))};
        }
    });
    const std::vector<std::string> items = urls(server, 20);
    auto p =
        ferry::from(items)
            .map(ferry::ops::read_url, {.concurrency = 4,
                                        .name = "fetch",
                                        .on_error = ferry::retry{.attempts = 3,
                                                                 .backoff = 1ms,
                                                                 .then = ferry::error_action::skip},
                                        .executor = ferry::io})
            // Most items fail on purpose (404s and 503s): the epoch must end, not raise the
            // "most items failed" error.
            .build({.threads = 2, .logger = quiet, .max_epoch_failure_rate = 1.0});
    std::size_t delivered = 0;
    for (const ferry::bytes& b : p) {
        BOOST_TEST(as_string(b) == body_of(5 * delivered));
        ++delivered;
    }
    BOOST_TEST(delivered == 4u);
    // 4 good + 4 x 404 + 4 x 403 asked once, 4 x 503 + 4 x 429 asked three times.
    BOOST_TEST(server.requests() == 4u + 4u + 4u + 3u * 8u);
    const auto s = p.stats();
    BOOST_TEST(s.stages.at(1).retries == 16u);
    BOOST_TEST(s.failed == 16u);
    check_accounting(s);
    for (const auto& f : p.failures()) {
        const auto kind = f.item % 5;
        const char* want = kind == 1   ? "HTTP 404"
                           : kind == 2 ? "HTTP 403"
                           : kind == 3 ? "HTTP 503"
                                       : "HTTP 429";
        BOOST_TEST(f.message.find(want) != std::string::npos, f.message);
    }
}

// http_error says which failures can pass, by status and by what went wrong.
BOOST_AUTO_TEST_CASE(http_errors_say_whether_they_can_pass) {
    http_server server([](const http_request& r) {
        const std::size_t i = index_of(r.target);
        if (i == 0) return http_response{.status = 404};
        if (i == 1) return http_response{.status = 500};
        if (i == 2) return http_response{.status = 408};
        return http_response{.body = std::string(5000, 'x')};
    });
    const std::vector<std::string> u = urls(server, 4);
    // "transient", "permanent", or "no error".
    auto kind_of = [](const std::string& url, const ferry::http_options& o = {}) -> std::string {
        try {
            (void)ferry::ops::read_url(url, o);
        } catch (const ferry::http_error& e) {
            return e.transient() ? "transient" : "permanent";
        }
        return "no error";
    };
    BOOST_TEST(kind_of(u[0]) == "permanent");  // 404
    BOOST_TEST(kind_of(u[1]) == "transient");  // 500
    BOOST_TEST(kind_of(u[2]) == "transient");  // 408
    BOOST_TEST(kind_of(u[3]) == "no error");
    BOOST_TEST(kind_of(u[3], {.max_bytes = 100}) == "permanent");
    BOOST_TEST(kind_of("file:///nonexistent/ferry-test") == "permanent");
    BOOST_TEST(kind_of("nosuchscheme://x") == "permanent");
}

// Under ferry::skip, URLs that fail (404, a truncated body, a refused port) are in failures()
// with their item, stage and a message naming the URL; the rest are delivered in order.
BOOST_AUTO_TEST_CASE(skip_accounts_for_every_failed_url) {
    http_server server([](const http_request& r) {
        const std::size_t i = index_of(r.target);
        if (i % 10 == 3) return http_response{.status = 404};
        if (i % 10 == 7) {
            return http_response{
                .body = "cut", .content_length = 100, .after = http_response::then::close};
        }
        return http_response{.body = body_of(i)};
    });
    std::vector<std::string> items = urls(server, 50);
    const std::string refused =
        "http://127.0.0.1:" + std::to_string(ferry_test::closed_port()) + "/item/49";
    items[49] = refused;
    auto p =
        ferry::from(items)
            .map(
                ferry::ops::read_url,
                {.concurrency = 4, .name = "fetch", .on_error = ferry::skip, .executor = ferry::io})
            .build({.threads = 2, .logger = quiet});
    std::vector<std::string> got;
    for (const ferry::bytes& b : p) got.push_back(as_string(b));
    std::vector<std::string> want;
    for (std::size_t i = 0; i < 49; ++i) {
        if (i % 10 != 3 && i % 10 != 7) want.push_back(body_of(i));
    }
    BOOST_TEST(got.size() == want.size());
    BOOST_TEST((got == want));

    const std::vector<ferry::failure> failures = p.failures();
    BOOST_TEST_REQUIRE(failures.size() == 11u);  // 5 x 404, 5 truncated, 1 refused
    for (const ferry::failure& f : failures) {
        BOOST_TEST(f.stage == "fetch");
        BOOST_TEST((f.code == ferry::errc::io));
        BOOST_TEST(f.message.find(items.at(f.item)) != std::string::npos, f.message);
        const bool why = (f.item % 10 == 3 && f.message.find("HTTP 404") != std::string::npos) ||
                         (f.item % 10 == 7 && f.message.find("truncated") != std::string::npos) ||
                         f.item == 49;
        BOOST_TEST(why, "item " << f.item << ": " << f.message);
    }
    const auto s = p.stats();
    BOOST_TEST(s.produced == 50u);
    BOOST_TEST(s.delivered == 39u);
    BOOST_TEST(s.failed == 11u);
    check_accounting(s);
}

// A frozen server (it sends half a body, then nothing): stop() reaches the read in progress
// through curl's progress callback, and the loop and destruction end long before the read's own
// 30 s timeout.
BOOST_AUTO_TEST_CASE(stop_cancels_a_read_from_a_frozen_server) {
    http_server server([](const http_request&) {
        return http_response{.body = std::string(100000, 'z'),
                             .send_only = 1000,
                             .after = http_response::then::stall};
    });
    std::atomic<bool> started{false};
    std::string failure;
    const auto t0 = std::chrono::steady_clock::now();
    {
        auto p =
            ferry::from(std::vector<std::string>{server.url("/frozen")})
                .map(
                    [&](const std::string& url) {
                        started = true;
                        return ferry::ops::read_url(url, {.timeout = 30s, .low_speed_time = 0s});
                    },
                    {.name = "read", .on_error = ferry::skip, .executor = ferry::io})
                .build({.threads = 1, .logger = quiet, .max_epoch_failure_rate = 1.0});
        std::thread stopper([&] {
            while (!started) std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(100ms);  // the read is waiting for bytes now
            p.stop();
        });
        for (const auto& b : p) (void)b;
        stopper.join();
        const auto failures = p.failures();
        if (!failures.empty()) failure = failures.front().message;
    }
    const auto took = std::chrono::steady_clock::now() - t0;
    BOOST_TEST(took < 10s);  // the read's own timeout is 30 s
    if (!failure.empty()) {
        BOOST_TEST(failure.find("cancelled: the pipeline is stopping") != std::string::npos,
                   failure);
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
