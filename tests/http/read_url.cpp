// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::ops::read_url on its own: exact bytes, typed errors that name the URL and the cause,
/// bounded time on stalls, size limits, keep-alive reuse, and a handle that survives failures.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "../support/temp_folder.hpp"

using ferry_test::as_string;
using ferry_test::contains;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using ferry_test::random_body;
using steady = std::chrono::steady_clock;

namespace read_url_test {

/// Runs `f`, which must throw ferry::http_error; returns it.
template <typename F>
ferry::http_error expect_http_error(F&& f) {
    const auto e = ferry_test::expect_throw<ferry::http_error>(std::forward<F>(f));
    BOOST_REQUIRE(e.has_value());
    return *e;
}

double seconds_since(steady::time_point t0) {
    return std::chrono::duration<double>(steady::now() - t0).count();
}

/// What `f` writes to the process's stderr (file descriptor 2) while it runs.
template <typename F>
std::string capture_stderr(F&& f) {
    const ferry_test::temp_folder dir("ferry-stderr");
    const auto path = dir / "stderr.txt";
    std::fflush(stderr);
    const int saved = ::dup(2);
    const int file = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    ::dup2(file, 2);
    ::close(file);
    try {
        std::forward<F>(f)();
    } catch (...) {
        std::fflush(stderr);
        ::dup2(saved, 2);
        ::close(saved);
        throw;
    }
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    std::ifstream in(path);
    std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    return out;
}

}  // namespace read_url_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(read_url)
using namespace read_url_test;

// A 200 response's body arrives byte for byte: text, binary with NULs, several MB, empty.
BOOST_AUTO_TEST_CASE(returns_body_bytes_exactly) {
    const std::string binary = [] {
        std::string s;
        for (int i = 0; i < 512; ++i) s += static_cast<char>(i & 0xFF);
        return s;
    }();
    const std::string big = random_body(5 * 1024 * 1024 + 17, 7);
    http_server server([&](const http_request& r) {
        if (r.target == "/text") return http_response{.body = "hello, ferry\n"};
        if (r.target == "/binary") return http_response{.body = binary};
        if (r.target == "/big") return http_response{.body = big};
        if (r.target == "/empty") return http_response{};
        // No Content-Length: the body ends when the server closes.
        return http_response{.body = big.substr(0, 300000), .content_length = -2};
    });
    BOOST_TEST(as_string(ferry::ops::read_url(server.url("/text"))) == "hello, ferry\n");
    BOOST_TEST((as_string(ferry::ops::read_url(server.url("/binary"))) == binary));
    const ferry::bytes b = ferry::ops::read_url(server.url("/big"));
    BOOST_TEST(b.size() == big.size());
    BOOST_TEST((as_string(b) == big));
    BOOST_TEST(ferry::ops::read_url(server.url("/empty")).empty());
    BOOST_TEST((as_string(ferry::ops::read_url(server.url("/unsized"))) == big.substr(0, 300000)));
}

// 404 and 500 are http_errors (an io_error) naming the URL and the status; the reason phrase
// and the start of the server's error body are in the message.
BOOST_AUTO_TEST_CASE(error_status_is_typed_and_named) {
    http_server server([](const http_request& r) {
        if (r.target == "/missing.jpg") return http_response{.status = 404, .body = "no such key"};
        return http_response{.status = 500, .body = std::string(100000, 'x')};
    });
    const std::string missing = server.url("/missing.jpg");
    const ferry::http_error e404 = expect_http_error([&] { (void)ferry::ops::read_url(missing); });
    BOOST_TEST(e404.status() == 404);
    BOOST_TEST(e404.url() == missing);
    BOOST_TEST((e404.code() == ferry::errc::io));
    BOOST_TEST(contains(e404.what(), missing));
    BOOST_TEST(contains(e404.what(), "HTTP 404 Not Found"));
    BOOST_TEST(contains(e404.what(), "no such key"));

    // A large error body is not kept (only an excerpt), and the error is still the status.
    const std::string broken = server.url("/broken");
    const ferry::http_error e500 = expect_http_error([&] { (void)ferry::ops::read_url(broken); });
    BOOST_TEST(e500.status() == 500);
    BOOST_TEST(contains(e500.what(), "HTTP 500"));
    BOOST_TEST(std::string(e500.what()).size() < 600u);
    // The status wins over a size limit the error body exceeds.
    const ferry::http_error limited =
        expect_http_error([&] { (void)ferry::ops::read_url(broken, {.max_bytes = 1000}); });
    BOOST_TEST(limited.status() == 500);
    BOOST_TEST(contains(limited.what(), "HTTP 500"), limited.what());
    // Catchable as the io_error read_file throws.
    BOOST_CHECK_THROW((void)ferry::ops::read_url(missing), ferry::io_error);
}

