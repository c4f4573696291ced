// SPDX-License-Identifier: Apache-2.0
/// \file
/// The output's one-at-a-time body on its own (engine/serial_combiner.hpp): a message brought
/// while another thread runs the body is run by that thread before it lets go, oldest first;
/// under four threads bringing messages at once the body never runs twice at a time and runs
/// every message exactly once. No pipeline, no TBB.

#include "engine/serial_combiner.hpp"

#include "support.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace combiner_test {

using ferry::detail::box;
using ferry::detail::msg;
using ferry::detail::serial_combiner;

/// Boxes numbered 0..n-1 in `seq`.
std::vector<box> numbered_boxes(std::size_t n) {
    std::vector<box> boxes(n);
    for (std::size_t i = 0; i < n; ++i) boxes[i].seq = i;
    return boxes;
}

/// Whether `flag` came up within the suite's bounded wait (support.hpp's `wait_until`).
bool set_in_time(const std::atomic<bool>& flag) {
    return wait_until([&flag] { return flag.load(); });
}

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(serial_combiner_suite)

BOOST_AUTO_TEST_CASE(messages_left_while_the_body_runs_are_run_by_its_thread_oldest_first) {
    serial_combiner c;
    auto boxes = numbered_boxes(4);
    std::vector<std::uint64_t> order;  // written by the body only
    std::vector<std::thread::id> ran_on;
    std::atomic<bool> first_running{false};
    std::atomic<bool> others_left{false};
    const auto body = [&](msg m) noexcept {
        order.push_back(m->seq);
        ran_on.push_back(std::this_thread::get_id());
        if (m->seq == 0) {
            first_running.store(true);
            (void)set_in_time(others_left);  // late: the order below shows it
        }
    };
    std::thread runner([&] { c.run(&boxes[0], body); });
    BOOST_TEST(set_in_time(first_running));
    // The body is busy with message 0: these three are left, and run() returns at once.
    for (std::size_t i = 1; i < 4; ++i) c.run(&boxes[i], body);
    const std::thread::id runner_id = runner.get_id();
    others_left.store(true);
    runner.join();
    BOOST_TEST(order == (std::vector<std::uint64_t>{0, 1, 2, 3}), boost::test_tools::per_element());
    for (const auto& id : ran_on) BOOST_TEST((id == runner_id));
    BOOST_TEST(c.empty());
    for (const auto& b : boxes) BOOST_TEST(b.link == nullptr);
}

BOOST_AUTO_TEST_CASE(a_free_body_runs_on_the_thread_that_brings_the_message) {
    serial_combiner c;
    auto boxes = numbered_boxes(3);
    std::vector<std::uint64_t> order;
    for (auto& b : boxes) c.run(&b, [&](msg m) noexcept { order.push_back(m->seq); });
    BOOST_TEST(order == (std::vector<std::uint64_t>{0, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(c.empty());
}

BOOST_AUTO_TEST_CASE(four_threads_at_once_run_every_message_once_and_one_at_a_time) {
    constexpr std::size_t threads = 4;
    constexpr std::size_t per_thread = 20'000;
    serial_combiner c;
    auto boxes = numbered_boxes(threads * per_thread);
    std::vector<int> runs(boxes.size(), 0);  // plain ints: TSan sees a body that overlaps
    std::uint64_t total = 0;
    std::atomic<bool> inside{false};
    std::atomic<int> overlaps{0};
    std::atomic<std::uint64_t> run_elsewhere{0};  // run by a thread that did not bring it
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            (void)set_in_time(go);
            for (std::size_t i = 0; i < per_thread; ++i) {
                c.run(&boxes[t * per_thread + i], [&](msg m) noexcept {
                    if (inside.exchange(true)) overlaps.fetch_add(1);
                    ++runs[m->seq];
                    total += m->seq;
                    if (m->seq / per_thread != t) {
                        run_elsewhere.fetch_add(1, std::memory_order_relaxed);
                    }
                    inside.store(false);
                });
            }
        });
    }
    go.store(true);
    for (auto& th : pool) th.join();
    BOOST_TEST(overlaps.load() == 0);
    std::size_t once = 0;
    for (const int r : runs) once += r == 1 ? 1 : 0;
    BOOST_TEST(once == boxes.size());
    const std::uint64_t n = boxes.size();
    BOOST_TEST(total == n * (n - 1) / 2);
    BOOST_TEST(c.empty());
    BOOST_TEST_MESSAGE(
        "messages run by another thread than the one that brought them: " << run_elsewhere.load());
}

BOOST_AUTO_TEST_CASE(no_message_is_stranded_when_threads_bring_them_at_the_same_moment) {
    // Rounds in which three threads bring one message each at once; once all three run() calls
    // have returned, all three messages have run (one left just as the running thread let go
    // would otherwise wait for the next message, and an epoch's end for ever).
    constexpr std::size_t threads = 3;
    constexpr std::size_t rounds = 5'000;
    serial_combiner c;
    auto boxes = numbered_boxes(threads * rounds);
    std::atomic<std::size_t> round{0};
    std::atomic<std::size_t> returned{0};
    std::atomic<std::size_t> ran{0};
    std::atomic<bool> quit{false};
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (std::size_t r = 1; r <= rounds; ++r) {
                while (round.load() < r) {
                    if (quit.load()) return;
                    std::this_thread::yield();
                }
                c.run(&boxes[(r - 1) * threads + t],
                      [&](msg) noexcept { ran.fetch_add(1, std::memory_order_relaxed); });
                returned.fetch_add(1);
            }
        });
    }
    std::size_t stranded_rounds = 0;
    for (std::size_t r = 1; r <= rounds; ++r) {
        round.store(r);
        while (returned.load() < r * threads) std::this_thread::yield();
        if (ran.load() != r * threads) {
            ++stranded_rounds;
            break;
        }
    }
    quit.store(true);
    round.store(rounds + 1);
    for (auto& th : pool) th.join();
    BOOST_TEST(stranded_rounds == 0u);
    BOOST_TEST(ran.load() == threads * rounds);
    BOOST_TEST(c.empty());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

}  // namespace combiner_test
