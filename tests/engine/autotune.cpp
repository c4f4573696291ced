// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner at run time (`ferry::tuned`, `pipeline_options::autotune`), in what does not depend
/// on how fast the machine runs: the memory budget kept (what it counts sampled throughout, the
/// items that exist counted by the test itself, with and without fast_start), a budget the
/// pipeline's shape cannot keep named at the first measurement, the first decision made at the
/// first output, what cannot work refused at build(). The cases judged by rates measured on the
/// clock are in autotune_wallclock.cpp (ctest label `autotune_wallclock`, the Release build).

#include <time.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ferry/ferry.hpp"
#include "resume_support.hpp"

namespace autotune_test {

using namespace std::chrono_literals;
using resume_test::expect_saying;

std::vector<int> many() {
    return resume_test::iota_vec(200000);
}

/// A value that holds 1 MiB and counts how many hold their bytes now (made or copied, not yet
/// destroyed or moved from) and the most that ever did: what the items in flight really hold,
/// counted by the test itself (unlike `ferry_test::counted_value`, a moved-from one holds
/// nothing and does not count).
struct blob {
    static constexpr std::size_t bytes = 1 << 20;
    static inline std::atomic<int> live{0};
    static inline std::atomic<int> most{0};
    std::vector<char> data;

    explicit blob(int x) : data(bytes, static_cast<char>(x)) { made(); }
    blob(const blob& o) : data(o.data) {
        if (!data.empty()) made();
    }
    blob(blob&& o) noexcept : data(std::exchange(o.data, {})) {}
    blob& operator=(const blob& o) {
        if (this != &o) *this = blob(o);
        return *this;
    }
    blob& operator=(blob&& o) noexcept {
        if (this != &o) {
            if (!data.empty()) --live;
            data = std::exchange(o.data, {});
        }
        return *this;
    }
    ~blob() {
        if (!data.empty()) --live;
    }
    static void made() {
        const int now = ++live;
        for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
        }
    }
    /// The bytes the memory budget counts for it (`ferry::byte_size` finds it).
    friend std::size_t ferry_byte_size(const blob& b) { return b.data.size(); }
};

/// A slow stage that makes a blob small again: 1 ms, then its first byte.
int shrink(const blob& b) {
    std::this_thread::sleep_for(1ms);
    return static_cast<int>(b.data[0]);
}

/// What a loop over ints made from blobs saw, sampled at each output: the outputs, the most
/// bytes the budget counted, the highest in_flight.
struct budget_seen {
    std::size_t taken = 0;
    std::uint64_t counted = 0;
    std::size_t worst = 0;
};

/// Takes every output of `p`, `per_item` for each source item i, each i's first byte (in order).
template <class Pipeline>
budget_seen take_counting(Pipeline& p, std::size_t per_item) {
    budget_seen seen;
    for (const int x : p) {
        BOOST_TEST_REQUIRE(x == static_cast<char>(seen.taken / per_item));
        ++seen.taken;
        seen.counted = std::max(seen.counted, p.stats().bytes_in_flight);
        seen.worst = std::max(seen.worst, p.stats().in_flight);
    }
    return seen;
}

/// The blobs alive now, and the most alive from now on starts there.
int count_blobs_from_now() {
    blob::most = blob::live.load();
    return blob::live.load();
}

/// The 16 MiB budget of a pipeline of 300 items of `per_item` blobs each, shrunk to ints:
/// every output in order, counted at no less than an item's blobs and no more than the budget,
/// in_flight at most what the budget holds of them, and at most 16 blobs alive at once since
/// `before` beyond the `slack` that calls may be making.
template <class Pipeline>
void expect_within_16_mib(Pipeline& p, std::size_t per_item, int before, int slack) {
    const auto seen = take_counting(p, per_item);
    BOOST_TEST(seen.taken == 300 * per_item);
    BOOST_TEST(seen.counted >= per_item * blob::bytes, "the budget counted " << seen.counted);
    BOOST_TEST(seen.counted <= 16 * blob::bytes);
    BOOST_TEST(seen.worst <= 16 / per_item, "in_flight reached " << seen.worst);
    BOOST_TEST(blob::most.load() - before <= 16 + slack,
               blob::most.load() - before << " blobs of 1 MiB existed at once under 16 MiB");
}

}  // namespace autotune_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(autotune)
using namespace autotune_test;

