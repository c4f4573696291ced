// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner at run time (`ferry::tuned`, `pipeline_options::autotune`), on stages whose costs
/// are known — sleeps stand for I/O and for calls that hold a thread, a busy loop for compute —
/// so that the best setting is computable: the tuned pipeline, from a cold start, against the
/// best of a hand sweep run in the same test (a ratio, no time limit); the budgets sampled
/// throughout; a consumer slower than the loader; a stage that gets slower midway; what cannot
/// work refused at build(); the decisions in stats().

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/test/unit_test.hpp>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ferry/ferry.hpp"
#include "resume_support.hpp"

namespace autotune_test {

using namespace std::chrono_literals;
using resume_test::expect_saying;
using steady = std::chrono::steady_clock;

double seconds(steady::duration d) {
    return std::chrono::duration<double>(d).count();
}

double process_cpu_s() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

/// Items/s `p` delivers over `span`, counted from `warm` after its first item; `each` is called
/// with every item (the consumer's own work).
template <class P, class F>
double rate_of(P& p, steady::duration warm, steady::duration span, F each) {
    const auto t0 = steady::now();
    std::size_t n = 0, n0 = 0;
    bool counting = false;
    steady::time_point c0;
    for (auto& x : p) {
        each(x);
        ++n;
        const auto now = steady::now();
        if (!counting && now - t0 >= warm) {
            counting = true;
            c0 = now;
            n0 = n;
        } else if (counting && now - c0 >= span) {
            return static_cast<double>(n - n0) / seconds(now - c0);
        }
    }
    BOOST_FAIL("the source ended before the measurement did");
    return 0;
}

template <class P>
double rate_of(P& p, steady::duration warm, steady::duration span) {
    return rate_of(p, warm, span, [](const auto&) {});
}

std::vector<int> many() {
    return resume_test::iota_vec(200000);
}

/// A read that waits 10 ms (I/O), a decode that holds its thread 1 ms.
int slow_read(int x) {
    std::this_thread::sleep_for(10ms);
    return x;
}
int held_decode(int x) {
    std::this_thread::sleep_for(1ms);
    return x;
}

/// Spins for `d` of CPU (a compute stage whose cost is known).
int spin_for(int x, std::chrono::microseconds d) {
    const auto until = steady::now() + d;
    volatile int sink = x;
    while (steady::now() < until) sink = sink + 1;
    return x;
}

/// Checks that `tuned` items/s is at least 90% of the best hand setting's; returns the stats as
/// printed (logged with the rates).
std::string within_a_tenth_of_best(const ferry::pipeline_stats& s, double tuned, double best) {
    std::ostringstream printed;
    printed << s;
    BOOST_TEST_MESSAGE("tuned " << tuned << " items/s, best hand set " << best << "\n"
                                << printed.str());
    BOOST_TEST(tuned >= 0.9 * best, "tuned " << tuned << " items/s is under 90% of the best "
                                             << "hand setting's " << best);
    return printed.str();
}

/// A value that holds 1 MiB and counts how many hold their bytes now (made or copied, not yet
/// destroyed or moved from) and the most that ever did: what the items in flight really hold,
/// counted by the test itself.
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

}  // namespace autotune_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(autotune)
using namespace autotune_test;

