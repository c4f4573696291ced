// SPDX-License-Identifier: Apache-2.0
/// \file
/// arena_threads (engine/arena_threads.hpp) on a bare oneTBB arena: with threads parked, the
/// arena runs its tasks on the others only (the most running at once is counted); let go, the
/// threads work again; close() returns with every parking task gone.

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "engine/arena_threads.hpp"

namespace arena_threads_test {

using namespace std::chrono_literals;

/// An arena of three threads (the process may have four workers, whatever the machine).
struct three_threads {
    tbb::global_control workers{tbb::global_control::max_allowed_parallelism, 4};
    tbb::task_arena arena{3, 0};
    ferry::detail::arena_threads threads{
        3, [this](std::function<void()> f) { arena.enqueue(std::move(f)); }};

    ~three_threads() { threads.close(); }

    /// Waits (at most 10 s) until `n` threads are parked.
    bool parked(int n) const {
        const auto until = std::chrono::steady_clock::now() + 10s;
        while (threads.parked() != n) {
            if (std::chrono::steady_clock::now() > until) return false;
            std::this_thread::sleep_for(1ms);
        }
        return true;
    }

    /// Runs 12 tasks of 20 ms on the arena (enqueued: the caller does not join it) and returns
    /// the most that ran at once, or -1 when they did not end within 20 s.
    int most_at_once() {
        std::mutex m;
        std::condition_variable cv;
        int running = 0, most = 0, done = 0;
        constexpr int tasks = 12;
        for (int i = 0; i < tasks; ++i) {
            arena.enqueue([&] {
                {
                    std::lock_guard lock(m);
                    most = std::max(most, ++running);
                }
                std::this_thread::sleep_for(20ms);
                std::lock_guard lock(m);
                --running;
                ++done;
                cv.notify_all();
            });
        }
        std::unique_lock lock(m);
        if (!cv.wait_for(lock, 20s, [&] { return done == tasks; })) return -1;
        return most;
    }
};

}  // namespace arena_threads_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(arena_threads_parking)
using namespace arena_threads_test;

// Two of three threads parked: the tasks run one at a time; let go, several at once again.
BOOST_AUTO_TEST_CASE(parked_threads_run_no_tasks) {
    three_threads a;
    BOOST_TEST(a.threads.threads() == 3);
    BOOST_TEST(a.threads.active() == 3);
    a.threads.set(1);
    BOOST_TEST(a.threads.active() == 1);
    BOOST_TEST_REQUIRE(a.parked(2));
    BOOST_TEST(a.most_at_once() == 1);
    a.threads.set(3);
    BOOST_TEST_REQUIRE(a.parked(0));
    BOOST_TEST(a.most_at_once() >= 2);
}

// set() clamps to 1 up to the arena's threads; release() lets every thread go until the next
// set(), which parks them again; after close() nothing parks.
BOOST_AUTO_TEST_CASE(release_set_and_close) {
    three_threads a;
    a.threads.set(0);
    BOOST_TEST(a.threads.active() == 1);
    BOOST_TEST_REQUIRE(a.parked(2));
    a.threads.set(2);
    BOOST_TEST_REQUIRE(a.parked(1));
    a.threads.release();
    BOOST_TEST_REQUIRE(a.parked(0));
    BOOST_TEST(a.threads.active() == 2);
    a.threads.set(a.threads.active());
    BOOST_TEST_REQUIRE(a.parked(1));
    a.threads.close();
    BOOST_TEST(a.threads.parked() == 0);
    a.threads.set(1);
    std::this_thread::sleep_for(50ms);
    BOOST_TEST(a.threads.parked() == 0);
    BOOST_TEST(a.most_at_once() >= 2);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
