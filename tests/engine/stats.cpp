// SPDX-License-Identifier: Apache-2.0
/// \file
/// Stats: stage names and counters, the printed table, periodic reports, sampled call times and
/// the bottleneck verdict (the failure log: stats_logger.cpp).
// property_tree includes the deprecated <boost/bind.hpp>; keep its global placeholders quiet.
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#include <algorithm>
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "support.hpp"

using namespace ferry_test;

namespace stats_test {

std::vector<std::string> names(const ferry::pipeline_stats& s) {
    std::vector<std::string> out;
    for (const auto& st : s.stages) out.push_back(st.name);
    return out;
}

/// A stage call slow enough for periodic reports to see it running.
int slow_identity(int x) {
    std::this_thread::sleep_for(3ms);
    return x;
}

}  // namespace stats_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(stats)
using namespace stats_test;

// Unnamed stages are called kind#position (from 1, after the source), with their kind.
BOOST_AUTO_TEST_CASE(unnamed_stages_are_named_by_kind_and_position) {
    auto p = ferry::from(iota(20))
                 .map([](int x) { return x; })
                 .filter([](int) { return true; })
                 .flat_map([](int x) { return std::vector<int>{x}; })
                 .batch(2)
                 .unbatch()
                 .map_async<int>([](int x, ferry::completion<int> done) { done(x); })
                 .build({.threads = 1});
    (void)drain(p);
    const auto s = p.stats();
    const std::vector<std::string> want_names{"source",  "map#1",     "filter#2",   "flat_map#3",
                                              "batch#4", "unbatch#5", "map_async#6"};
    BOOST_TEST(names(s) == want_names, boost::test_tools::per_element());
    std::vector<std::string> kinds;
    for (const auto& st : s.stages) kinds.push_back(st.kind);
    const std::vector<std::string> want_kinds{"source", "map",     "filter",   "flat_map",
                                              "batch",  "unbatch", "map_async"};
    BOOST_TEST(kinds == want_kinds, boost::test_tools::per_element());
}

// Names given in the options replace the defaults, in stats and errors alike.
BOOST_AUTO_TEST_CASE(custom_names_replace_the_defaults) {
    auto p = ferry::from(iota(20))
                 .map([](int x) { return x; }, {.concurrency = 3, .name = "decode"})
                 .batch(4, {.name = "collate"})
                 .map([](std::vector<int> b) { return b; }, {.executor = ferry::io})
                 .build({.threads = 2, .in_flight = 40});
    (void)drain_flat(p);
    const auto s = p.stats();
    const std::vector<std::string> want{"source", "decode", "collate", "map#3"};
    BOOST_TEST(names(s) == want, boost::test_tools::per_element());
    BOOST_TEST(s.stages.at(1).concurrency == 3);
    BOOST_TEST(!s.stages.at(1).io);
    BOOST_TEST(s.stages.at(3).io);
    BOOST_TEST(s.threads == 2);
    BOOST_TEST(s.in_flight == 40u);
}

// Each stage counts the elements it took in and gave out.
BOOST_AUTO_TEST_CASE(stages_count_items_in_and_out) {
    auto p = ferry::from(iota(100))
                 .map([](int x) { return x; }, 4)
                 .filter([](int x) { return x % 2 == 0; }, 2)
                 .flat_map(
                     [](int x) {
                         return std::vector<int>{x, x, x};
                     },
                     2)
                 .batch(10)
                 .unbatch()
                 .build({.threads = 2});
    BOOST_TEST(drain(p).size() == 150u);
    const auto s = p.stats();
    BOOST_TEST(s.stages.at(0).items_out == 100u);  // source
    BOOST_TEST(s.stages.at(1).items_in == 100u);   // map
    BOOST_TEST(s.stages.at(1).items_out == 100u);
    BOOST_TEST(s.stages.at(2).items_in == 100u);  // filter
    BOOST_TEST(s.stages.at(2).items_out == 50u);
    BOOST_TEST(s.stages.at(2).filtered == 50u);
    BOOST_TEST(s.stages.at(3).items_in == 50u);  // flat_map
    BOOST_TEST(s.stages.at(3).items_out == 150u);
    BOOST_TEST(s.stages.at(4).items_in == 150u);  // batch
    BOOST_TEST(s.stages.at(4).items_out == 15u);
    BOOST_TEST(s.stages.at(5).items_in == 15u);  // unbatch
    BOOST_TEST(s.stages.at(5).items_out == 150u);
    BOOST_TEST(s.outputs == 150u);
    BOOST_TEST(s.delivered == 50u);  // source items
    BOOST_TEST(s.filtered == 50u);
    check_complete_accounting(s);
}

