// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::ops::http_client: hundreds of requests outstanding on its one thread in a map_async
/// pipeline, the same bytes and the same errors as read_url (statuses, truncation, resets,
/// stalls, size limits, refused connections, ranges, S3), AIMD per host without blocking, and
/// destruction or a stopped pipeline ending outstanding requests in bounded time.
#include <unistd.h>

#include <atomic>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ferry/cache.hpp>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <ferry/http_client.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "pipeline_support.hpp"
#include "s3_support.hpp"

namespace bdata = boost::unit_test::data;
using ferry_test::as_string;
using ferry_test::contains;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Named, not anonymous: data test cases are templates with external linkage.
namespace http_client_test {

/// Not adaptive where a case is not about throttling: host limits are per process and keyed by
/// host and port, and a port another case's server throttled on may come back here.
const ferry::http_options plain{.adaptive = false};
/// Limits far beyond the cases' bounds, so that only cancellation can end a frozen request.
const ferry::http_options patient{.timeout = 30s, .low_speed_time = 0s, .adaptive = false};

/// How long destruction or a stopped pipeline may take to end requests that would otherwise
/// wait 30 s: the loop looks every 50 ms; this leaves room for loaded and sanitizer builds.
constexpr auto bound = 2s;

std::string body_of(std::size_t i) {
    return "item " + std::to_string(i) + ":" + ferry_test::random_body(1000 + i * 37, i);
}

std::size_t index_of(const std::string& target) {
    return std::stoul(target.substr(target.rfind('/') + 1));
}

double ms(steady::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

/// Waits until `pred()` holds; false if it does not within 10 s.
template <class P>
bool eventually(P pred) {
    for (const auto until = steady::now() + 10s; !pred(); std::this_thread::sleep_for(2ms)) {
        if (steady::now() > until) return false;
    }
    return true;
}

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

/// Runs a map_async pipeline shape once, so that oneTBB's workers exist before a case counts
/// threads.
void warm_up(int threads) {
    auto p = ferry::from(std::vector<int>{1, 2, 3, 4})
                 .map_async<int>([](int x, ferry::completion<int> done) { done(x); }, 4)
                 .build({.threads = threads, .logger = ferry_test::quiet});
    for (const int x : p) (void)x;
}

enum class ending : std::uint8_t { stop, destroy };
std::ostream& operator<<(std::ostream& os, ending e) {
    return os << (e == ending::stop ? "stop" : "destroy");
}
const std::vector<ending> endings{ending::stop, ending::destroy};

}  // namespace http_client_test

using namespace http_client_test;

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(client)

// 256 slow requests outstanding at once through map_async on the client's one thread: every body
// right and delivered once, the server sees 200+ in flight together (it holds its answers until
// then, 10 s at most), and the process gains no thread per request (a thread-per-request client
// would add ~200 here).
BOOST_AUTO_TEST_CASE(keeps_hundreds_of_requests_outstanding_on_one_thread) {
    constexpr std::size_t n = 256;
    constexpr int pipeline_threads = 2;
    warm_up(pipeline_threads);
    std::atomic<int> in_flight{0};
    std::atomic<int> peak{0};
    // Threads of the process, less the server's connection threads, when the peak was reached.
    std::atomic<std::int64_t> at_peak{-1};
    std::optional<http_server> server;
    server.emplace([&](const http_request& r) {
        const int now = ++in_flight;
        for (int p = peak.load(); now > p && !peak.compare_exchange_weak(p, now);) {
        }
        if (now == 200) {
            at_peak = static_cast<std::int64_t>(ferry_test::thread_count()) -
                      static_cast<std::int64_t>(server->connections());
        }
        // Slow (300 ms), and slower still until 200 are in flight together (10 s at most), so
        // that the peak does not depend on how fast this machine issues them.
        std::this_thread::sleep_for(300ms);
        for (const auto until = steady::now() + 10s; peak.load() < 200 && steady::now() < until;) {
            std::this_thread::sleep_for(5ms);
        }
        --in_flight;
        return http_response{.body = body_of(index_of(r.target))};
    });
    const std::size_t before =
        ferry_test::thread_count();  // the server is idle: no connection thread
    ferry::ops::http_client client;
    BOOST_TEST(ferry_test::thread_count() == before + 1);  // the loop's thread, and only it
    std::vector<std::string> urls;
    for (std::size_t i = 0; i < n; ++i) urls.push_back(server->url("/item/" + std::to_string(i)));
    std::vector<std::string> got;
    {
        auto p = ferry::from(urls)
                     .map_async<ferry::bytes>(client.reader(plain), 256)
                     .build({.threads = pipeline_threads, .logger = ferry_test::quiet});
        for (const ferry::bytes& b : p) got.push_back(as_string(b));
        BOOST_TEST(p.stats().delivered == n);
    }
    BOOST_TEST_REQUIRE(got.size() == n);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST((got[i] == body_of(i)), "item " << i);
    BOOST_TEST(server->requests() == n);  // each once: nothing asked twice
    BOOST_TEST_MESSAGE("peak in flight at the server: " << peak.load() << "; threads at the peak "
                                                        << at_peak.load() << " (before the client "
                                                        << before << ")");
    BOOST_TEST(peak.load() >= 200);
    BOOST_REQUIRE(at_peak.load() >= 0);
    // The client's thread, the pipeline's monitor and a few of the engine's own: never one per
    // request (200 were in flight at that moment).
    BOOST_TEST(at_peak.load() <= static_cast<std::int64_t>(before) + 8);
    BOOST_TEST(client.outstanding() == 0u);
    BOOST_TEST(client.queued() == 0u);
}

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
    const auto path = std::filesystem::temp_directory_path() /
                      ("ferry-client-test-" + std::to_string(::getpid()) + ".bin");
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
        if (r.target == "/b/missing") {
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
    BOOST_TEST(as_string(client.fetch("s3://b/dir/k.jpg", plain).get()) == "object /b/dir/k.jpg");
    const failure e = failure_of([&] { return client.fetch("s3://b/missing", plain).get(); });
    check_same(e, failure_of([&] { return ferry::ops::read_url("s3://b/missing", plain); }),
               "s3://b/missing");
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
    const auto dir = std::filesystem::temp_directory_path() /
                     ("ferry-client-cache-" + std::to_string(::getpid()));
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

// A host that answers 503 above `capacity` requests at once: the client's AIMD brings what it
// sends down to about that (the server counts), holding the rest in the host's queue, and every
// item arrives once it is asked again.
BOOST_AUTO_TEST_CASE(throttled_host_gets_about_what_it_can_take) {
    constexpr int capacity = 8;
    constexpr int items = 300;
    std::atomic<int> in_flight{0};
    std::atomic<int> rejected{0};
    std::mutex mutex;
    std::vector<int> seen;  // requests in flight at the server as each arrived, in order
    http_server server([&](const http_request& r) {
        const int now = ++in_flight;
        {
            const std::lock_guard lock(mutex);
            seen.push_back(now);
        }
        if (now > capacity) {
            --in_flight;
            ++rejected;
            return http_response{.status = 503, .body = "busy"};
        }
        std::this_thread::sleep_for(10ms);
        --in_flight;
        return http_response{.body = r.target};
    });
    ferry::ops::http_client client({.max_outstanding = 256});
    const ferry::http_options adaptive{};  // adaptive is the default
    std::vector<std::future<ferry::bytes>> pending(items);
    for (int i = 0; i < items; ++i) {
        pending[i] = client.fetch(server.url("/t/" + std::to_string(i)), adaptive);
    }
    std::size_t most_queued = 0;
    int asked_again = 0;
    for (bool again = true; again;) {
        again = false;
        most_queued = std::max(most_queued, client.queued());
        for (int i = 0; i < items; ++i) {
            if (!pending[i].valid()) continue;
            try {
                BOOST_TEST(as_string(pending[i].get()) == "/t/" + std::to_string(i));
            } catch (const ferry::http_error& e) {
                BOOST_TEST_REQUIRE(e.status() == 503);
                BOOST_TEST_REQUIRE(asked_again < 100 * items);
                ++asked_again;
                pending[i] = client.fetch(server.url("/t/" + std::to_string(i)), adaptive);
                again = true;
            }
        }
    }
    const std::lock_guard lock(mutex);
    // The second half of what the server saw: the limit has settled by then.
    int late_peak = 0;
    for (std::size_t k = seen.size() / 2; k < seen.size(); ++k)
        late_peak = std::max(late_peak, seen[k]);
    BOOST_TEST_MESSAGE("requests " << seen.size() << ", rejected " << rejected.load()
                                   << ", late peak in flight " << late_peak << ", most queued "
                                   << most_queued);
    BOOST_TEST(late_peak <= 2 * capacity);
    BOOST_TEST(most_queued > 0u);
    bool found = false;
    for (const auto& h : ferry::ops::http_hosts()) {
        if (h.host != server.url("")) continue;
        found = true;
        BOOST_TEST(h.limit >= 1);
        BOOST_TEST(h.limit <= 2 * capacity);
        BOOST_TEST(h.in_flight == 0);
        BOOST_TEST(h.throttled == static_cast<std::uint64_t>(rejected.load()));
        BOOST_TEST(h.requests == seen.size());
    }
    BOOST_TEST(found);
}

// Destroying the client with 100 requests on a frozen server (64 running, 36 queued) returns
// within `bound`, and every one of them fails with errc::cancelled naming its URL.
BOOST_AUTO_TEST_CASE(destruction_cancels_outstanding_and_queued_requests) {
    http_server server([](const http_request&) { return http_response{.frozen = true}; });
    std::vector<std::string> urls;
    std::vector<std::future<ferry::bytes>> pending;
    std::optional<ferry::ops::http_client> client(
        std::in_place, ferry::ops::http_client_options{.max_outstanding = 64});
    for (int i = 0; i < 100; ++i) {
        urls.push_back(server.url("/frozen/" + std::to_string(i)));
        pending.push_back(client->fetch(urls.back(), patient));
    }
    BOOST_TEST_REQUIRE(eventually([&] { return server.requests() >= 64u; }));
    BOOST_TEST(client->outstanding() == 64u);
    BOOST_TEST(client->queued() == 36u);
    const auto t0 = steady::now();
    client.reset();
    const auto took = steady::now() - t0;
    BOOST_TEST_MESSAGE("destruction took " << ms(took) << " ms");
    BOOST_TEST(ms(took) < ms(bound));
    for (std::size_t i = 0; i < pending.size(); ++i) {
        BOOST_REQUIRE(pending[i].wait_for(0s) == std::future_status::ready);
        const failure f = failure_of([&] { return pending[i].get(); });
        BOOST_TEST((f.code == ferry::errc::cancelled));
        BOOST_TEST(f.what ==
                   "read_url: '" + urls[i] + "': cancelled: the http_client is being destroyed");
    }
}

// A pipeline stopped or destroyed with 64 requests outstanding on a frozen server ends within
// `bound` (the requests' own timeout is 30 s), its accounting whole, and the client is idle
// after it; the client goes on serving.
BOOST_DATA_TEST_CASE(a_stopped_pipeline_does_not_wait_for_its_requests, bdata::make(endings), end) {
    http_server server([](const http_request& r) {
        if (r.target == "/ok/0") return http_response{.body = "ok"};
        return http_response{.frozen = true};
    });
    ferry::ops::http_client client;
    std::vector<std::string> urls{server.url("/ok/0")};
    for (int i = 1; i <= 200; ++i) urls.push_back(server.url("/frozen/" + std::to_string(i)));
    std::optional<ferry::pipeline<ferry::bytes>> p;
    p.emplace(
        ferry::from(urls)
            .map_async<ferry::bytes>(client.reader(patient),
                                     {.concurrency = 64, .name = "fetch", .on_error = ferry::skip})
            .build({.threads = 2, .logger = ferry_test::quiet, .max_epoch_failure_rate = 1.0}));
    BOOST_TEST(as_string(p->next().value()) == "ok");
    BOOST_TEST_REQUIRE(eventually([&] { return client.outstanding() == 64u; }));
    steady::duration took{};
    if (end == ending::stop) {
        const auto t0 = steady::now();
        std::thread stopper([&] { p->stop(); });
        std::size_t more = 0;
        for (const ferry::bytes& b : *p) more += b.size() * 0 + 1;
        stopper.join();
        took = steady::now() - t0;
        BOOST_TEST(more == 0u);
        auto s = p->stats();
        for (const auto until = steady::now() + 10s; s.pending > 0 && steady::now() < until;
             s = p->stats()) {
            std::this_thread::sleep_for(1ms);
        }
        BOOST_TEST(s.delivered == 1u);
        ferry_test::check_accounting(s);
        p.reset();
    } else {
        const auto t0 = steady::now();
        p.reset();
        took = steady::now() - t0;
    }
    BOOST_TEST_MESSAGE(end << " took " << ms(took) << " ms");
    BOOST_TEST(ms(took) < ms(bound));
    BOOST_TEST(eventually([&] { return client.outstanding() == 0u && client.queued() == 0u; }));
    BOOST_TEST(as_string(client.fetch(server.url("/ok/0"), plain).get()) == "ok");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
