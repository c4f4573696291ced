// SPDX-License-Identifier: Apache-2.0
/// \file
/// Runs an op on an input that never delivers (a FIFO without a writer, or whose writer stalls)
/// inside a pipeline, ends the pipeline with stop() or by destroying it, and reports how long
/// that took and how the blocked call ended: the shared body of the ops' cancellation cases.
#pragma once

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ops_test {

/// How a case ends the pipeline whose call is blocked.
enum class ending : std::uint8_t { stop, destroy };

/// How long stop() or destruction may take to end a call that would otherwise block for 10 s or
/// for ever: the ops see a cancellation within a 50 ms poll slice; this is ten of them, for
/// loaded and sanitizer builds.
inline constexpr auto cancel_bound = std::chrono::milliseconds(500);

/// What `end_blocked_call` saw.
struct blocked_call_end {
    bool started = false;         ///< the blocked call was running when the pipeline was ended
    double loop_ms = 0;           ///< from being asked to the loop's end (stop only)
    double destroy_ms = 0;        ///< from being asked to the pipeline's destruction
    std::uint64_t delivered = 0;  ///< outputs after the first (stop only; none expected)
    bool accounted =
        true;  ///< nothing pending, produced == delivered + filtered + failed + cancelled
    ferry::errc code = ferry::errc::io;  ///< the blocked call's error (io if it threw none)
    std::string message;                 ///< ... and its message
};

/// Runs `call` over {`first`, `blocked`} on an I/O thread (concurrency 1, skip), takes the first
/// output, waits until the call on `blocked` has run for `waiting`, then ends the pipeline as
/// `how` says, timing it.
template <class Out>
blocked_call_end end_blocked_call(std::function<Out(const std::filesystem::path&)> call,
                                  const std::filesystem::path& first,
                                  const std::filesystem::path& blocked, ending how,
                                  std::chrono::milliseconds waiting) {
    using steady = std::chrono::steady_clock;
    const auto ms = [](steady::duration d) {
        return std::chrono::duration<double, std::milli>(d).count();
    };
    blocked_call_end r;
    std::atomic<int> calls{0};
    std::mutex mutex;
    auto build = [&] {
        return ferry::from(std::vector<std::filesystem::path>{first, blocked})
            .map(
                [&](const std::filesystem::path& path) {
                    ++calls;
                    try {
                        return call(path);
                    } catch (const ferry::error& e) {
                        const std::lock_guard lock(mutex);
                        r.code = e.code();
                        r.message = e.what();
                        throw;
                    }
                },
                {.name = "read", .on_error = ferry::skip, .executor = ferry::io})
            .build({.threads = 1,
                    .logger = [](ferry::log_level, std::string_view) {},
                    .max_epoch_failure_rate = 1.0});
    };
    std::optional<decltype(build())> p(build());
    (void)p->next();  // the first output ends the engine's fast start; the blocked call begins
    const auto until = steady::now() + std::chrono::seconds(10);
    while (calls.load() < 2 && steady::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    r.started = calls.load() == 2;
    std::this_thread::sleep_for(waiting);
    steady::time_point asked;
    if (how == ending::stop) {
        std::thread stopper([&] {
            asked = steady::now();
            p->stop();
        });
        for (const auto& out : *p) {
            (void)out;
            ++r.delivered;
        }
        stopper.join();
        r.loop_ms = ms(steady::now() - asked);
        // The cancelled call's item is pending until the call returns; then every item has
        // ended somewhere (polled: the call notices the stop within ferry's ~50 ms slice).
        auto s = p->stats();
        for (const auto by = steady::now() + cancel_bound; s.pending > 0 && steady::now() < by;
             s = p->stats()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        r.accounted =
            s.pending == 0 && s.produced == s.delivered + s.filtered + s.failed + s.cancelled;
    } else {
        asked = steady::now();
    }
    p.reset();
    r.destroy_ms = ms(steady::now() - asked);
    const std::lock_guard lock(mutex);
    return r;
}

/// The checks every case makes of what `end_blocked_call` saw: the call was running, the loop
/// and the destruction each ended within `cancel_bound`, nothing more was delivered, every item
/// is accounted for, and the call ended with errc::cancelled and `message`.
inline void check_ended_cancelled(const blocked_call_end& r, const std::string& message) {
    BOOST_TEST(r.started);
    BOOST_TEST(r.loop_ms < static_cast<double>(cancel_bound.count()));
    BOOST_TEST(r.destroy_ms < static_cast<double>(cancel_bound.count()));
    BOOST_TEST(r.delivered == 0u);
    BOOST_TEST(r.accounted);
    BOOST_TEST((r.code == ferry::errc::cancelled), r.message);
    BOOST_TEST(r.message == message);
}

}  // namespace ops_test