// Items of 1 MB under a memory budget of 16 MB: in_flight is set from the first output's bytes
// (before the source fills the pipeline) to what the budget holds, and every sample of it
// afterwards keeps the items in flight within the budget.
BOOST_AUTO_TEST_CASE(keeps_the_bytes_in_flight_within_the_memory_budget) {
    const std::size_t mb = 1'000'000;
    auto p = ferry::from(many())
                 .map([mb](int x) { return std::vector<char>(mb, static_cast<char>(x)); },
                      {.concurrency = ferry::tuned(1, 2), .name = "make"})
                 .build({.autotune = ferry::autotune{.memory_budget = 16 * mb, .interval = 50ms}});
    std::size_t worst = 0;
    std::size_t n = 0;
    for (auto& v : p) {
        BOOST_TEST_REQUIRE(v.size() == mb);
        worst = std::max(worst, p.stats().in_flight);
        if (++n == 600) break;
    }
    // 16 MB over 1 MB and change an item: 15 source items in flight at most.
    BOOST_TEST(worst * (mb + sizeof(std::vector<char>)) <= 16 * mb, "in_flight reached " << worst);
    BOOST_TEST(worst >= 1U);
}

// A budget smaller than one output: the epoch ends with an error naming both numbers.
BOOST_AUTO_TEST_CASE(a_memory_budget_below_one_output_is_an_error) {
    auto p = ferry::from(many())
                 .map([](int x) { return std::vector<char>(100'000, static_cast<char>(x)); },
                      ferry::tuned)
                 .batch(8)
                 .build({.autotune = ferry::autotune{.memory_budget = 500'000}});
    expect_saying<ferry::invalid_argument>(
        [&] {
            for (auto& b : p) (void)b;
        },
        "autotune: memory_budget = 500000 bytes (0.5 MB) cannot be kept: the pipeline holds at "
        "least 8 source items at once (batch 'batch#2' fills batches of 8 elements), and at "
        "100027 bytes an item (measured) they hold 800216 bytes (0.8 MB)");
}

// batch_by's window holds 16 items of 1 MiB: a budget of 8 MiB cannot be kept whatever
// in_flight is. The first measurement (the first output) ends the epoch with an error naming
// the budget, the least the shape holds and what holds it; nothing is delivered after it.
BOOST_AUTO_TEST_CASE(a_budget_below_what_the_shape_holds_is_an_error_naming_both) {
    auto p = ferry::from(resume_test::iota_vec(64))
                 .map([](int x) { return blob(x); }, {.concurrency = ferry::tuned(1, 2)})
                 .batch_by([](const blob&) { return 1.0; },
                           {.max_cost = 4, .buffer = 16, .name = "group"})
                 .build({.autotune = ferry::autotune{.memory_budget = 8 * blob::bytes}});
    std::size_t taken = 0;
    expect_saying<ferry::invalid_argument>(
        [&] {
            for (auto& b : p) taken += b.size();
        },
        "autotune: memory_budget = 8388608 bytes (8.4 MB) cannot be kept: the pipeline holds at "
        "least 16 source items at once (batch_by 'group' holds a window of 16 elements), and at "
        "1048582 bytes an item (measured) they hold 16777312 bytes (16.8 MB); raise "
        "memory_budget to that or hold fewer items");
    BOOST_TEST(taken <= 16U, "items delivered after the budget was known to fail: " << taken);
    BOOST_CHECK_THROW((void)p.next(), ferry::invalid_argument);  // the pipeline stays failed
}

// Items of 1 MiB through batch_by (windows of 8, batches of 4) under a budget of 24 MiB that
// the shape can meet: the bytes the budget counts, sampled at every output, never pass it, and
// at no time do more items exist than the budget holds (the test counts them itself) plus the
// batch the loop holds, with or without fast_start (the source waits for the first
// measurement either way).
BOOST_AUTO_TEST_CASE(keeps_what_the_items_hold_within_a_budget_the_shape_can_meet) {
    for (const bool fast_start : {true, false}) {
        blob::most = blob::live.load();
        const int before = blob::live.load();
        auto p = ferry::from(resume_test::iota_vec(400))
                     .map([](int x) { return blob(x); }, {.concurrency = ferry::tuned(1, 2)})
                     .batch_by([](const blob&) { return 1.0; }, {.max_cost = 4, .buffer = 8})
                     .build({.fast_start = fast_start,
                             .autotune = ferry::autotune{.memory_budget = 24 * blob::bytes,
                                                         .interval = 20ms}});
        std::size_t taken = 0;
        std::uint64_t counted = 0;
        for (auto& b : p) {
            taken += b.size();
            counted = std::max(counted, p.stats().bytes_in_flight);
        }
        BOOST_TEST(taken == 400U);
        // What the budget counts (every item in flight at the bytes an item was measured to
        // hold) never passed it, and did count something.
        BOOST_TEST(counted <= 24 * blob::bytes);
        BOOST_TEST(counted >= 4 * blob::bytes);
        // 24 in flight at most (the budget over 1 MiB and the batch's share of its vector),
        // and the batch of 4 the loop holds.
        BOOST_TEST(blob::most.load() - before <= 24 + 4,
                   "fast_start " << fast_start << ": " << blob::most.load() - before
                                 << " items of 1 MiB existed at once under a 24 MiB budget");
    }
}

// An item is counted at its largest form, not at the size it leaves with: a first stage makes
// each item a blob of 1 MiB and a slower second stage shrinks it to an int, so the blobs wait
// between the two. Under a budget of 16 MiB, in_flight is sized from the blobs (what the budget
// counts is at least one blob), and no more blobs than the budget holds exist at once (the test
// counts them itself). Measured at the consumer alone (an int a source item), the budget
// counted 8 bytes an item and in_flight rose to 64.
BOOST_AUTO_TEST_CASE(an_item_counts_at_its_largest_form_between_stages) {
    const int before = count_blobs_from_now();
    auto p = ferry::from(resume_test::iota_vec(300))
                 .map([](int x) { return blob(x); }, {.concurrency = 2, .name = "grow"})
                 .map(shrink, {.concurrency = 1, .name = "shrink"})
                 .build({.autotune =
                             ferry::autotune{.memory_budget = 16 * blob::bytes, .interval = 20ms}});
    // 16 in flight at most, and the one a call of "grow" may have made before its item counted.
    expect_within_16_mib(p, 1, before, 2);
}

// A flat_map's outputs count together, as its input's form: each int expands into 4 blobs of
// 1 MiB that a slower stage on the I/O executor shrinks to ints, so a source item holds 4 MiB
// between the two. Under a budget of 16 MiB, in_flight is 4 source items and no more blobs than
// the budget holds exist at once (with the 8 the flat_map's two calls may be making). Measured
// at the consumer alone, the budget counted 1 KiB at most, in_flight rose to 64 and 260 blobs
// existed at once. With the stages measured only in the intervals in which one of their calls
// ended, in_flight reached 64 in 2 of 15 runs on a loaded machine.
BOOST_AUTO_TEST_CASE(a_flat_maps_outputs_count_together_as_their_input) {
    const int before = count_blobs_from_now();
    auto p = ferry::from(resume_test::iota_vec(300))
                 .flat_map(
                     [](int x) {
                         std::vector<blob> v;
                         for (int i = 0; i < 4; ++i) v.emplace_back(x);
                         return v;
                     },
                     {.concurrency = 2, .name = "expand"})
                 .map(shrink, {.concurrency = 1, .name = "shrink", .executor = ferry::io})
                 .build({.autotune =
                             ferry::autotune{.memory_budget = 16 * blob::bytes, .interval = 20ms}});
    expect_within_16_mib(p, 4, before, 8);
}

// An item counts at the size the source made it too: a generator makes blobs of 1 MiB that a
// slower stage on the I/O executor shrinks to ints, so the blobs wait before it. Under a budget
// of 16 MiB, in_flight stays at 16 and so do the blobs. Measured at the stages' outputs and the
// consumer alone, the budget counted 256 bytes an item, and in_flight and the blobs at once
// rose to 64.
BOOST_AUTO_TEST_CASE(an_item_counts_at_the_size_the_source_made_it) {
    const int before = count_blobs_from_now();
    auto p = ferry::from([i = 0]() mutable -> std::optional<blob> {
                 if (i == 300) return std::nullopt;
                 return blob(i++);
             })
                 .map(shrink, {.concurrency = 1, .name = "shrink", .executor = ferry::io})
                 .build({.autotune =
                             ferry::autotune{.memory_budget = 16 * blob::bytes, .interval = 20ms}});
    expect_within_16_mib(p, 1, before, 2);
}

// The consumer's own work between two next() calls is counted apart while the tuner runs
// (stats' consumer_cpu, which the CPU budget leaves out): 40 outputs with 5 ms of the loop's
// CPU after each count at least 200 ms, and no more than the process used. Without the tuner
// it is not measured.
BOOST_AUTO_TEST_CASE(the_consumers_cpu_between_calls_is_counted_apart) {
    for (const bool tuned : {true, false}) {
        auto p =
            ferry::from(resume_test::iota_vec(40))
                .map([](int x) { return x; }, {.concurrency = tuned ? int(ferry::tuned(1, 2)) : 2})
                .build({.threads = 2});
        timespec a{}, b{};
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        int expected = 0;
        for (const int x : p) {
            BOOST_TEST_REQUIRE(x == expected++);
            ferry_test::spin_thread_cpu(5ms);
        }
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        const auto process = std::chrono::seconds(b.tv_sec - a.tv_sec) +
                             std::chrono::nanoseconds(b.tv_nsec - a.tv_nsec);
        const auto spent = p.stats().consumer_cpu;
        if (tuned) {
            BOOST_TEST(spent >= 200ms, spent.count() << " ns counted");
            BOOST_TEST(spent <= process, spent.count() << " ns counted of " << process.count());
        } else {
            BOOST_TEST(spent.count() == 0);
        }
    }
}

// The first decision comes at the epoch's first output, not an interval later: decode, one
// slot holding up the first batch of 8, is raised then (from 1) although the interval is a
// minute. (The first output: a few hundred ms; the test waits for the decision as long as it
// takes and holds it to half the interval.)
BOOST_AUTO_TEST_CASE(the_first_decision_comes_at_the_first_output) {
    auto p = ferry::from(many())
                 .map(
                     [](int x) {
                         std::this_thread::sleep_for(20ms);
                         return x;
                     },
                     {.concurrency = ferry::tuned(1, 4), .name = "decode", .executor = ferry::io})
                 .batch(8)
                 .build({.autotune = ferry::autotune{.interval = 60s}});
    auto it = p.begin();
    BOOST_TEST_REQUIRE(it->size() == 8U);
    ferry::pipeline_stats s = p.stats();
    while (s.tuning.empty()) {
        std::this_thread::sleep_for(1ms);
        s = p.stats();
    }
    const auto& first = s.tuning.front();
    BOOST_TEST(first.stage == "decode");
    BOOST_TEST(first.from == 1);
    BOOST_TEST(first.to > 1);
    BOOST_TEST(first.at - s.first_output < 30s,
               "decided " << std::chrono::duration<double>(first.at - s.first_output).count()
                          << " s after the first output");
}

// What cannot work is refused when the pipeline is built, saying why.
BOOST_AUTO_TEST_CASE(refuses_budgets_and_ranges_that_cannot_work) {
    const auto b = ferry::from(many());
    const auto id = [](int x) { return x; };
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)b.map(id, ferry::tuned).build({.autotune = ferry::autotune{.cpu_budget = 0.5}});
        },
        "autotune.cpu_budget = 0.500000 cores: give at least 1 core");
    expect_saying<ferry::invalid_argument>([&] { (void)b.map(id, ferry::tuned(5, 2)).build(); },
                                           "ferry::tuned(5, 2) needs 1 <= lo <= hi <= 4096");
    expect_saying<ferry::invalid_argument>([&] { (void)b.map(id, ferry::tuned(0, 4)).build(); },
                                           "ferry::tuned(0, 4) needs 1 <= lo <= hi");
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)b.map(id, ferry::tuned)
                .build({.threads = 4, .autotune = ferry::autotune{.cpu_budget = 2}});
        },
        "threads = 4 is more than autotune.cpu_budget = 2.000000 cores");
    expect_saying<ferry::invalid_argument>(
        [&] { (void)b.map(id, {.concurrency = ferry::tuned, .timeout = 1s}).build(); },
        "ferry::tuned applies to map, filter and flat_map stages without a timeout");
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)b.map(id, ferry::tuned).build({.autotune = ferry::autotune{.interval = 5ms}});
        },
        "autotune.interval = 5 ms: at least 10 ms");
    // A tuned stage is an int of the reserved range; an ordinary negative one is still refused.
    expect_saying<ferry::invalid_argument>([&] { (void)b.map(id, -3).build(); },
                                           "concurrency must be at least 1, got -3");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
