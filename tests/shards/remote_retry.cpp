// SPDX-License-Identifier: Apache-2.0
/// \file
/// A remote shard's failed reads tried again on `tar_options::remote_retry` (the one retry
/// schedule): how many reads, the pauses between them in order (recorded, not timed), which
/// failures are read again, and a stop that cuts a pause short. The shards are served from memory
/// by a `range_reader` that fails on request.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <ferry/ferry.hpp>
#include <ferry/shards.hpp>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../../ops/shards/remote_retry.hpp"
#include "../support/http_bodies.hpp"
#include "tar_writer.hpp"

using namespace std::chrono_literals;

// The suite's helpers, named in each case by a using-directive of its own: the unity build puts
// other test files after this one in the same translation unit.
namespace remote_retry_test {

using ferry::shards_detail::read_retrying;
using ferry::shards_detail::remote_pause;
using ferry::shards_detail::remote_schedule;
using ferry::shards_detail::wait_unless_stopped;

/// A read that fails `failures` times with what `fail(k)` throws (k = 1, 2, ...), then returns
/// "payload"; counts its calls.
template <class Fail>
struct flaky_read {
    int failures;
    Fail fail;
    int calls = 0;
    ferry::bytes operator()() {
        ++calls;
        if (calls <= failures) fail(calls);
        return ferry::bytes::from_string("payload");
    }
};
template <class Fail>
flaky_read(int, Fail) -> flaky_read<Fail>;

/// Throws a transient `io_error` naming the read.
void busy(int k) {
    throw ferry::io_error("busy (read " + std::to_string(k) + ")");
}

/// The pauses a read asked for, in milliseconds, in order; `go_on`: what the wait answers.
struct pause_log {
    std::vector<double> ms;
    bool go_on = true;
    auto waiter() {
        return [this](remote_pause p) {
            ms.push_back(p.count());
            return go_on;
        };
    }
};

/// The message `f` throws, or "" when it returns.
template <class F>
std::string thrown_by(F&& f) {
    try {
        (void)f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

/// The shard of `n` samples (k0 ..) as a tar file's bytes: member m's header at byte 1024 * m.
std::string shard_bytes_of(int n) {
    ferry_test::temp_folder dir("ferry-shards-remote-retry");
    ferry_test::write_tar(dir / "a.tar", ferry_test::numbered_samples(n));
    return ferry_test::read_bytes(dir / "a.tar");
}

/// `bytes[offset, offset + length)`, clipped at the end.
ferry::bytes range_of(const std::string& bytes, std::uint64_t offset, std::uint64_t length) {
    if (offset >= bytes.size()) return {};
    return ferry::bytes::from_string(std::string_view(bytes).substr(
        static_cast<std::size_t>(offset), static_cast<std::size_t>(length)));
}

}  // namespace remote_retry_test

BOOST_AUTO_TEST_SUITE(shards)
BOOST_AUTO_TEST_SUITE(remote_retry)

// The default schedule, said in the manual: 3 reads, pausing 100 ms, then 400 ms; a read that
// passes on its third attempt returns its bytes.
BOOST_AUTO_TEST_CASE(the_default_reads_three_times_pausing_100_then_400_ms) {
    using namespace remote_retry_test;
    flaky_read read{2, busy};
    pause_log log;
    const auto out = read_retrying(remote_schedule({}), read, log.waiter());
    BOOST_TEST(ferry_test::as_string(out) == "payload");
    BOOST_TEST(read.calls == 3);
    BOOST_TEST(log.ms == (std::vector<double>{100.0, 400.0}), boost::test_tools::per_element());

    flaky_read down{100, busy};
    pause_log log2;
    BOOST_TEST(thrown_by([&] { return read_retrying(remote_schedule({}), down, log2.waiter()); }) ==
               "busy (read 3)");
    BOOST_TEST(down.calls == 3);
    BOOST_TEST(log2.ms == (std::vector<double>{100.0, 400.0}), boost::test_tools::per_element());
}

// tar_options::remote_retry is the schedule: its attempts, and backoff * multiplier^k in order.
BOOST_AUTO_TEST_CASE(remote_retry_sets_the_attempts_and_the_pauses) {
    using namespace remote_retry_test;
    const ferry::sources::tar_options options{
        .remote_retry = {.attempts = 4, .backoff = 20ms, .multiplier = 2.0}};
    flaky_read read{100, busy};
    pause_log log;
    BOOST_TEST(thrown_by([&] {
                   return read_retrying(remote_schedule(options), read, log.waiter());
               }) == "busy (read 4)");
    BOOST_TEST(read.calls == 4);
    BOOST_TEST(log.ms == (std::vector<double>{20.0, 40.0, 80.0}), boost::test_tools::per_element());

    const ferry::sources::tar_options once{.remote_retry = {.attempts = 1}};
    flaky_read single{100, busy};
    pause_log none;
    BOOST_TEST(thrown_by([&] {
                   return read_retrying(remote_schedule(once), single, none.waiter());
               }) == "busy (read 1)");
    BOOST_TEST(single.calls == 1);
    BOOST_TEST(none.ms.empty());
}

// A server's Retry-After (error::retry_after) is the least a pause lasts.
BOOST_AUTO_TEST_CASE(a_pause_lasts_at_least_the_servers_retry_after) {
    using namespace remote_retry_test;
    const ferry::sources::tar_options options{
        .remote_retry = {.attempts = 3, .backoff = 20ms, .multiplier = 2.0}};
    flaky_read read{2, [](int k) {
                        ferry::io_error e("slow down (read " + std::to_string(k) + ")");
                        e.set_retry_after(k == 1 ? 700ms : 10ms);
                        throw e;
                    }};
    pause_log log;
    (void)read_retrying(remote_schedule(options), read, log.waiter());
    BOOST_TEST(read.calls == 3);
    BOOST_TEST(log.ms == (std::vector<double>{700.0, 40.0}), boost::test_tools::per_element());
}

// A failure that cannot pass (a 404, a missing object) or that is no ferry::error is not read
// again: the first failure is the read's, with no pause.
BOOST_AUTO_TEST_CASE(a_lasting_failure_is_read_once) {
    using namespace remote_retry_test;
    flaky_read gone{100, [](int) { throw ferry::io_error("HTTP 404 Not Found", false); }};
    pause_log log;
    BOOST_TEST(thrown_by([&] { return read_retrying(remote_schedule({}), gone, log.waiter()); }) ==
               "HTTP 404 Not Found");
    BOOST_TEST(gone.calls == 1);
    flaky_read foreign{100, [](int) { throw std::runtime_error("not ferry's"); }};
    BOOST_TEST(thrown_by([&] {
                   return read_retrying(remote_schedule({}), foreign, log.waiter());
               }) == "not ferry's");
    BOOST_TEST(foreign.calls == 1);
    BOOST_TEST(log.ms.empty());
}

// A pause that was cut short (the pipeline stopping) ends the retries: no read after it, and
// the read fails with its last failure.
BOOST_AUTO_TEST_CASE(a_cut_pause_ends_the_retries) {
    using namespace remote_retry_test;
    flaky_read read{100, busy};
    pause_log log;
    log.go_on = false;
    BOOST_TEST(thrown_by([&] { return read_retrying(remote_schedule({}), read, log.waiter()); }) ==
               "busy (read 1)");
    BOOST_TEST(read.calls == 1);
    BOOST_TEST(log.ms == (std::vector<double>{100.0}), boost::test_tools::per_element());
}

// The wait itself: over at once inside a stage call whose pipeline is stopping (a 30 s pause
// would hold the test past its watchdog otherwise), and no read follows; a pause outside any
// call runs out and says so.
BOOST_AUTO_TEST_CASE(the_wait_ends_when_the_call_is_stopped) {
    using namespace remote_retry_test;
    BOOST_TEST(wait_unless_stopped(remote_pause(1.0)));
    const std::atomic<bool> stopping{true};
    const std::atomic<bool> aborting{false};
    const ferry::detail::call_scope scope(&stopping, &aborting);
    BOOST_TEST(!wait_unless_stopped(remote_pause(30000.0)));
    const ferry::sources::tar_options options{.remote_retry = {.attempts = 3, .backoff = 30s}};
    flaky_read read{100, busy};
    BOOST_TEST(thrown_by([&] {
                   return read_retrying(remote_schedule(options), read, wait_unless_stopped);
               }) == "busy (read 1)");
    BOOST_TEST(read.calls == 1);
}

// Through tar_samples: a shard whose read at byte 4096 fails 4 times is whole with
// remote_retry's 5 attempts; one that keeps failing there is read 5 times and loses its rest as
// one damaged sample that names the last failure.
BOOST_AUTO_TEST_CASE(tar_samples_reads_a_failing_remote_shard_as_remote_retry_says) {
    using namespace remote_retry_test;
    const std::string tar = shard_bytes_of(4);
    std::atomic<int> flaky_failures{0};
    std::atomic<int> down_reads{0};
    const ferry::sources::tar_options options{
        .read_remote =
            [&](const std::string& shard, std::uint64_t offset, std::uint64_t length) {
                if (offset >= 4096 && shard == "mem://flaky.tar" && flaky_failures < 4) {
                    throw ferry::io_error("busy (failure " + std::to_string(++flaky_failures) +
                                          ")");
                }
                if (offset >= 4096 && shard == "mem://down.tar") {
                    throw ferry::io_error("busy (read " + std::to_string(++down_reads) + ")");
                }
                return range_of(tar, offset, length);
            },
        .remote_chunk = 4096,
        .remote_retry = {.attempts = 5, .backoff = 1ms, .multiplier = 1.0}};
    std::vector<std::string> got;
    for (auto&& s :
         ferry::sources::tar_samples({"mem://flaky.tar", "mem://down.tar"}, options)(0)) {
        try {
            got.push_back(s.key + ":" + ferry_test::as_string(s.fields.at("cls")));
        } catch (const ferry::error& e) {
            got.push_back(s.path + ": " + e.what());
        }
    }
    const std::vector<std::string> expected{
        "k0:class of k0",
        "k1:class of k1",
        "k2:class of k2",
        "k3:class of k3",
        "k0:class of k0",
        "k1:class of k1",
        "mem://down.tar#@4096: tar_samples: shard 'mem://down.tar': reading at byte 4096 failed: "
        "busy (read 5)"};
    BOOST_TEST(got == expected, boost::test_tools::per_element());
    BOOST_TEST(flaky_failures.load() == 4);
    BOOST_TEST(down_reads.load() == 5);
}

// stop() during a remote read's retry pause (30 s here) ends it: the consumer's loop returns
// within a bound far below the pause, and no read follows (an uncut pause held the loop 30 s).
BOOST_AUTO_TEST_CASE(stop_cuts_a_remote_retry_pause_short) {
    using namespace remote_retry_test;
    const std::string tar = shard_bytes_of(2);
    std::atomic<int> reads{0};
    std::promise<void> first_failure;
    const ferry::sources::tar_options options{
        .read_remote = [&](const std::string&, std::uint64_t, std::uint64_t) -> ferry::bytes {
            if (++reads == 1) first_failure.set_value();
            throw ferry::io_error("busy");
        },
        .remote_retry = {.attempts = 3, .backoff = 30s}};
    auto pipe = ferry::from(ferry::sources::tar_samples({"mem://a.tar"}, options))
                    .map([](const ferry::sample& s) { return s.key; },
                         {.name = "key", .on_error = ferry::skip})
                    .build({.threads = 2,
                            .logger = [](ferry::log_level, std::string_view) {},
                            .max_epoch_failure_rate = 1.0});
    std::vector<std::string> got;
    std::string thrown;
    std::thread consumer([&] {
        try {
            for (auto& k : pipe) got.push_back(k);
        } catch (const std::exception& e) {
            thrown = e.what();
        }
    });
    auto failed = first_failure.get_future();
    const bool started = failed.wait_for(120s) == std::future_status::ready;
    if (started) std::this_thread::sleep_for(100ms);  // into the pause (holds either way)
    const auto t0 = std::chrono::steady_clock::now();
    pipe.stop();
    consumer.join();  // the first read happens as the epoch opens, inside the consumer's next()
    const auto took = std::chrono::steady_clock::now() - t0;
    BOOST_TEST_REQUIRE(started, "the shard was never read");
    BOOST_TEST(took < 5s, "stop() and the consumer's return took "
                              << std::chrono::duration<double>(took).count() << " s");
    BOOST_TEST(reads.load() == 1);
    BOOST_TEST(got.empty());
    BOOST_TEST(thrown.empty(), thrown);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
