// SPDX-License-Identifier: Apache-2.0
/// \file
/// The hand-off on its own (engine/handoff.hpp): a producer thread pushes bursts with random
/// pauses while the consumer alternates spinning and sleeping in `wait`; every message arrives,
/// once, in order, and no wake-up is lost. No pipeline, no TBB.

#include "engine/handoff.hpp"

#include "engine/asymmetric_fence.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace handoff_test {

using ferry::detail::box;
using ferry::detail::msg;
using namespace std::chrono_literals;

/// What a stress run saw.
struct stress_result {
    std::uint64_t received = 0;   ///< messages the consumer took
    std::uint64_t misplaced = 0;  ///< messages taken out of order (or twice)
    std::uint64_t sleeps = 0;     ///< times the consumer slept in wait()
    bool stalled = false;         ///< the watchdog found no progress and interrupted the run
    std::uint64_t pushed_at_stall = 0;
};

/// A pause of 0–50 µs: half of them busy (the consumer's spin may catch the next push), half in
/// sleep_for (the consumer has gone to sleep by then).
void handoff_pause(std::mt19937& rng) {
    const auto us = std::uniform_int_distribution<int>(0, 50)(rng);
    if (us % 2 == 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
        while (std::chrono::steady_clock::now() < until) {
        }
    } else {
        std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
}

/// Pushes `total` messages (`&boxes[i]`, in order) through a hand-off of `capacity` in bursts of
/// 1..`burst_max`. After half of the bursts the producer waits until the consumer has taken
/// everything, so a lost wake-up (the consumer asleep with messages waiting) is a hang, not a
/// delay the next push repairs; a watchdog turns a hang (no message taken for `stall` while some
/// are waiting) into a stalled result by stopping the consumer's wait.
stress_result handoff_stress(std::size_t capacity, std::uint64_t total, int burst_max,
                             std::uint32_t seed, std::chrono::seconds stall = 30s) {
    ferry::detail::handoff q(capacity);
    std::vector<box> boxes(total);
    std::atomic<std::uint64_t> pushed{0};
    std::atomic<std::uint64_t> taken{0};
    std::atomic<bool> abandon{false};
    stress_result result;

    std::thread producer([&] {
        std::mt19937 rng(seed);
        std::uint64_t i = 0;
        while (i < total && !abandon.load()) {
            const auto burst = std::uniform_int_distribution<int>(1, burst_max)(rng);
            for (int k = 0; k < burst && i < total; ++k, ++i) {
                q.push(&boxes[i]);
                pushed.store(i + 1);
            }
            if (rng() % 2 == 0) {
                while (taken.load() != i && !abandon.load()) std::this_thread::yield();
            }
            handoff_pause(rng);
        }
    });

    std::thread consumer([&] {
        std::mt19937 rng(seed + 1);
        std::uint64_t next = 0;
        while (next < total && !abandon.load()) {
            msg m = nullptr;
            while (q.pop(m)) {
                if (m != &boxes[next]) ++result.misplaced;
                ++next;
                taken.store(next);
            }
            if (next == total) break;
            if (q.refill()) continue;
            // Spin a random while (0–64 refills), then sleep.
            const auto spins = std::uniform_int_distribution<int>(0, 64)(rng);
            bool found = false;
            for (int k = 0; k < spins && !found; ++k) {
                std::this_thread::yield();
                found = q.refill();
            }
            if (found) continue;
            ++result.sleeps;
            q.wait([&] { return abandon.load(); });
            (void)q.refill();
        }
        result.received = next;
    });

    // The watchdog: no message taken for `stall` while some are pushed and waiting.
    std::uint64_t last_taken = 0;
    auto last_progress = std::chrono::steady_clock::now();
    while (taken.load() < total) {
        std::this_thread::sleep_for(10ms);
        const auto now_taken = taken.load();
        if (now_taken != last_taken) {
            last_taken = now_taken;
            last_progress = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - last_progress > stall) {
            result.stalled = true;
            result.pushed_at_stall = pushed.load();
            abandon.store(true);
            q.interrupt();
            break;
        }
    }
    producer.join();
    consumer.join();
    q.clear();
    return result;
}

/// The failure message of a run: what arrived against what was pushed.
std::string handoff_report(const stress_result& r, std::uint64_t total) {
    std::ostringstream out;
    out << "received " << r.received << " of " << total << ", " << r.misplaced << " out of order, "
        << r.sleeps << " sleeps";
    if (r.stalled) {
        out << "; lost wake-up: the consumer slept with " << r.pushed_at_stall - r.received
            << " message(s) pushed and not taken";
    }
    return out.str();
}

/// Runs `handoff_stress` of 20000 messages through a ring of `capacity` in bursts of up to
/// `burst_max`, and checks what a user of the hand-off relies on: nothing stalled (no lost
/// wake-up), every message once and in order, and the sleep path taken (the point of the run).
void check_stress(std::size_t capacity, int burst_max, std::uint32_t seed) {
    constexpr std::uint64_t total = 20000;
    const auto r = handoff_stress(capacity, total, burst_max, seed);
    BOOST_TEST_MESSAGE(handoff_report(r, total));
    BOOST_TEST_INFO(handoff_report(r, total));
    BOOST_TEST(!r.stalled);
    BOOST_TEST(r.received == total);
    BOOST_TEST(r.misplaced == 0u);
    BOOST_TEST(r.sleeps > 0u);
}

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(handoff)

// Protects the wake-up: a consumer that goes to sleep just as the producer pushes (the Dekker
// pairing of tail_ and sleeping_, now an asymmetric fence) is always woken, and every message
// arrives once, in order.
BOOST_AUTO_TEST_CASE(bursts_with_pauses_wake_the_sleeping_consumer_every_time) {
    check_stress(64, 8, 50);
}

// Protects the overflow: bursts larger than the ring go through the overflow deque and its own
// wake-up, and still arrive once, in order, with the ring's messages first.
BOOST_AUTO_TEST_CASE(bursts_past_the_ring_arrive_in_order_and_wake_the_consumer) {
    check_stress(4, 24, 51);
}

// Protects the fast path: where the kernel offers private expedited membarrier, the hand-off uses
// it (the producer's light fence), rather than falling back to seq_cst on every push unseen.
BOOST_AUTO_TEST_CASE(the_asymmetric_fence_is_used_where_the_kernel_offers_it) {
#if defined(__linux__)
    const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    const bool offered = commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0;
    BOOST_TEST_MESSAGE("membarrier commands offered: " << commands);
    BOOST_TEST(ferry::detail::asymmetric_fence_ready() == offered);
#else
    BOOST_TEST(!ferry::detail::asymmetric_fence_ready());
#endif
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

}  // namespace handoff_test
