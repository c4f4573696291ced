// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::ops::http_client means what read_url means: the same bytes, byte ranges and `file://`,
/// the same S3 requests, and the same errors word for word (statuses, truncation, resets, stalls,
/// size limits, redirects, refused connections, bad URLs); options it cannot honour refused up
/// front; keep-alive connections reused. client_load.cpp has the many-requests cases.
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ferry/cache.hpp>
#include <ferry/http.hpp>
#include <ferry/http_client.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "../support/temp_folder.hpp"
#include "client_support.hpp"
#include "s3_support.hpp"

using ferry_test::as_string;
using ferry_test::contains;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using ferry_test::ms;
using ferry_test::plain;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace client_test {

/// What a read threw: its type, message, status and whether it can pass.
struct failure {
    std::string type;
    std::string what;
    int status = -1;
    bool transient = false;
    ferry::errc code = ferry::errc::internal;
};

template <class F>
failure failure_of(F&& f) {
    try {
        (void)std::forward<F>(f)();
    } catch (const ferry::error& e) {
        const auto* h = dynamic_cast<const ferry::http_error*>(&e);
        return {typeid(e).name(), e.what(), h != nullptr ? h->status() : -1, e.transient(),
                e.code()};
    }
    BOOST_ERROR("the read did not fail");
    return {};
}

/// Fails the case unless the client's failure is read_url's: type, message, status, transience.
void check_same(const failure& client, const failure& blocking, const std::string& what) {
    BOOST_TEST(client.type == blocking.type, what);
    BOOST_TEST(client.what == blocking.what, what);
    BOOST_TEST(client.status == blocking.status, what);
    BOOST_TEST(client.transient == blocking.transient, what);
}

}  // namespace client_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(client)
using namespace client_test;

