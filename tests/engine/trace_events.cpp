// SPDX-License-Identifier: Apache-2.0
/// \file
/// write_trace as a Perfetto timeline, checked against the trace-event format's rules: every
/// event has the fields its phase needs; each item's flow starts at its source call, steps
/// through each later call on it and ends in the batch it went into, every flow event lying
/// inside a slice of its thread (the slice it binds to); counter tracks for the items in flight
/// and each stage's queue.

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace ferry_test;

namespace trace_events_test {

namespace pt = boost::property_tree;

struct slice {
    double ts = 0, end = 0;
    std::string name;
    long item = -1;
};

struct flow_event {
    std::string ph;
    int tid = 0;
    double ts = 0;
    bool binds_enclosing = false;
};

/// The trace's events, checked field by field as they are read.
struct timeline {
    std::map<int, std::vector<slice>> slices;       // per thread
    std::map<long, std::vector<flow_event>> flows;  // per flow id, in file order
    std::map<std::string, std::vector<double>> counters;
    std::set<std::string> phases;
    int malformed = 0;

    explicit timeline(std::istream& json) {
        pt::ptree doc;
        pt::read_json(json, doc);
        for (const auto& [key, e] : doc.get_child("traceEvents")) {
            const auto ph = e.get<std::string>("ph", "");
            phases.insert(ph);
            const bool has_pid = e.get_optional<int>("pid").has_value();
            if (!has_pid || e.get<std::string>("name", "").empty()) ++malformed;
            if (ph == "X") {
                const double ts = e.get<double>("ts", -1), dur = e.get<double>("dur", -1);
                if (ts < 0 || dur < 0 || !e.get_optional<int>("tid")) ++malformed;
                slices[e.get<int>("tid", 0)].push_back(
                    {ts, ts + dur, e.get<std::string>("name", ""), e.get<long>("args.item", -1)});
            } else if (ph == "s" || ph == "t" || ph == "f") {
                if (!e.get_optional<long>("id") || e.get<std::string>("cat", "").empty() ||
                    !e.get_optional<double>("ts") || !e.get_optional<int>("tid")) {
                    ++malformed;
                }
                flows[e.get<long>("id", -1)].push_back({ph, e.get<int>("tid", 0),
                                                        e.get<double>("ts", -1),
                                                        e.get<std::string>("bp", "") == "e"});
            } else if (ph == "C") {
                const auto v = e.get_optional<double>("args.items");
                if (!v || !e.get_optional<double>("ts")) ++malformed;
                counters[e.get<std::string>("name", "")].push_back(v.value_or(-1));
            } else if (ph == "M") {
                const auto what = e.get<std::string>("name", "");
                if ((what != "thread_name" && what != "process_name") ||
                    e.get<std::string>("args.name", "").empty()) {
                    ++malformed;
                }
            } else {
                ++malformed;
            }
        }
    }

    /// The slice on thread `tid` that holds time `ts`, if any.
    const slice* enclosing(int tid, double ts) const {
        const auto it = slices.find(tid);
        if (it == slices.end()) return nullptr;
        for (const auto& s : it->second) {
            if (s.ts <= ts && ts <= s.end) return &s;
        }
        return nullptr;
    }
};

}  // namespace trace_events_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(trace_events)
using namespace trace_events_test;

BOOST_AUTO_TEST_CASE(the_timeline_follows_the_trace_event_rules) {
    constexpr int items = 60;
    auto p = ferry::from(iota(items))
                 .map(
                     [](int x) {
                         std::this_thread::sleep_for(std::chrono::microseconds(200));
                         return x;
                     },
                     {.concurrency = 2, .name = "decode"})
                 .map([](int x) { return x; },
                      {.concurrency = 2, .name = "upload", .executor = ferry::io})
                 .batch(6)
                 .build({.threads = 2, .trace_spans = 100000});
    for (int epoch = 0; epoch < 2; ++epoch) BOOST_TEST(drain(p).size() == 10U);
    std::stringstream json;
    p.write_trace(json);
    const timeline t(json);
    BOOST_TEST(t.malformed == 0);
    BOOST_TEST((t.phases == std::set<std::string>{"M", "X", "s", "t", "f", "C"}));

    // One flow per item and epoch: source -> decode -> upload -> its batch, each event inside
    // the slice of that call on its thread (the item's own, but for the batch's), the last
    // binding to its enclosing slice.
    BOOST_TEST(t.flows.size() == std::size_t{2 * items});
    std::map<long, int> flows_per_item;
    for (const auto& [id, events] : t.flows) {
        BOOST_TEST_REQUIRE(events.size() == 4U);
        BOOST_TEST(events[0].ph == "s");
        BOOST_TEST(events[1].ph == "t");
        BOOST_TEST(events[2].ph == "t");
        BOOST_TEST(events[3].ph == "f");
        BOOST_TEST(events[3].binds_enclosing);
        std::vector<std::string> path;
        long item = -2;
        for (std::size_t i = 0; i < events.size(); ++i) {
            if (i > 0) BOOST_TEST(events[i].ts >= events[i - 1].ts);
            const slice* s = t.enclosing(events[i].tid, events[i].ts);
            BOOST_TEST_REQUIRE(s != nullptr);
            path.push_back(s->name);
            if (i == 0) item = s->item;
            if (i < 3) BOOST_TEST(s->item == item);
        }
        BOOST_TEST((path == std::vector<std::string>{"source", "decode", "upload", "batch#3"}));
        ++flows_per_item[item];
    }
    BOOST_TEST(flows_per_item.size() == std::size_t{items});  // items 0..59, twice each
    for (const auto& [item, n] : flows_per_item) BOOST_TEST(n == 2, "item " << item);

    // Counter tracks: the items in flight (never above the limit) and each stage's queue.
    const auto in_flight = t.counters.find("in flight");
    BOOST_TEST_REQUIRE((in_flight != t.counters.end()));
    BOOST_TEST(!in_flight->second.empty());
    for (const double v : in_flight->second)
        BOOST_TEST(v <= static_cast<double>(p.stats().in_flight));
    BOOST_TEST(t.counters.count("queue decode") == 1U);
    BOOST_TEST(t.counters.count("queue upload") == 1U);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