// read waits 10 ms, decode holds a thread 1 ms, 2 threads: the best is decode at 2 and read at
// 20 or more (~2000 items/s, decode's limit). From a cold start (1 and 1) the tuner gets within
// 10% of the best hand setting of the sweep in at most 25 intervals, and its settings stay in
// their ranges and the arena's threads throughout.
BOOST_AUTO_TEST_CASE(reaches_the_best_hand_set_rate_from_a_cold_start) {
    double best = 0;
    for (const int reads : {8, 32}) {
        auto p = ferry::from(many())
                     .map(slow_read, {.concurrency = reads, .executor = ferry::io})
                     .map(held_decode, 2)
                     .build({.threads = 2});
        best = std::max(best, rate_of(p, 300ms, 700ms));
    }
    auto p = ferry::from(many())
                 .map(slow_read,
                      {.concurrency = ferry::tuned(1, 32), .name = "read", .executor = ferry::io})
                 .map(held_decode, {.concurrency = ferry::tuned, .name = "decode"})
                 .build({.autotune = ferry::autotune{.cpu_budget = 2, .interval = 100ms}});
    std::atomic<bool> done{false};
    std::vector<std::string> broken;
    std::thread sampler([&] {
        while (!done) {
            const auto s = p.stats();
            if (s.threads != 2) broken.push_back("threads " + std::to_string(s.threads));
            for (const auto& r : s.stages) {
                if (r.name == "read" && (r.concurrency < 1 || r.concurrency > 32)) {
                    broken.push_back("read at " + std::to_string(r.concurrency));
                }
                if (r.name == "decode" && (r.concurrency < 1 || r.concurrency > 2)) {
                    broken.push_back("decode at " + std::to_string(r.concurrency));
                }
            }
            std::this_thread::sleep_for(20ms);
        }
    });
    const double tuned = rate_of(p, 2500ms, 1000ms);
    done = true;
    sampler.join();
    BOOST_TEST(broken.empty(), broken.size() << " samples out of bounds, e.g. "
                                             << (broken.empty() ? "" : broken.front()));
    const auto s = p.stats();
    const std::string printed = within_a_tenth_of_best(s, tuned, best);
    BOOST_TEST_REQUIRE(!s.tuning.empty());
    for (const auto& d : s.tuning) {
        BOOST_TEST((d.stage == "read" || d.stage == "decode"));
        BOOST_TEST(d.at <= 3600ms);
    }
    BOOST_TEST(printed.find("tuned: read ") != std::string::npos);
    const auto& first = s.tuning.front();
    BOOST_TEST(first.from == 1);
    BOOST_TEST(first.why.find("busy ") == 0U);
}

// A compute stage that spins 2 ms per item under a budget of 1 core: the arena gets 1 thread and
// the process's CPU time over the run stays within the budget (a quarter of a core more for the
// monitor and the consumer's hand-off).
BOOST_AUTO_TEST_CASE(stays_within_the_cpu_budget) {
    auto p = ferry::from(many())
                 .map([](int x) { return spin_for(x, 2000us); },
                      {.concurrency = ferry::tuned(1, 4), .name = "spin"})
                 .build({.autotune = ferry::autotune{.cpu_budget = 1, .interval = 50ms}});
    const auto wall0 = steady::now();
    const double cpu0 = process_cpu_s();
    (void)rate_of(p, 200ms, 1000ms);
    const double cores = (process_cpu_s() - cpu0) / seconds(steady::now() - wall0);
    const auto s = p.stats();
    BOOST_TEST(s.threads == 1);
    BOOST_TEST(cores <= 1.25, "the process used " << cores << " cores under a budget of 1");
    for (const auto& r : s.stages) {
        if (r.name == "spin") BOOST_TEST(r.concurrency <= 4);
    }
}

// The consumer takes 33 items/s, the loader could give 1000 at its lowest setting (a 1 ms
// wait; still over 60 where a loaded machine, under a sanitizer, oversleeps it to 15 ms): the
// tuner raises nothing.
BOOST_AUTO_TEST_CASE(does_not_feed_a_slow_consumer_faster) {
    auto p = ferry::from(many())
                 .map(
                     [](int x) {
                         std::this_thread::sleep_for(1ms);
                         return x;
                     },
                     {.concurrency = ferry::tuned(1, 16), .name = "read", .executor = ferry::io})
                 .build({.in_flight = 256, .autotune = ferry::autotune{.interval = 100ms}});
    // The pipeline fills for a few intervals with read busy all the time, while the consumer
    // takes what is there without waiting: busy is no reason to raise then.
    (void)rate_of(p, 0ms, 1500ms, [](int) { std::this_thread::sleep_for(30ms); });
    const auto s = p.stats();
    for (const auto& d : s.tuning) {
        std::ostringstream os;
        os << d;
        BOOST_TEST(d.to <= d.from, "raised although the consumer sets the pace: " << os.str());
    }
    for (const auto& r : s.stages) {
        if (r.name == "read") BOOST_TEST(r.concurrency == 1);
    }
}