// Each way a read fails ends in the same error as read_url's: type, message, status and
// transience, for a 404, a truncated body, a reset mid-body, a stall past the timeout, a body
// over max_bytes (announced and not), a redirect not followed, and a refused connection.
BOOST_AUTO_TEST_CASE(failures_are_read_urls_word_for_word) {
    http_server server([](const http_request& r) {
        if (r.target == "/missing") return http_response{.status = 404, .body = "no such key"};
        if (r.target == "/short") {
            return http_response{.body = std::string(5000, 'a'),
                                 .content_length = 9000,
                                 .after = http_response::then::close};
        }
        if (r.target == "/reset") {
            return http_response{.body = std::string(9000, 'r'),
                                 .send_only = 3000,
                                 .after = http_response::then::reset};
        }
        if (r.target == "/stall") {
            return http_response{.body = std::string(100000, 'z'),
                                 .send_only = 1000,
                                 .after = http_response::then::stall};
        }
        if (r.target == "/unsized") {
            return http_response{.body = std::string(20000, 'c'), .content_length = -2};
        }
        if (r.target == "/old") {
            return http_response{.status = 302, .body = "moved", .headers = {{"Location", "/"}}};
        }
        if (r.target == "/busy") {
            return http_response{.status = 503, .headers = {{"Retry-After", "7"}}};
        }
        return http_response{.body = std::string(20000, 'a')};
    });
    ferry::ops::http_client client;
    struct read {
        std::string url;
        ferry::http_options options;
    };
    const std::string refused =
        "http://127.0.0.1:" + std::to_string(ferry_test::closed_port()) + "/x.jpg";
    const std::vector<read> reads{
        {server.url("/missing"), plain},
        {server.url("/short"), plain},
        {server.url("/reset"), plain},
        // The low-speed rule (the timeout's message holds the time it took: not comparable).
        {server.url("/stall"),
         {.low_speed_limit = 100'000, .low_speed_time = 1s, .adaptive = false}},
        {server.url("/announced"), {.max_bytes = 10000, .adaptive = false}},
        {server.url("/unsized"), {.max_bytes = 10000, .adaptive = false}},
        {server.url("/old"), {.follow_redirects = false, .adaptive = false}},
        {server.url("/busy"), plain},
        {refused, plain},
        {std::string("http://127.0.0.1/a\0b", 20), plain},
        {"ftp://127.0.0.1/x", plain},
    };
    for (const read& r : reads) {
        const failure blocking = failure_of([&] { return ferry::ops::read_url(r.url, r.options); });
        const failure client_side =
            failure_of([&] { return client.fetch(r.url, r.options).get(); });
        check_same(client_side, blocking, r.url);
        BOOST_TEST_MESSAGE(client_side.what);
    }
    const failure missing = failure_of([&] { return client.fetch(server.url("/missing")).get(); });
    BOOST_TEST(missing.status == 404);
    BOOST_TEST(!missing.transient);
    BOOST_TEST(contains(missing.what, "HTTP 404 Not Found: no such key"));
    try {
        (void)client.fetch(server.url("/busy"), plain).get();
    } catch (const ferry::http_error& e) {
        BOOST_TEST(e.retry_after() == std::chrono::milliseconds(7000));
    }
    // The total timeout: its message names the time it took, so only the start is compared.
    const ferry::http_options timed{.timeout = 500ms, .low_speed_time = 0s, .adaptive = false};
    const auto t0 = steady::now();
    const failure timeout =
        failure_of([&] { return client.fetch(server.url("/stall"), timed).get(); });
    BOOST_TEST(ms(steady::now() - t0) < 10000.0);
    BOOST_TEST(timeout.status == 200);
    BOOST_TEST(timeout.what.starts_with("read_url: '" + server.url("/stall") +
                                        "': Operation timed out after"),
               timeout.what);
}

// Bodies and byte ranges are read_url's: a 206, a server that ignores ranges (200, the range
// cut out of the whole body), a chunked reader's range at the end, file:// and a range of it.
BOOST_AUTO_TEST_CASE(bodies_and_ranges_are_read_urls) {
    const std::string resource = ferry_test::random_body(300000, 11);
    http_server server([&](const http_request& r) {
        if (r.target == "/ranged") return ferry_test::ranged(resource, r);
        return http_response{.body = resource};  // ignores Range
    });
    ferry::ops::http_client client({.max_outstanding = 4});
    const ferry_test::temp_folder dir("ferry-client-test");
    const auto path = dir / "resource.bin";
    std::ofstream(path, std::ios::binary) << resource;
    const std::vector<std::string> urls{server.url("/ranged"), server.url("/whole"),
                                        "file://" + path.string()};
    const std::vector<std::optional<ferry::byte_range>> ranges{
        std::nullopt, ferry::byte_range{1000, 5000}, ferry::byte_range{299000, 0},
        ferry::byte_range{299000, 5000, true}, ferry::byte_range{400000, 10, true}};
    for (const std::string& url : urls) {
        for (const auto& range : ranges) {
            ferry::http_options o = plain;
            o.range = range;
            const ferry::bytes want = ferry::ops::read_url(url, o);
            const ferry::bytes got = client.fetch(url, o).get();
            BOOST_TEST((as_string(got) == as_string(want)), url);
        }
        // A range past the end that is not `at_most`: the same error.
        ferry::http_options past = plain;
        past.range = ferry::byte_range{299000, 5000};
        check_same(failure_of([&] { return client.fetch(url, past).get(); }),
                   failure_of([&] { return ferry::ops::read_url(url, past); }), url);
    }
    std::filesystem::remove(path);
    BOOST_TEST(as_string(client.fetch(server.url("/ranged"), plain).get()).size() ==
               resource.size());
}

// s3:// is read_url's: the same signed request (SigV4 by curl), the same body, and S3's error
// document as the same s3_error.
BOOST_AUTO_TEST_CASE(s3_objects_are_signed_and_their_errors_typed) {
    std::mutex mutex;
    std::vector<std::string> authorizations;
    http_server server([&](const http_request& r) {
        {
            const std::lock_guard lock(mutex);
            authorizations.push_back(r.header("authorization"));
        }
        if (r.target == "/bkt/missing") {
            return http_response{.status = 404,
                                 .body =
                                     "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code>"
                                     "<Message>The specified key does not exist.</Message>"
                                     "</Error>",
                                 .headers = {{"Content-Type", "application/xml"}}};
        }
        return http_response{.body = "object " + r.target};
    });
    const ferry_test::scoped_env env({{"AWS_ENDPOINT_URL", server.url("")},
                                      {"AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"},
                                      {"AWS_SECRET_ACCESS_KEY", "secret"}});
    ferry::ops::http_client client;
    BOOST_TEST(as_string(client.fetch("s3://bkt/dir/k.jpg", plain).get()) ==
               "object /bkt/dir/k.jpg");
    const failure e = failure_of([&] { return client.fetch("s3://bkt/missing", plain).get(); });
    check_same(e, failure_of([&] { return ferry::ops::read_url("s3://bkt/missing", plain); }),
               "s3://bkt/missing");
    BOOST_TEST(e.type == typeid(ferry::s3_error).name());
    BOOST_TEST(contains(e.what, "NoSuchKey: The specified key does not exist."), e.what);
    const std::lock_guard lock(mutex);
    BOOST_TEST_REQUIRE(authorizations.size() == 3u);
    for (const std::string& a : authorizations) {
        BOOST_TEST(a.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), a);
    }
    // A URL that cannot be a request fails its own completion, as read_url throws.
    check_same(failure_of([&] { return client.fetch("s3://bucket-only", plain).get(); }),
               failure_of([&] { return ferry::ops::read_url("s3://bucket-only", plain); }),
               "s3://bucket-only");
}

// Options the client cannot honour are refused up front, naming them.
BOOST_AUTO_TEST_CASE(refuses_a_cache_and_zero_outstanding) {
    ferry::ops::http_client client;
    const ferry_test::temp_folder root("ferry-client-cache");
    const auto dir = root / "cache";
    const ferry::http_options cached{.cache = ferry::ops::open_cache({.dir = dir})};
    BOOST_TEST(
        ferry_test::expect_throw<ferry::invalid_argument>([&] { (void)client.reader(cached); })
            .what()
            .find("http_options::cache") != std::string::npos);
    BOOST_TEST(ferry_test::expect_throw<ferry::invalid_argument>(
                   [&] { (void)client.fetch("http://127.0.0.1/", cached); })
                   .what()
                   .find("http_options::cache") != std::string::npos);
    BOOST_CHECK_THROW(ferry::ops::http_client({.max_outstanding = 0}), ferry::invalid_argument);
    std::filesystem::remove_all(dir);
}

// With `retry`, a transient failure is tried again on the loop: a 503 twice then 200 arrives
// whole after three requests and at least the two backoffs (20 + 40 ms); a 404 is asked once; a
// server that always answers 500 is asked `attempts` times and its last failure is the error.
BOOST_AUTO_TEST_CASE(retries_transient_failures_with_backoff) {
    std::atomic<int> flaky{0}, missing{0}, down{0};
    http_server server([&](const http_request& r) {
        if (r.target == "/flaky") {
            if (flaky++ < 2) return http_response{.status = 503, .body = "busy"};
            return http_response{.body = "whole body"};
        }
        if (r.target == "/missing") {
            ++missing;
            return http_response{.status = 404, .body = "no such thing"};
        }
        ++down;
        return http_response{.status = 500, .body = "down"};
    });
    ferry::ops::http_client client(
        {.max_outstanding = 8, .retry = {.attempts = 3, .backoff = 20ms, .multiplier = 2.0}});
    const auto t0 = steady::now();
    BOOST_TEST(as_string(client.fetch(server.url("/flaky"), plain).get()) == "whole body");
    BOOST_TEST(ms(steady::now() - t0) >= 60.0);
    BOOST_TEST(flaky.load() == 3);
    const auto not_found = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)client.fetch(server.url("/missing"), plain).get(); }, "404");
    BOOST_TEST(contains(not_found.what(), "HTTP 404"), not_found.what());
    BOOST_TEST(missing.load() == 1);
    const auto failed = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)client.fetch(server.url("/down"), plain).get(); }, "500");
    BOOST_TEST(contains(failed.what(), "HTTP 500"), failed.what());
    BOOST_TEST(down.load() == 3);
    BOOST_TEST(client.retried() == 4U);
    BOOST_TEST(client.queued() == 0U);
}

