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
                        const std::vector<std::string>& span_names, double ns_per_tick) {
    std::vector<span_log::span> spans;
    std::map<std::uint32_t, std::string> names;
    std::uint64_t dropped = 0;
    log.snapshot(spans, names, dropped);
    std::uint64_t origin = std::numeric_limits<std::uint64_t>::max();
    for (const auto& sp : spans) origin = std::min(origin, sp.t0);
    const double us_per_tick = ns_per_tick / 1000.0;
    std::set<std::uint32_t> threads;
    os << "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"dropped_spans\": " << dropped
       << "},\n\"traceEvents\": [\n";
    os << "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": "
          "\"ferry pipeline\"}}";
    char buf[160];
    for (const auto& sp : spans) {
        threads.insert(sp.thread);
        const double ts = static_cast<double>(sp.t0 - origin) * us_per_tick;
        const double dur = static_cast<double>(sp.t1 > sp.t0 ? sp.t1 - sp.t0 : 0) * us_per_tick;
        std::snprintf(buf, sizeof buf,
                      ", \"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f}",
                      sp.thread, ts, dur);
        os << ",\n{\"name\": " << json_string(span_names.at(sp.stage)) << buf;
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
