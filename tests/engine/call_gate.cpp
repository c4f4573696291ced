// SPDX-License-Identifier: Apache-2.0
/// \file
/// The call gate on its own (engine/call_gate.hpp): at most `limit` entries run, the rest wait in
/// arrival order; a raised limit starts waiting entries at once, a lowered one takes effect as
/// calls leave; clear() forgets an abandoned epoch's calls. No pipeline, no TBB.

#include "engine/call_gate.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace call_gate_test {

using ferry::detail::call_gate;

/// Enters `n` entries 0..n-1; returns those that started at once.
std::vector<int> enter_all(call_gate<int>& gate, int n) {
    std::vector<int> started;
    for (int i = 0; i < n; ++i) {
        if (gate.try_enter(i)) started.push_back(i);
    }
    return started;
}

/// What `leave` hands on: the entry that takes the slot, or `none`.
constexpr int none = -1;
int left(call_gate<int>& gate, call_gate<int>::admit how = call_gate<int>::within_limit) {
    return gate.leave(how).value_or(none);
}

}  // namespace call_gate_test

using namespace call_gate_test;

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(gate)

// At most `limit` entries start; the rest wait, and the count of both is what the monitor reads.
BOOST_AUTO_TEST_CASE(starts_at_most_limit_and_queues_the_rest) {
    call_gate<int> gate(3);
    BOOST_TEST(enter_all(gate, 5) == (std::vector<int>{0, 1, 2}));
    BOOST_TEST(gate.running() == 3);
    BOOST_TEST(gate.waiting() == 2u);
    BOOST_TEST(gate.limit() == 3);
}

// A call that leaves hands its slot to the entry that waited longest (input order is kept).
BOOST_AUTO_TEST_CASE(leave_starts_waiting_entries_in_arrival_order) {
    call_gate<int> gate(1);
    BOOST_TEST(enter_all(gate, 4) == (std::vector<int>{0}));
    BOOST_TEST(left(gate) == 1);
    BOOST_TEST(left(gate) == 2);
    BOOST_TEST(left(gate) == 3);
    BOOST_TEST(gate.running() == 1);
    BOOST_TEST(left(gate) == none);
    BOOST_TEST(gate.running() == 0);
    BOOST_TEST(gate.waiting() == 0u);
}

// A raised limit returns the waiting entries it lets start, oldest first, and counts them.
BOOST_AUTO_TEST_CASE(raised_limit_starts_waiting_entries_at_once) {
    call_gate<int> gate(1);
    enter_all(gate, 5);
    BOOST_TEST(gate.set_limit(3) == (std::vector<int>{1, 2}));
    BOOST_TEST(gate.running() == 3);
    BOOST_TEST(gate.waiting() == 2u);
    BOOST_TEST(gate.limit() == 3);
}

// A lowered limit stops no call: slots close as calls leave, until running is under it.
BOOST_AUTO_TEST_CASE(lowered_limit_takes_effect_as_calls_leave) {
    call_gate<int> gate(3);
    enter_all(gate, 5);  // 0, 1, 2 run; 3, 4 wait
    BOOST_TEST(gate.set_limit(1).empty());
    BOOST_TEST(gate.running() == 3);
    BOOST_TEST(left(gate) == none);  // 3 -> 2 running
    BOOST_TEST(left(gate) == none);  // 2 -> 1
    BOOST_TEST(left(gate) == 3);     // at the limit: the slot passes on
    BOOST_TEST(gate.running() == 1);
    BOOST_TEST(!gate.try_enter(9));  // full: queued behind 4
    BOOST_TEST(left(gate) == 4);
    BOOST_TEST(left(gate) == 9);
    BOOST_TEST(left(gate) == none);
    BOOST_TEST(gate.running() == 0);
}

// An epoch being cancelled drains the queue whatever the limit: entries start past it.
BOOST_AUTO_TEST_CASE(draining_enters_and_starts_past_the_limit) {
    call_gate<int> gate(1);
    enter_all(gate, 3);  // 0 runs; 1, 2 wait
    BOOST_TEST(gate.try_enter(7, call_gate<int>::past_limit));
    BOOST_TEST(gate.running() == 2);
    BOOST_TEST(left(gate, call_gate<int>::past_limit) == 1);
    BOOST_TEST(left(gate, call_gate<int>::past_limit) == 2);
    BOOST_TEST(left(gate, call_gate<int>::past_limit) == none);
    BOOST_TEST(gate.running() == 1);
}

// clear() (an abandoned epoch's reclaim) forgets running and waiting entries, keeps the limit.
BOOST_AUTO_TEST_CASE(clear_forgets_running_and_waiting_keeps_limit) {
    call_gate<std::shared_ptr<std::string>> gate(1);
    auto a = std::make_shared<std::string>("a");
    auto b = std::make_shared<std::string>("b");
    BOOST_TEST(gate.try_enter(a));
    BOOST_TEST(!gate.try_enter(b));
    BOOST_TEST(b.use_count() == 2);  // the gate holds a waiting entry
    gate.clear();
    BOOST_TEST(b.use_count() == 1);  // and lets go of it
    BOOST_TEST(gate.running() == 0);
    BOOST_TEST(gate.waiting() == 0u);
    BOOST_TEST(gate.limit() == 1);
    BOOST_TEST(gate.try_enter(b));
}

// Many threads entering and leaving at once, while the limit moves: never more than the
// limit's largest value run, every entry starts exactly once, and the gate ends empty.
BOOST_AUTO_TEST_CASE(many_threads_keep_running_within_the_limit) {
    constexpr int threads = 8;
    constexpr int per_thread = 500;
    constexpr int top = 4;
    call_gate<int> gate(top);
    std::atomic<int> inside{0};
    std::atomic<int> most{0};
    std::vector<std::atomic<int>> started(threads * per_thread);
    // A started entry runs "its call" and leaves; what leave hands over runs on the same thread.
    auto run = [&](int entry) {
        std::optional<int> next = entry;
        while (next) {
            started[static_cast<std::size_t>(*next)].fetch_add(1);
            const int now = inside.fetch_add(1) + 1;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {
            }
            std::this_thread::yield();
            inside.fetch_sub(1);
            next = gate.leave();
        }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const int entry = t * per_thread + i;
                if (gate.try_enter(entry)) run(entry);
                // One thread moves the limit between 2 and `top` now and then.
                if (t == 0 && i % 100 == 0) {
                    for (int e : gate.set_limit(i % 200 == 0 ? 2 : top)) run(e);
                }
            }
        });
    }
    for (auto& th : pool) th.join();
    // Whatever still waits (a lowered limit left it queued) starts now.
    for (int e : gate.set_limit(top)) run(e);
    BOOST_TEST(most.load() <= top);
    BOOST_TEST(gate.running() == 0);
    BOOST_TEST(gate.waiting() == 0u);
    int once = 0;
    for (auto& s : started) once += s.load() == 1 ? 1 : 0;
    BOOST_TEST(once == threads * per_thread);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