// A request waiting for its next attempt holds no transfer and does not hold up the client's
// end: destroyed with a retry 10 s away, the client fails it with errc::cancelled at once.
BOOST_AUTO_TEST_CASE(a_pending_retry_ends_with_the_client) {
    http_server server([](const http_request&) { return http_response{.status = 503}; });
    std::future<ferry::bytes> f;
    const auto t0 = steady::now();
    {
        ferry::ops::http_client client({.retry = {.attempts = 5, .backoff = 10s}});
        f = client.fetch(server.url("/x"), plain);
        BOOST_TEST_REQUIRE(ferry_test::eventually([&] { return client.retried() == 1U; }));
        BOOST_TEST(client.outstanding() == 0U);
        BOOST_TEST(client.queued() == 1U);
    }
    const auto e = ferry_test::expect_throw<ferry::error>([&] { (void)f.get(); }, "pending retry");
    BOOST_TEST_REQUIRE(e.has_value());
    BOOST_TEST((e->code() == ferry::errc::cancelled));
    BOOST_TEST(contains(e.what(), "cancelled: the http_client is being destroyed"), e.what());
    BOOST_TEST(ms(steady::now() - t0) < 5000.0);
}

// Sequential requests reuse one keep-alive connection, and many at a time at most one each.
BOOST_AUTO_TEST_CASE(reuses_connections) {
    http_server server([](const http_request& r) { return http_response{.body = r.target}; });
    ferry::ops::http_client client({.max_outstanding = 8});
    for (int i = 0; i < 20; ++i) {
        const std::string path = "/seq/" + std::to_string(i);
        BOOST_TEST(as_string(client.fetch(server.url(path), plain).get()) == path);
    }
    BOOST_TEST(server.connections() == 1u);
    std::vector<std::future<ferry::bytes>> all;
    for (int i = 0; i < 200; ++i)
        all.push_back(client.fetch(server.url("/many/" + std::to_string(i)), plain));
    for (int i = 0; i < 200; ++i)
        BOOST_TEST(as_string(all[i].get()) == "/many/" + std::to_string(i));
    BOOST_TEST(server.connections() <= 8u);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