// read takes 1 ms an item, then 12 ms from item 800 on (a slow disk); what follows takes 1000
// items/s at most. The tuner raises read after the slowdown until it keeps up again.
BOOST_AUTO_TEST_CASE(follows_a_stage_that_gets_slower) {
    auto p = ferry::from(many())
                 .map(
                     [](int x) {
                         std::this_thread::sleep_for(x < 800 ? 1ms : 12ms);
                         return x;
                     },
                     {.concurrency = ferry::tuned(1, 32), .name = "read", .executor = ferry::io})
                 .map(
                     [](int x) {
                         std::this_thread::sleep_for(2ms);
                         return x;
                     },
                     {.concurrency = 2, .name = "parse", .executor = ferry::io})
                 .build({.autotune = ferry::autotune{.interval = 100ms}});
    int before = 0;
    std::size_t n = 0;
    for (auto& x : p) {
        if (x == 800) {
            for (const auto& r : p.stats().stages) {
                if (r.name == "read") before = r.concurrency;
            }
        }
        if (++n == 4000) break;
    }
    int after = 0;
    for (const auto& r : p.stats().stages) {
        if (r.name == "read") after = r.concurrency;
    }
    BOOST_TEST(after >= 8, "read at " << after << " (" << before << " before the slowdown)");
    BOOST_TEST(after > before);
}

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

// A traced tuned pipeline has the tuner's settings as counter tracks: each tuned stage's
// concurrency over time (within its range, raised as it decided), the in_flight limit and the
// arena's working threads.
BOOST_AUTO_TEST_CASE(the_trace_shows_the_settings_over_time) {
    auto p = ferry::from(many())
                 .map(slow_read,
                      {.concurrency = ferry::tuned(1, 16), .name = "read", .executor = ferry::io})
                 .build({.trace_spans = 200'000, .autotune = ferry::autotune{.interval = 50ms}});
    (void)rate_of(p, 0ms, 800ms);
    std::stringstream json;
    p.write_trace(json);
    boost::property_tree::ptree doc;
    boost::property_tree::read_json(json, doc);
    std::map<std::string, std::vector<double>> counters;
    for (const auto& [key, e] : doc.get_child("traceEvents")) {
        if (e.get<std::string>("ph", "") != "C") continue;
        counters[e.get<std::string>("name", "")].push_back(e.get<double>("args.items", -1));
    }
    const auto& read = counters["concurrency read"];
    BOOST_TEST_REQUIRE(!read.empty());
    BOOST_TEST(*std::min_element(read.begin(), read.end()) >= 1.0);
    BOOST_TEST(*std::max_element(read.begin(), read.end()) <= 16.0);
    BOOST_TEST(*std::max_element(read.begin(), read.end()) > 1.0);  // raised while traced
    BOOST_TEST(!counters["in_flight limit"].empty());
    // The arena's working threads: all of them (the CPU budget took none).
    const auto& threads = counters["threads"];
    BOOST_TEST_REQUIRE(!threads.empty());
    BOOST_TEST(*std::min_element(threads.begin(), threads.end()) ==
               static_cast<double>(p.stats().threads));
}

// A map_async stage whose calls complete 10 ms later off the pipeline's threads (remote storage
// on an event loop): tuned from 1, the calls it keeps outstanding grow by half an interval until
// the rate is within 10% of the best hand setting's (32 outstanding, ~3000 items/s here).
BOOST_AUTO_TEST_CASE(tunes_the_calls_a_map_async_stage_keeps_outstanding) {
    const auto later = [](int x) {
        return std::async(std::launch::async, [x] {
            std::this_thread::sleep_for(10ms);
            return x;
        });
    };
    double best = 0;
    for (const int outstanding : {8, 32}) {
        auto p = ferry::from(many()).map_async(later, outstanding).build({.threads = 2});
        best = std::max(best, rate_of(p, 300ms, 700ms));
    }
    auto p = ferry::from(many())
                 .map_async(later, {.concurrency = ferry::tuned(1, 48), .name = "fetch"})
                 .build({.autotune = ferry::autotune{.cpu_budget = 2, .interval = 100ms}});
    const double tuned = rate_of(p, 2000ms, 700ms);
    const auto s = p.stats();
    const std::string printed = within_a_tenth_of_best(s, tuned, best);
    BOOST_TEST_REQUIRE(s.stages.size() == 2U);
    BOOST_TEST(s.stages[1].tuned_hi == 48);
    BOOST_TEST(s.stages[1].concurrency > 8);
    BOOST_TEST(s.stages[1].concurrency <= 48);
    BOOST_TEST_REQUIRE(!s.tuning.empty());
    BOOST_TEST(s.tuning.front().stage == "fetch");
    BOOST_TEST(s.tuning.front().from == 1);
    BOOST_TEST(s.tuning.front().to == 2);
    // At its range's top the calls still wait 10 ms each: the stats say the tuner can do no more.
    if (s.stages[1].concurrency == 48 && s.bottleneck() == "fetch") {
        BOOST_TEST(printed.find("48 slots, the top of its tuned range: raise the top") !=
                   std::string::npos);
    }
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
