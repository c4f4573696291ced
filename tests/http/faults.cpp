// SPDX-License-Identifier: Apache-2.0
/// \file
/// read_url in pipelines against a server that misbehaves the way real ones do: frozen (it
/// accepts and never answers, or stops mid-body), killed mid-epoch, and dripping a byte at a
/// time. Stop and destruction end within a bound far below the reads' own timeouts and leave no
/// thread behind; a dead server ends the epoch with an error, not as a short success.
#include <atomic>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <mutex>
#include <optional>
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
using ferry_test::thread_count;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Named, not anonymous: data test cases are templates with external linkage.
namespace http_faults_test {

const ferry::logger quiet = [](ferry::log_level, std::string_view) {};

/// How long stop() or destruction may take to end reads that would otherwise wait 30 s.
/// Cancellation is seen within a 50 ms poll slice; this is ten of them, for loaded and
/// sanitizer builds, and still half of what curl's progress callback alone would take (it
/// fires about once a second on a silent connection).
constexpr auto bound = 500ms;
/// How long the reads wait on the server before they are cancelled: long enough that a cancel
/// seen only by curl's progress callback would come too late for `bound`.
constexpr auto waiting = 300ms;

/// The reads' own limits: far beyond `bound`, so that only cancellation can end them in time.
// Not adaptive: host limits are per process and keyed by host and port, and a port the
// throttle test's server throttled on may come back here, with a limit under the 4 reads these
// cases wait for.
const ferry::http_options patient{.timeout = 30s, .low_speed_time = 0s, .adaptive = false};

std::string body_of(std::size_t i) {
    return "item " + std::to_string(i) + ": " +
           std::string(100 + i % 50, static_cast<char>('a' + i % 26));
}

std::size_t index_of(const std::string& target) {
    return std::stoul(target.substr(target.rfind('/') + 1));
}

/// `d` in milliseconds, for messages and comparisons Boost.Test can print.
double ms(steady::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

/// The stats once the calls of a stopped pipeline have returned and ferry has counted their
/// items as cancelled (polls up to 10 s; `pending` stays above 0 when they never do).
template <class P>
ferry::pipeline_stats settled_stats(const P& p) {
    auto s = p.stats();
    for (const auto until = steady::now() + 10s; s.pending > 0 && steady::now() < until;
         s = p.stats()) {
        std::this_thread::sleep_for(1ms);
    }
    return s;
}

/// The pipeline every case runs: `read_url` with `patient` options on 4 I/O threads, skipping
/// failures (so that only the engine's rules, not a first error, end the epoch).
auto fetch_pipeline(std::vector<std::string> urls, double max_failure_rate = 1.0) {
    return ferry::from(std::move(urls))
        .map([](const std::string& u) { return ferry::ops::read_url(u, patient); },
             {.concurrency = 4, .name = "fetch", .on_error = ferry::skip, .executor = ferry::io})
        .build({.threads = 2, .logger = quiet, .max_epoch_failure_rate = max_failure_rate});
}

/// Runs the pipeline shape once against a healthy server, so that the threads a process keeps
/// once it has run a pipeline (oneTBB's workers) exist before a case counts its own.
void warm_up() {
    http_server server([](const http_request& r) { return http_response{.body = r.target}; });
    std::vector<std::string> urls;
    for (int i = 0; i < 8; ++i) urls.push_back(server.url("/warm/" + std::to_string(i)));
    auto p = fetch_pipeline(urls);
    for (const auto& b : p) (void)b;
}

/// `/ok/0` then `n` URLs the server never completes.
std::vector<std::string> one_good_then_frozen(const http_server& server, int n) {
    std::vector<std::string> urls{server.url("/ok/0")};
    for (int i = 1; i <= n; ++i) urls.push_back(server.url("/frozen/" + std::to_string(i)));
    return urls;
}

/// Waits until the server has received `n` requests (the reads are then in progress); false if
/// they do not come within 10 s. Asserts nothing: it runs on the tests' helper threads too.
bool wait_for_requests(const http_server& server, std::uint64_t n) {
    const auto until = steady::now() + 10s;
    while (server.requests() < n && steady::now() < until) std::this_thread::sleep_for(2ms);
    return server.requests() >= n;
}

enum class freeze : std::uint8_t { silent, mid_body };
enum class ending : std::uint8_t { stop, destroy };

struct frozen_case {
    freeze how;
    ending end;
};
std::ostream& operator<<(std::ostream& os, const frozen_case& c) {
    return os << (c.how == freeze::silent ? "silent" : "mid-body") << "/"
              << (c.end == ending::stop ? "stop" : "destroy");
}

const std::vector<frozen_case> frozen_cases{{freeze::silent, ending::stop},
                                            {freeze::silent, ending::destroy},
                                            {freeze::mid_body, ending::stop},
                                            {freeze::mid_body, ending::destroy}};

}  // namespace http_faults_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(faults)
using namespace http_faults_test;

// A frozen server (no answer at all, or half a body and then nothing) with 4 reads waiting on
// it: stop() ends the loop, and destroying the pipeline returns, within `bound` of being asked
// (the reads' own timeout is 30 s), with no thread left behind and every item accounted for.
BOOST_DATA_TEST_CASE(frozen_server_reads_end_promptly_on_stop_and_destruction,
                     bdata::make(frozen_cases), c) {
    warm_up();
    const std::size_t threads_before = thread_count();
    http_server server([how = c.how](const http_request& r) {
        if (r.target == "/ok/0") return http_response{.body = "ok"};
        if (how == freeze::silent) return http_response{.frozen = true};
        return http_response{.body = std::string(100000, 'z'),
                             .send_only = 1000,
                             .after = http_response::then::stall};
    });
    steady::time_point asked;
    steady::duration loop_took{};
    steady::duration destroy_took{};
    {
        std::optional<decltype(fetch_pipeline({}))> p(
            fetch_pipeline(one_good_then_frozen(server, 8)));
        // The good item first: its output ends the engine's fast start, and 4 reads (the
        // stage's concurrency) then wait on the frozen server.
        BOOST_TEST(as_string(p->next().value()) == "ok");
        BOOST_TEST_REQUIRE(wait_for_requests(server, 5));
        std::this_thread::sleep_for(waiting);
        if (c.end == ending::stop) {
            std::thread stopper([&] {
                asked = steady::now();
                p->stop();
            });
            std::size_t more = 0;
            for (const ferry::bytes& b : *p) more += b.size() * 0 + 1;
            stopper.join();
            loop_took = steady::now() - asked;
            BOOST_TEST(more == 0u);
            const auto s = settled_stats(*p);
            BOOST_TEST(s.delivered == 1u);
            check_accounting(s);
            for (const ferry::failure& f : p->failures()) {
                BOOST_TEST(
                    f.message.find("cancelled: the pipeline is stopping") != std::string::npos,
                    f.message);
            }
        } else {
            asked = steady::now();
        }
        p.reset();
        destroy_took = steady::now() - asked;
    }
    BOOST_TEST_MESSAGE(c << ": the loop ended " << ms(loop_took) << " ms, destruction "
                         << ms(destroy_took) << " ms after being asked");
    BOOST_TEST(ms(loop_took) < ms(bound));
    BOOST_TEST(ms(destroy_took) < ms(bound));
    server.stop();
    BOOST_TEST(thread_count() <= threads_before);
}

// read_url itself gives up well within a second of stop() while the server sends nothing (curl's
// own progress callback alone would see it up to a second later): within `bound`, with
// errc::cancelled naming the URL. Three stops, each timed from stop() to read_url's throw.
BOOST_AUTO_TEST_CASE(read_url_gives_up_within_a_poll_slice_of_stop) {
    http_server server([](const http_request&) { return http_response{.frozen = true}; });
    for (int round = 0; round < 3; ++round) {
        const std::string url = server.url("/frozen/" + std::to_string(round));
        std::atomic<std::int64_t> thrown_ns{0};
        std::string message;
        ferry::errc code = ferry::errc::io;
        auto p = ferry::from(std::vector<std::string>{url})
                     .map(
                         [&](const std::string& u) {
                             try {
                                 return ferry::ops::read_url(u, patient);
                             } catch (const ferry::error& e) {
                                 message = e.what();
                                 code = e.code();
                                 // Last: the stopper reads message and code once it is set.
                                 thrown_ns = steady::now().time_since_epoch().count();
                                 throw;
                             }
                         },
                         {.name = "fetch", .on_error = ferry::skip, .executor = ferry::io})
                     .build({.threads = 1, .logger = quiet, .max_epoch_failure_rate = 1.0});
        bool reached = false;
        steady::time_point asked;
        std::thread stopper([&] {
            reached = wait_for_requests(server, static_cast<std::uint64_t>(round) + 1);
            std::this_thread::sleep_for(waiting);  // the read waits on a silent socket now
            asked = steady::now();
            p.stop();
            // The call ends on its own thread; wait for it (bounded) before reading the time.
            while (thrown_ns.load() == 0 && steady::now() - asked < 10s) {
                std::this_thread::sleep_for(1ms);
            }
        });
        for (const auto& b : p) (void)b;
        stopper.join();
        BOOST_TEST(reached);
        BOOST_TEST_REQUIRE(thrown_ns.load() != 0);
        const auto latency = steady::duration(thrown_ns.load()) - asked.time_since_epoch();
        BOOST_TEST_MESSAGE("read_url cancel latency: " << ms(latency) << " ms");
        BOOST_TEST(ms(latency) < ms(bound));
        BOOST_TEST((code == ferry::errc::cancelled));
        BOOST_TEST(message == "read_url: '" + url + "': cancelled: the pipeline is stopping");
    }
}

// A server killed after 20 of 200 requests: the reads that follow fail (refused), and the epoch
// ends with the failure-rate error naming the stage, never as a short, successful epoch; every
// item is accounted for. Requests after the 20th get no answer until the kill ends them, so
// the reads cannot outrun the killer however fast the machine is.
BOOST_AUTO_TEST_CASE(killed_server_ends_the_epoch_with_an_error_naming_the_stage) {
    std::atomic<int> answered{0};
    http_server server([&answered](const http_request& r) {
        if (answered.fetch_add(1) >= 20) return http_response{.frozen = true};
        return http_response{.body = body_of(index_of(r.target))};
    });
    std::vector<std::string> urls;
    for (int i = 0; i < 200; ++i) urls.push_back(server.url("/item/" + std::to_string(i)));
    auto p = fetch_pipeline(urls, 0.5);
    std::thread killer([&] {
        wait_for_requests(server, 20);
        server.stop();
    });
    std::size_t delivered = 0;
    std::size_t wrong = 0;
    std::string error;
    try {
        // Items arrive in source order, the failed ones missing: each body is a later item's.
        std::size_t next = 0;
        for (const ferry::bytes& b : p) {
            const std::string got = as_string(b);
            while (next < urls.size() && got != body_of(next)) ++next;
            if (next == urls.size()) ++wrong;
            ++next;
            ++delivered;
        }
    } catch (const ferry::error& e) {
        error = e.what();
        BOOST_TEST((e.code() == ferry::errc::stage_failed));
    }
    killer.join();
    BOOST_TEST_REQUIRE(!error.empty(), "the epoch ended normally after " << delivered << " items");
    BOOST_TEST(error.find("max_epoch_failure_rate") != std::string::npos, error);
    BOOST_TEST(error.find("stage 'fetch'") != std::string::npos, error);
    BOOST_TEST(wrong == 0u);
    const auto s = p.stats();
    BOOST_TEST(s.produced == 200u);
    BOOST_TEST(s.delivered == delivered);
    BOOST_TEST(s.failed > 100u);
    check_accounting(s);
}

// A server that sends its bodies a byte every 100 ms: slow but alive, within the read's
// timeout, so the reads complete with the exact bytes.
BOOST_AUTO_TEST_CASE(slow_drip_reads_complete_with_the_right_bytes) {
    http_server server([](const http_request& r) {
        return http_response{.body = "drip" + std::to_string(index_of(r.target)), .drip = 100ms};
    });
    std::vector<std::string> urls;
    for (int i = 0; i < 4; ++i) urls.push_back(server.url("/drip/" + std::to_string(i)));
    auto p = fetch_pipeline(urls, 0.5);
    std::vector<std::string> got;
    for (const ferry::bytes& b : p) got.push_back(as_string(b));
    BOOST_TEST((got == std::vector<std::string>{"drip0", "drip1", "drip2", "drip3"}));
    BOOST_TEST(p.stats().failed == 0u);
}

// A slow drip that would take 100 s: stop() ends the loop, and destruction returns, within
// `bound`.
BOOST_AUTO_TEST_CASE(stop_cancels_slow_drip_reads_promptly) {
    http_server server([](const http_request&) {
        return http_response{.body = std::string(1000, 'd'), .drip = 100ms};
    });
    std::vector<std::string> urls;
    for (int i = 0; i < 4; ++i) urls.push_back(server.url("/drip/" + std::to_string(i)));
    auto p = fetch_pipeline(urls);
    bool reached = false;
    steady::time_point asked;
    std::thread stopper([&] {
        // The engine's fast start admits one item until the first output: one read drips.
        reached = wait_for_requests(server, 1);
        std::this_thread::sleep_for(250ms);  // a couple of bytes have arrived
        asked = steady::now();
        p.stop();
    });
    std::size_t n = 0;
    for (const auto& b : p) n += b.size() * 0 + 1;
    stopper.join();
    const auto loop_took = steady::now() - asked;
    BOOST_TEST(reached);
    BOOST_TEST(n == 0u);
    check_accounting(settled_stats(p));
    { const auto gone = std::move(p); }
    const auto destroy_took = steady::now() - asked;
    BOOST_TEST(ms(loop_took) < ms(bound));
    BOOST_TEST(ms(destroy_took) < ms(bound));
}

/// `/ok/0`, `/ok/1`, `/frozen/2`, then `/ok/3` .. `/ok/7`: one read that never ends, in the
/// middle of an ordered epoch.
std::vector<std::string> frozen_in_the_middle(const http_server& server) {
    std::vector<std::string> urls;
    for (int i = 0; i < 8; ++i) {
        urls.push_back(server.url((i == 2 ? "/frozen/" : "/ok/") + std::to_string(i)));
    }
    return urls;
}

// While ordered output waits for a read the frozen server never answers, the periodic report
// names what the loop waits for — stage 'fetch', item 2 — and the bottleneck is that stage, not
// the waiting consumer.
BOOST_AUTO_TEST_CASE(the_report_names_a_read_stuck_on_a_frozen_server) {
    http_server server([](const http_request& r) {
        if (r.target.starts_with("/frozen/")) return http_response{.frozen = true};
        return http_response{.body = r.target};
    });
    std::mutex mutex;
    std::string stall;
    std::string bottleneck;
    auto p = ferry::from(frozen_in_the_middle(server))
                 .map([](const std::string& u) { return ferry::ops::read_url(u, patient); },
                      {.concurrency = 2, .name = "fetch", .executor = ferry::io})
                 .build({.threads = 2,
                         .logger = quiet,
                         .on_report =
                             [&](const ferry::pipeline_stats& s) {
                                 const std::lock_guard lock(mutex);
                                 if (stall.empty() && s.consumer_waiting >= 300ms) {
                                     stall = s.stall();
                                     bottleneck = s.bottleneck();
                                 }
                             },
                         .report_every = 20ms});
    // Stopped once the report has named the stall and the loop has taken the two bodies before
    // it: a report can come while body 1 is released but not yet taken, and a stop then would
    // leave it untaken on a loaded machine.
    std::atomic<int> taken{0};
    std::thread stopper([&] {
        const auto until = steady::now() + 10s;
        for (;;) {
            {
                const std::lock_guard lock(mutex);
                if ((!stall.empty() && taken.load() >= 2) || steady::now() >= until) break;
            }
            std::this_thread::sleep_for(5ms);
        }
        p.stop();
    });
    std::vector<std::string> got;
    for (const ferry::bytes& b : p) {
        got.push_back(as_string(b));
        ++taken;
    }
    stopper.join();
    const std::vector<std::string> before{"/ok/0", "/ok/1"};
    BOOST_TEST(got == before, boost::test_tools::per_element());
    const std::lock_guard lock(mutex);
    BOOST_TEST(stall.starts_with("output waits for item 2 in stage 'fetch' (running "), stall);
    BOOST_TEST(bottleneck == "fetch");
}

// With a stage timeout the same epoch goes on past the frozen read: seven bodies arrive in order
// within a few seconds (the read's own timeout is 30 s), and the failure is a timeout that names
// the URL.
BOOST_AUTO_TEST_CASE(a_stage_timeout_passes_a_frozen_read_by) {
    http_server server([](const http_request& r) {
        if (r.target.starts_with("/frozen/")) return http_response{.frozen = true};
        return http_response{.body = r.target};
    });
    const auto urls = frozen_in_the_middle(server);
    auto p = ferry::from(urls)
                 .map([](const std::string& u) { return ferry::ops::read_url(u, patient); },
                      {.concurrency = 2,
                       .name = "fetch",
                       .on_error = ferry::skip,
                       .executor = ferry::io,
                       .timeout = 200ms})
                 .build({.threads = 2, .logger = quiet});
    const auto t0 = steady::now();
    std::vector<std::string> got;
    for (const ferry::bytes& b : p) got.push_back(as_string(b));
    BOOST_TEST(ms(steady::now() - t0) < 5000.0);
    const std::vector<std::string> want{"/ok/0", "/ok/1", "/ok/3", "/ok/4",
                                        "/ok/5", "/ok/6", "/ok/7"};
    BOOST_TEST(got == want, boost::test_tools::per_element());
    const auto f = p.failures();
    BOOST_REQUIRE(f.size() == 1u);
    BOOST_TEST((f[0].code == ferry::errc::timeout));
    BOOST_TEST(f[0].input == urls[2]);
    BOOST_TEST(f[0].item == 2u);
    check_accounting(p.stats());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