// The printed table has a row for every stage, the item accounting, and a bottleneck line.
BOOST_AUTO_TEST_CASE(printed_table_names_every_stage_and_the_bottleneck) {
    auto p = ferry::from(iota(100))
                 .map([](int x) { return x; }, {.concurrency = 2, .name = "decode"})
                 .filter([](int x) { return x % 2 == 0; })
                 .batch(5, {.name = "collate"})
                 .build({.threads = 2});
    (void)drain_flat(p);
    std::ostringstream os;
    os << p.stats();
    const std::string table = os.str();
    for (const char* name : {"source", "decode", "filter#2", "collate"}) {
        BOOST_TEST(table.find(name) != std::string::npos, name << " missing from\n" << table);
    }
    BOOST_TEST(table.find("bottleneck: ") != std::string::npos, table);
    BOOST_TEST(table.find("100 produced = 50 delivered + 50 filtered + 0 failed + 0 cancelled") !=
                   std::string::npos,
               table);
}

// Time to first output, per epoch: 0 before any; at least the 50 ms the first item takes in
// epoch 0; in epoch 1 (no slow item) the last epoch's value changes and the longest stays; the
// printed table says it.
BOOST_AUTO_TEST_CASE(first_output_times_each_epochs_first_item) {
    int epoch = 0;
    auto p = ferry::from(iota(64))
                 .map(
                     [&](int x) {
                         if (x == 0 && epoch == 0) std::this_thread::sleep_for(50ms);
                         return x;
                     },
                     2)
                 .batch(8)
                 .build({.threads = 2});
    BOOST_TEST(p.stats().first_output.count() == 0);
    std::size_t n = 0;
    for (const auto& b : p) n += b.size();
    BOOST_TEST(n == 64u);
    const auto s0 = p.stats();
    BOOST_TEST(s0.first_output >= 50ms, s0.first_output.count() << " ns");
    BOOST_TEST(s0.first_output_max == s0.first_output);
    epoch = 1;
    n = 0;
    for (const auto& b : p) n += b.size();
    BOOST_TEST(n == 64u);
    const auto s1 = p.stats();
    BOOST_TEST(s1.first_output.count() > 0);
    BOOST_TEST(s1.first_output != s0.first_output);
    BOOST_TEST(s1.first_output_max >= 50ms);
    BOOST_TEST(s1.first_output_max >= s1.first_output);
    std::ostringstream os;
    os << s1;
    BOOST_TEST(os.str().find("first output after ") != std::string::npos, os.str());
}

