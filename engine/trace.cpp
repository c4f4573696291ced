// SPDX-License-Identifier: Apache-2.0
/// \file
/// write_chrome_trace(): a span_log as Chrome trace-event JSON.

#include "trace.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <ostream>
#include <set>

namespace ferry::detail {
namespace {

/// `s` as a JSON string literal.
std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
            out += esc;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace

void write_chrome_trace(std::ostream& os, const span_log& log,
                        const std::vector<std::string>& span_names,
                        const std::vector<std::string>& series, double ns_per_tick) {
    std::vector<span_log::span> spans;
    std::vector<span_log::count> counts;
    std::map<std::uint32_t, std::string> names;
    std::uint64_t dropped = 0;
    log.snapshot(spans, counts, names, dropped);
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.t0 < b.t0; });
    std::uint64_t origin = std::numeric_limits<std::uint64_t>::max();
    for (const auto& sp : spans) origin = std::min(origin, sp.t0);
    for (const auto& c : counts) origin = std::min(origin, c.t);
    const double us_per_tick = ns_per_tick / 1000.0;
    const auto at = [&](std::uint64_t t) {
        return static_cast<double>(t > origin ? t - origin : 0) * us_per_tick;
    };
    std::set<std::uint32_t> threads;
    os << "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"dropped_spans\": " << dropped
       << "},\n\"traceEvents\": [\n";
    os << "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": "
          "\"ferry pipeline\"}}";
    char buf[200];
    // Each item's flow: started at its source call, a step at each later call, ended at the
    // last one. The last call is known only at the end, so the events wait here per flow.
    struct flow_step {
        std::uint32_t thread;
        double ts;
    };
    std::map<std::uint64_t, std::uint64_t> flow_of;  // item -> its current flow
    std::map<std::uint64_t, std::vector<flow_step>> flows;
    std::uint64_t next_flow = 1;
    for (const auto& sp : spans) {
        if (sp.stage == span_log::link_stage) {
            // Into a batch: a step of the item's flow, no call of its own.
            const auto it = flow_of.find(sp.item);
            if (it != flow_of.end()) flows[it->second].push_back({sp.thread, at(sp.t0)});
            continue;
        }
        threads.insert(sp.thread);
        const double ts = at(sp.t0);
        const double dur = static_cast<double>(sp.t1 > sp.t0 ? sp.t1 - sp.t0 : 0) * us_per_tick;
        if (sp.item == span_log::no_item) {
            std::snprintf(buf, sizeof buf,
                          ", \"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f}",
                          sp.thread, ts, dur);
        } else {
            std::snprintf(buf, sizeof buf,
                          ", \"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, "
                          "\"args\": {\"item\": %llu}}",
                          sp.thread, ts, dur, static_cast<unsigned long long>(sp.item));
            auto [it, fresh] = flow_of.try_emplace(sp.item, next_flow);
            if (sp.stage == 0 && !fresh) it->second = next_flow;  // the item again: a new epoch
            if (it->second == next_flow) ++next_flow;
            flows[it->second].push_back({sp.thread, ts});
        }
        os << ",\n{\"name\": " << json_string(span_names.at(sp.stage)) << buf;
    }
    for (const auto& [id, steps] : flows) {
        if (steps.size() < 2) continue;
        for (std::size_t i = 0; i < steps.size(); ++i) {
            const char* ph = i == 0 ? "s" : i + 1 == steps.size() ? "f" : "t";
            std::snprintf(
                buf, sizeof buf,
                ",\n{\"name\": \"item\", \"cat\": \"item\", \"ph\": \"%s\", \"id\": %llu, "
                "\"pid\": 1, \"tid\": %u, \"ts\": %.3f%s}",
                ph, static_cast<unsigned long long>(id), steps[i].thread, steps[i].ts,
                i + 1 == steps.size() ? ", \"bp\": \"e\"" : "");
            os << buf;
        }
    }
    for (const auto& c : counts) {
        std::snprintf(buf, sizeof buf,
                      ", \"ph\": \"C\", \"pid\": 1, \"ts\": %.3f, \"args\": {\"items\": %llu}}",
                      at(c.t), static_cast<unsigned long long>(c.value));
        os << ",\n{\"name\": " << json_string(series.at(c.series)) << buf;
    }
    for (const std::uint32_t t : threads) {
        const auto it = names.find(t);
        const std::string name =
            it != names.end() ? it->second : "worker (thread " + std::to_string(t) + ")";
        os << ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": " << t
           << ", \"name\": \"thread_name\", \"args\": {\"name\": " << json_string(name) << "}}";
    }
    os << "\n]}\n";
}

}  // namespace ferry::detail