// A body shorter than its Content-Length, then a close, is a truncation error, not short data.
BOOST_AUTO_TEST_CASE(short_body_is_truncation_error) {
    http_server server([](const http_request&) {
        return http_response{.body = std::string(5000, 'a'),
                             .content_length = 9000,
                             .after = http_response::then::close};
    });
    const std::string url = server.url("/short");
    const ferry::http_error e = expect_http_error([&] { (void)ferry::ops::read_url(url); });
    BOOST_TEST(contains(e.what(), "truncated"));
    BOOST_TEST(contains(e.what(), "5000 of 9000"));
    BOOST_TEST(contains(e.what(), url));
    BOOST_TEST(e.status() == 200);
}

// A server that stops sending mid-body fails the call by the low-speed rule (under 100 KB/s for
// 1 s here), and, with that rule off, by the total timeout: bounded time, never a hang.
BOOST_AUTO_TEST_CASE(stalled_body_fails_in_bounded_time) {
    http_server server([](const http_request&) {
        return http_response{.body = std::string(100000, 'z'),
                             .send_only = 1000,
                             .after = http_response::then::stall};
    });
    const std::string url = server.url("/stall");
    auto t0 = steady::now();
    ferry::http_error e = expect_http_error([&] {
        (void)ferry::ops::read_url(
            url, {.low_speed_limit = 100'000, .low_speed_time = std::chrono::seconds(1)});
    });
    BOOST_TEST(seconds_since(t0) < 10.0);
    BOOST_TEST(contains(e.what(), url));
    BOOST_TEST_MESSAGE("low-speed stall: " << e.what());

    t0 = steady::now();
    e = expect_http_error([&] {
        (void)ferry::ops::read_url(url, {.timeout = std::chrono::milliseconds(800),
                                         .low_speed_time = std::chrono::seconds(0)});
    });
    BOOST_TEST(seconds_since(t0) < 10.0);
    BOOST_TEST(contains(e.what(), "imed out"));
    BOOST_TEST_MESSAGE("total timeout: " << e.what());
}

// The defaults are the documented ones (ops/README.md's HTTP section): a loader's read that
// trickles in under 1 KiB/s for 30 s ends in an error instead of holding its thread for good.
BOOST_AUTO_TEST_CASE(defaults_end_a_trickle_instead_of_hanging) {
    const ferry::http_options defaults;
    BOOST_TEST(defaults.connect_timeout.count() == 10'000);
    BOOST_TEST(defaults.timeout.count() == 0);
    BOOST_TEST(defaults.low_speed_limit == 1024U);
    BOOST_TEST(defaults.low_speed_time.count() == 30);
    BOOST_TEST(defaults.max_bytes == std::uint64_t{1} << 30);
    BOOST_TEST(defaults.follow_redirects);
    BOOST_TEST(defaults.verify_tls);

    // 2 bytes a second, with the default limit and a 1 s window (30 s in a test is too long):
    // the read fails, long before the 15 s the whole body would take.
    http_server server([](const http_request&) {
        return http_response{.body = std::string(30, 'd'), .drip = std::chrono::milliseconds(500)};
    });
    const std::string url = server.url("/trickle");
    const ferry::http_error e = expect_http_error(
        [&] { (void)ferry::ops::read_url(url, {.low_speed_time = std::chrono::seconds(1)}); });
    BOOST_TEST(e.transient());
    BOOST_TEST(contains(e.what(), "read_url: '" + url +
                                      "': Operation too slow. Less than 1024 "
                                      "bytes/sec transferred the last 1 seconds"),
               e.what());
}

// verify_tls = false warns on stderr once per process, naming the first https host it was off
// for; later calls (other hosts too) and plain http stay quiet. The only case of the suite that
// turns verification off, since the warning is once per process.
BOOST_AUTO_TEST_CASE(verify_tls_off_warns_once_naming_the_host) {
    const std::uint16_t port = ferry_test::closed_port();
    const std::string first = "https://127.0.0.1:" + std::to_string(port) + "/a";
    const std::string second = "https://localhost:" + std::to_string(port) + "/b";
    const std::string said = capture_stderr([&] {
        for (const std::string& url : {first, first, second, first}) {
            (void)expect_http_error(
                [&] { (void)ferry::ops::read_url(url, {.verify_tls = false, .adaptive = false}); });
        }
    });
    const std::string expected =
        "ferry: warning: TLS certificates are not verified "
        "(http_options::verify_tls = false), first for https://127.0.0.1:" +
        std::to_string(port) +
        "; anyone on the network path can read and change what "
        "ferry fetches (said once per process)\n";
    BOOST_TEST(said == expected);
}

// max_bytes refuses a body announced larger (before reading it) and one that turns out larger
// while it is read (no Content-Length); a body at the limit passes.
BOOST_AUTO_TEST_CASE(max_bytes_refuses_larger_bodies) {
    http_server server([](const http_request& r) {
        if (r.target == "/announced") return http_response{.body = std::string(20000, 'a')};
        if (r.target == "/exact") return http_response{.body = std::string(10000, 'b')};
        return http_response{.body = std::string(20000, 'c'), .content_length = -2};
    });
    for (const char* path : {"/announced", "/unannounced"}) {
        const std::string url = server.url(path);
        const ferry::http_error e =
            expect_http_error([&] { (void)ferry::ops::read_url(url, {.max_bytes = 10000}); });
        BOOST_TEST(contains(e.what(), "max_bytes"), e.what());
        BOOST_TEST(contains(e.what(), url));
        if (std::string_view(path) == "/announced") {
            BOOST_TEST(contains(e.what(), "Content-Length 20000"), e.what());
        }
    }
    BOOST_TEST(ferry::ops::read_url(server.url("/exact"), {.max_bytes = 10000}).size() == 10000u);
}

// Nothing listening: an http_error with status 0 naming the URL and curl's reason.
BOOST_AUTO_TEST_CASE(refused_connection_names_url_and_reason) {
    const std::string url =
        "http://127.0.0.1:" + std::to_string(ferry_test::closed_port()) + "/x.jpg";
    const auto t0 = steady::now();
    const ferry::http_error e = expect_http_error([&] { (void)ferry::ops::read_url(url); });
    BOOST_TEST(seconds_since(t0) < 10.0);
    BOOST_TEST(e.status() == 0);
    BOOST_TEST(contains(e.what(), url));
    BOOST_TEST(contains(e.what(), "onnect"), e.what());
}

// Consecutive calls on one thread reuse one keep-alive connection.
BOOST_AUTO_TEST_CASE(reuses_keep_alive_connection) {
    http_server server([](const http_request& r) { return http_response{.body = r.target}; });
    for (int i = 0; i < 20; ++i) {
        const std::string path = "/item/" + std::to_string(i);
        BOOST_TEST(as_string(ferry::ops::read_url(server.url(path))) == path);
    }
    BOOST_TEST(server.requests() == 20u);
    BOOST_TEST(server.connections() == 1u);
}

// A failed transfer (a stall, a truncation, an oversized body) leaves the thread's handle
// usable, and one call's options (headers, limits) do not leak into the next.
BOOST_AUTO_TEST_CASE(failure_does_not_poison_next_call) {
    std::mutex mutex;
    std::vector<std::string> seen_header;
    http_server server([&](const http_request& r) {
        {
            std::lock_guard lock(mutex);
            seen_header.push_back(r.header("x-ferry-test"));
        }
        if (r.target == "/stall") {
            return http_response{.body = std::string(1000, 's'),
                                 .send_only = 10,
                                 .after = http_response::then::stall};
        }
        if (r.target == "/short") {
            return http_response{
                .body = "abc", .content_length = 10, .after = http_response::then::close};
        }
        return http_response{.body = "good " + r.target};
    });
    BOOST_CHECK_THROW(
        (void)ferry::ops::read_url(server.url("/stall"), {.timeout = std::chrono::milliseconds(500),
                                                          .headers = {"X-Ferry-Test: one"}}),
        ferry::http_error);
    BOOST_TEST(as_string(ferry::ops::read_url(server.url("/a"))) == "good /a");
    BOOST_CHECK_THROW((void)ferry::ops::read_url(server.url("/short")), ferry::http_error);
    BOOST_CHECK_THROW((void)ferry::ops::read_url(server.url("/big"), {.max_bytes = 3}),
                      ferry::http_error);
    // The limit of the previous call is gone: the same body passes now.
    BOOST_TEST(as_string(ferry::ops::read_url(server.url("/big"))) == "good /big");
    std::lock_guard lock(mutex);
    BOOST_TEST_REQUIRE(seen_header.size() == 5u);
    BOOST_TEST(seen_header[0] == "one");
    for (std::size_t i = 1; i < seen_header.size(); ++i) BOOST_TEST(seen_header[i].empty());
}

// Request headers from the options are sent; the User-Agent names ferry.
BOOST_AUTO_TEST_CASE(sends_headers) {
    http_server server([](const http_request& r) {
        return http_response{.body = r.header("authorization") + "|" + r.header("user-agent")};
    });
    const std::string got = as_string(
        ferry::ops::read_url(server.url("/h"), {.headers = {"Authorization: Bearer t0k3n"}}));
    BOOST_TEST(got.starts_with("Bearer t0k3n|ferry/"));
}

// Redirects are followed by default; with follow_redirects off a 3xx is an error, not a body.
BOOST_AUTO_TEST_CASE(follows_redirects_when_asked) {
    http_server server([](const http_request& r) {
        if (r.target == "/old") {
            return http_response{.status = 302, .body = "moved", .headers = {{"Location", "/new"}}};
        }
        return http_response{.body = "new content"};
    });
    BOOST_TEST(as_string(ferry::ops::read_url(server.url("/old"))) == "new content");
    const ferry::http_error e = expect_http_error(
        [&] { (void)ferry::ops::read_url(server.url("/old"), {.follow_redirects = false}); });
    BOOST_TEST(e.status() == 302);
    BOOST_TEST(contains(e.what(), "redirect"));
}

// file:// URLs go through the same call; a missing file is an http_error naming it; schemes
// other than http, https and file are refused.
BOOST_AUTO_TEST_CASE(reads_file_urls_and_refuses_other_schemes) {
    const ferry_test::temp_folder dir("ferry-http-test");
    const auto path = dir / "file.bin";
    const std::string contents = random_body(70000, 3);
    {
        std::ofstream out(path, std::ios::binary);
        out << contents;
    }
    const ferry::bytes b = ferry::ops::read_url("file://" + path.string());
    std::filesystem::remove(path);
    BOOST_TEST((as_string(b) == contents));
    const std::string missing = "file://" + path.string();
    const ferry::http_error e = expect_http_error([&] { (void)ferry::ops::read_url(missing); });
    BOOST_TEST(contains(e.what(), missing));
    BOOST_CHECK_THROW((void)ferry::ops::read_url("ftp://127.0.0.1/x"), ferry::http_error);
}

// A Retry-After header, in seconds or as an HTTP-date, becomes the error's retry_after(); a
// retry policy then waits that long, however short its backoff, and the item arrives.
BOOST_AUTO_TEST_CASE(retry_after_is_honoured) {
    std::atomic<int> calls{0};
    http_server server([&](const http_request& r) {
        if (r.target == "/seconds") {
            return http_response{.status = 503, .headers = {{"Retry-After", "2"}}};
        }
        if (r.target == "/date") {
            char date[64];
            const std::time_t later = std::time(nullptr) + 30;
            std::tm tm{};
            ::gmtime_r(&later, &tm);
            std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
            return http_response{.status = 429, .headers = {{"Retry-After", date}}};
        }
        if (r.target == "/garbage") {
            return http_response{.status = 503, .headers = {{"Retry-After", "soon"}}};
        }
        // /once: busy for a second the first time, then there.
        if (calls++ == 0) return http_response{.status = 503, .headers = {{"Retry-After", "1"}}};
        return http_response{.body = "here"};
    });
    BOOST_TEST(expect_http_error([&] {
                   (void)ferry::ops::read_url(server.url("/seconds"));
               }).retry_after() == std::chrono::milliseconds(2000));
    const auto by_date =
        expect_http_error([&] { (void)ferry::ops::read_url(server.url("/date")); }).retry_after();
    BOOST_TEST(by_date.count() > 25000);
    BOOST_TEST(by_date.count() <= 30000);
    BOOST_TEST(expect_http_error([&] { (void)ferry::ops::read_url(server.url("/garbage")); })
                   .retry_after()
                   .count() == 0);
    auto pipe =
        ferry::from(std::vector<std::string>{server.url("/once")})
            .map(ferry::ops::read_url,
                 {.on_error = ferry::retry{.attempts = 2, .backoff = std::chrono::milliseconds(1)},
                  .executor = ferry::io})
            .build();
    const auto t0 = steady::now();
    std::vector<std::string> got;
    for (auto& b : pipe) got.push_back(as_string(b));
    BOOST_TEST(seconds_since(t0) >= 1.0);
    BOOST_TEST(got == std::vector<std::string>{"here"});
    BOOST_TEST(calls.load() == 2);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