// write_trace: Chrome trace-event JSON that parses, with one span per stage call (200 reads on
// the I/O threads, named as such; 200 decodes; 25 batches collated), the consumer's waits on its
// own named thread, and timestamps within the run; a capacity drops (and counts) the rest.
BOOST_AUTO_TEST_CASE(write_trace_records_every_call_as_a_span) {
    auto build = [](std::size_t spans) {
        return ferry::from(iota(200))
            .map([](int x) { return x; }, {.concurrency = 2, .name = "read", .executor = ferry::io})
            .map(
                [](int x) {
                    std::this_thread::sleep_for(100us);
                    return x;
                },
                {.concurrency = 2, .name = "decode \"fast\""})
            .batch(8)
            .map([](std::vector<int> v) { return v.size(); }, {.name = "collate"})
            .build({.threads = 2, .trace_spans = spans});
    };
    auto p = build(100000);
    std::size_t n = 0;
    for (const std::size_t b : p) n += b;
    BOOST_TEST(n == 200u);
    std::stringstream json;
    p.write_trace(json);
    namespace pt = boost::property_tree;
    pt::ptree doc;
    BOOST_REQUIRE_NO_THROW(pt::read_json(json, doc));
    BOOST_TEST(doc.get<int>("otherData.dropped_spans") == 0);
    std::map<std::string, int> calls;
    std::map<std::string, std::set<int>> threads_of;
    std::map<int, std::string> thread_names;
    double last_end = 0;
    for (const auto& [key, e] : doc.get_child("traceEvents")) {
        const auto ph = e.get<std::string>("ph");
        if (ph == "X") {
            const auto name = e.get<std::string>("name");
            ++calls[name];
            threads_of[name].insert(e.get<int>("tid"));
            BOOST_TEST(e.get<double>("dur") >= 0);
            last_end = std::max(last_end, e.get<double>("ts") + e.get<double>("dur"));
        } else if (ph == "M" && e.get<std::string>("name") == "thread_name") {
            thread_names[e.get<int>("tid")] = e.get<std::string>("args.name");
        }
    }
    BOOST_TEST(calls["read"] == 200);
    BOOST_TEST(calls["decode \"fast\""] == 200);
    BOOST_TEST(calls["collate"] == 25);
    BOOST_TEST(calls["source"] >= 200);
    BOOST_TEST(calls["waiting for the pipeline"] >= 1);
    BOOST_TEST(threads_of["read"].size() <= 2u);
    for (const int t : threads_of["read"]) {
        BOOST_TEST(thread_names[t].rfind("io read #", 0) == 0, thread_names[t]);
    }
    for (const int t : threads_of["waiting for the pipeline"]) {
        BOOST_TEST(thread_names[t] == "consumer (your thread)");
    }
    // 200 decodes of >= 100 us on 2 threads: the spans cover at least 10 ms (in microseconds).
    BOOST_TEST(last_end >= 10000.0);

    auto small = build(50);
    for ([[maybe_unused]] const std::size_t b : small) {
    }
    std::stringstream json2;
    small.write_trace(json2);
    pt::ptree doc2;
    BOOST_REQUIRE_NO_THROW(pt::read_json(json2, doc2));
    // Calls' spans, counter samples and items' links into batches share the capacity.
    int spans = 0;
    for (const auto& [key, e] : doc2.get_child("traceEvents")) {
        spans += e.get<std::string>("ph") == "X" || e.get<std::string>("ph") == "C";
    }
    BOOST_TEST(spans <= 50);
    BOOST_TEST(spans >= 25);  // an item links into its batch after its calls are recorded
    BOOST_TEST(doc2.get<int>("otherData.dropped_spans") > 0);

    auto untraced = ferry::from(iota(4)).build();
    std::stringstream json3;
    BOOST_CHECK_THROW(untraced.write_trace(json3), ferry::invalid_argument);
}

// on_report is called periodically, with current stats, while an epoch runs.
BOOST_AUTO_TEST_CASE(on_report_fires_during_a_slow_run) {
    std::mutex mutex;
    std::vector<ferry::pipeline_stats> reports;
    auto p = ferry::from(iota(40))
                 .map(slow_identity, {.name = "slow"})
                 .build({.threads = 1,
                         .on_report =
                             [&](const ferry::pipeline_stats& s) {
                                 std::lock_guard lock(mutex);
                                 reports.push_back(s);
                             },
                         .report_every = 20ms});
    BOOST_TEST(drain(p).size() == 40u);
    std::lock_guard lock(mutex);
    BOOST_TEST(reports.size() >= 1u);
    for (const auto& r : reports) {
        BOOST_TEST(names(r).at(1) == "slow");
        BOOST_TEST(r.produced <= 40u);
    }
}

// An on_report callback that throws does not escape the monitor's thread (which would end the
// process): the run delivers everything, reports go on, and the logger says it was ignored.
BOOST_AUTO_TEST_CASE(a_throwing_on_report_does_not_escape_a_ferry_thread) {
    log_capture log;
    std::atomic<int> reports{0};
    auto p = ferry::from(iota(40))
                 .map(slow_identity, {.name = "slow"})
                 .build({.threads = 1,
                         .logger = log.sink(),
                         .on_report =
                             [&](const ferry::pipeline_stats&) {
                                 ++reports;
                                 throw std::runtime_error("report sink is down");
                             },
                         .report_every = 10ms});
    BOOST_TEST(drain(p) == iota(40), boost::test_tools::per_element());
    BOOST_TEST(reports.load() >= 2);  // it went on reporting after the first throw
    const auto lines = log.lines();
    BOOST_TEST(std::any_of(lines.begin(), lines.end(), [](const auto& l) {
        return l.second.find("on_report callback threw; ignored") != std::string::npos;
    }));
}

// A call in progress counts in its stage's busy time and utilization while it runs, not only
// once it returns: a call held for 150 ms shows as busy in stats taken during it.
BOOST_AUTO_TEST_CASE(busy_time_and_utilization_include_a_running_call) {
    waitable_count entered;
    waitable_count let_go;
    const auto before_build = std::chrono::steady_clock::now();
    auto p = ferry::from(iota(1))
                 .map(
                     [&](int x) {
                         entered.add();
                         (void)let_go.wait_for(1);
                         return x;
                     },
                     {.name = "held"})
                 .build({.threads = 1});
    std::vector<int> got;
    std::thread consumer([&] { got = drain(p); });
    BOOST_TEST_REQUIRE(entered.wait_for(1));
    // Utilization is sampled from the epoch's start, so the call must run longer than the time
    // before it started (short on a quiet machine, not under a sanitizer on a loaded one).
    const auto startup = std::chrono::steady_clock::now() - before_build;
    std::this_thread::sleep_for(std::max<std::chrono::steady_clock::duration>(150ms, 3 * startup));
    const auto s = p.stats();
    let_go.add();
    consumer.join();
    const auto& held = row_named(s, "held");
    BOOST_TEST(held.running == 1U);
    BOOST_TEST(held.items_in == 1U);
    BOOST_TEST(held.busy >= 150ms);      // the call has run at least as long as the wait above
    BOOST_TEST(held.task_p99 >= 100ms);  // log-bucketed
    BOOST_TEST(held.utilization > 0.5);  // its one slot was running the call nearly throughout
    BOOST_TEST(got == iota(1));
}

// A stage whose calls are short has every 16th call timed, each standing for the calls before
// it (counters.hpp, `call_sampling`): its busy time, mean and median are estimates of what every
// call took. Each call here spins for 3 us (under the ~12 us from which every call is timed)
// and sums what it took by its own clock. The estimate is at least half of 3 us per call (it
// would be a sixteenth if the timed calls stood for themselves only) and at most four times
// the calls' own sum (a preempted call that happens to be timed counts 16 times; its 4 ms is in
// the sum once), and the median is within a factor of 3 us.
BOOST_AUTO_TEST_CASE(a_fast_stage_busy_time_is_estimated_from_a_sample_of_its_calls) {
    constexpr int items = 20000;
    constexpr auto call = 3us;
    std::chrono::steady_clock::duration took{};  // the calls' own total: one thread writes it
    auto p = ferry::from(iota(items))
                 .map(
                     [&](int x) {
                         const auto t0 = std::chrono::steady_clock::now();
                         while (std::chrono::steady_clock::now() - t0 < call) {
                         }
                         took += std::chrono::steady_clock::now() - t0;
                         return x;
                     },
                     {.name = "spin"})
                 .build({.threads = 1});
    BOOST_TEST(drain(p).size() == static_cast<std::size_t>(items));
    const auto s = p.stats();
    const auto& spin = row_named(s, "spin");
    const auto sum = std::chrono::duration_cast<std::chrono::nanoseconds>(took);
    const auto least = std::chrono::duration_cast<std::chrono::nanoseconds>(call * items);
    BOOST_TEST(spin.items_in == static_cast<std::uint64_t>(items));
    BOOST_TEST(spin.busy >= least / 2, spin.busy.count() << " ns estimated, " << sum.count()
                                                         << " ns measured by the calls");
    BOOST_TEST(spin.busy <= sum * 4, spin.busy.count() << " ns estimated, " << sum.count()
                                                       << " ns measured by the calls");
    BOOST_TEST(spin.task_mean >= call / 2);
    BOOST_TEST(spin.task_p50 >= call / 2);
    BOOST_TEST(spin.task_p50 <= call * 2);
}

// A call that is not timed still shows while it runs: item 40 of a fast stage on one thread
// (its 41st call: with every 16th call timed, not a timed one unless an earlier call took 12 us
// or more) holds its call, and the stats taken meanwhile show one call in progress on item 40,
// running at least as long as the test has seen it inside (counted from the monitor's last
// tick before it started).
BOOST_AUTO_TEST_CASE(a_call_not_timed_shows_in_progress_with_its_item_and_time) {
    waitable_count entered;
    waitable_count let_go;
    auto p = ferry::from(iota(60))
                 .map(
                     [&](int x) {
                         if (x == 40) {
                             entered.add();
                             (void)let_go.wait_for(1);
                         }
                         return x;
                     },
                     {.name = "quick"})
                 .build({.threads = 1});
    std::vector<int> got;
    std::thread consumer([&] { got = drain(p); });
    BOOST_TEST_REQUIRE(entered.wait_for(1));
    const auto inside = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(120ms);
    const auto seen = std::chrono::steady_clock::now() - inside;
    const auto s = p.stats();
    let_go.add();
    consumer.join();
    const auto& quick = row_named(s, "quick");
    BOOST_TEST(quick.running == 1U);
    BOOST_TEST(quick.oldest_item == 40U);
    BOOST_TEST(quick.oldest_running >= seen);
    BOOST_TEST(quick.busy >= seen);
    BOOST_TEST(quick.task_p99 >= 100ms);  // the running call, with its time so far
    BOOST_TEST(got == iota(60));
}

// The bottleneck line names the side that sets the pace, in the three shapes a loader takes.
// Each has a 1000x imbalance (a 3 ms sleep against microseconds), so the verdict does not depend
// on the machine's speed.

// A slow I/O stage: items wait in its queue, the pipeline is full, and the consumer waits. Full
// alone would have said "consumer" (it did, before the consumer's waiting was counted); the
// stages after it are starved, not backpressured.
BOOST_AUTO_TEST_CASE(a_slow_io_stage_is_the_bottleneck_not_the_consumer) {
    auto p = ferry::from(iota(150))
                 .map(
                     [](int x) {
                         std::this_thread::sleep_for(std::chrono::milliseconds(3));
                         return x;
                     },
                     {.concurrency = 2, .name = "read", .executor = ferry::io})
                 .map([](int x) { return x + 1; }, {.name = "fast"})
                 .build({.threads = 2});
    int n = 0;
    for (const int v : p) n += v > 0 ? 1 : 0;
    BOOST_TEST(n == 150);
    const ferry::pipeline_stats s = p.stats();
    std::ostringstream table;
    table << s;
    BOOST_TEST(s.bottleneck() == "read", table.str());
    BOOST_TEST(row_named(s, "read").queue_mean > 1.0, table.str());
    BOOST_TEST(row_named(s, "fast").starved > row_named(s, "fast").backpressured, table.str());
}

// A slow compute stage: the same verdict for the arena's stages.
BOOST_AUTO_TEST_CASE(a_slow_compute_stage_is_the_bottleneck) {
    auto p = ferry::from(iota(100))
                 .map([](int x) { return x; }, {.concurrency = 2, .name = "quick"})
                 .map(
                     [](int x) {
                         std::this_thread::sleep_for(std::chrono::milliseconds(3));
                         return x;
                     },
                     {.name = "slow"})
                 .build({.threads = 2});
    int n = 0;
    for (const int v : p) n += v >= 0 ? 1 : 0;
    BOOST_TEST(n == 100);
    const ferry::pipeline_stats s = p.stats();
    std::ostringstream table;
    table << s;
    BOOST_TEST(s.bottleneck() == "slow", table.str());
}

// A slow consumer: the pipeline is full and the consumer hardly waits.
BOOST_AUTO_TEST_CASE(a_slow_consumer_is_the_bottleneck) {
    auto p = ferry::from(iota(150))
                 .map([](int x) { return x; }, {.concurrency = 2, .name = "quick"})
                 .build({.threads = 2});
    int n = 0;
    for (const int v : p) {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        n += v >= 0 ? 1 : 0;
    }
    BOOST_TEST(n == 150);
    const ferry::pipeline_stats s = p.stats();
    std::ostringstream table;
    table << s;
    BOOST_TEST(s.bottleneck() == "consumer", table.str());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
