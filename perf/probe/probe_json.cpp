// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry-probe --json: the sweep as data — every trial's pipeline stats as fields, per stage, and
/// the failed inputs — for scripts and dashboards rather than eyes.

#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "probe.hpp"

namespace probe {
namespace {

/// A JSON string: what ferry's quarantine lines use (escapes, and bytes that are not UTF-8 as
/// \udcXX), taken from a line holding only it.
std::string json_string(const std::string& s) {
    ferry::failure f;
    f.input = s;
    const std::string line = ferry::quarantine_line(f);  // {"input": "<s>", "stage": ...
    const std::size_t start = line.find(':') + 2;
    const std::size_t end = line.find(", \"stage\": ");
    return line.substr(start, end - start);
}

/// A JSON number (JSON has no NaN or infinity).
std::string number(double v) {
    if (!std::isfinite(v)) return "0";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

double us(std::chrono::nanoseconds d) {
    return static_cast<double>(d.count()) / 1e3;
}
double seconds(std::chrono::nanoseconds d) {
    return static_cast<double>(d.count()) / 1e9;
}

void print_stage(const ferry::stage_stats& st) {
    std::printf(
        "{\"name\": %s, \"kind\": %s, \"concurrency\": %d, \"io\": %s, \"items_in\": %llu, "
        "\"items_out\": %llu, \"failed\": %llu, \"filtered\": %llu, \"retries\": %llu, "
        "\"task_mean_us\": %s, \"task_p50_us\": %s, \"task_p99_us\": %s, \"busy_s\": %s, "
        "\"utilization\": %s, \"starved\": %s, \"backpressured\": %s, \"queue_mean\": %s, "
        "\"queue_max\": %llu}",
        json_string(st.name).c_str(), json_string(st.kind).c_str(), st.concurrency,
        st.io ? "true" : "false", static_cast<unsigned long long>(st.items_in),
        static_cast<unsigned long long>(st.items_out), static_cast<unsigned long long>(st.failed),
        static_cast<unsigned long long>(st.filtered), static_cast<unsigned long long>(st.retries),
        number(us(st.task_mean)).c_str(), number(us(st.task_p50)).c_str(),
        number(us(st.task_p99)).c_str(), number(seconds(st.busy)).c_str(),
        number(st.utilization).c_str(), number(st.starved).c_str(),
        number(st.backpressured).c_str(), number(st.queue_mean).c_str(),
        static_cast<unsigned long long>(st.queue_max));
}

void print_stats(const ferry::pipeline_stats& s) {
    std::printf(
        "{\"produced\": %llu, \"delivered\": %llu, \"filtered\": %llu, \"failed\": %llu, "
        "\"cancelled\": %llu, \"outputs\": %llu, \"threads\": %d, \"in_flight\": %zu, "
        "\"elapsed_s\": %s, \"consumer_wait_s\": %s, \"first_output_s\": %s, \"full\": %s, "
        "\"bottleneck\": %s, \"stages\": [",
        static_cast<unsigned long long>(s.produced), static_cast<unsigned long long>(s.delivered),
        static_cast<unsigned long long>(s.filtered), static_cast<unsigned long long>(s.failed),
        static_cast<unsigned long long>(s.cancelled), static_cast<unsigned long long>(s.outputs),
        s.threads, s.in_flight, number(seconds(s.elapsed)).c_str(),
        number(seconds(s.consumer_wait)).c_str(), number(seconds(s.first_output)).c_str(),
        number(s.full).c_str(), json_string(s.bottleneck()).c_str());
    for (std::size_t i = 0; i < s.stages.size(); ++i) {
        if (i != 0) std::printf(", ");
        print_stage(s.stages[i]);
    }
    std::printf("]}");
}

/// What a folder held: counts per kind and per format, and the skipped files (the first
/// `listed`, with the reason; `skipped` counts them all).
void print_found(const settings& s) {
    std::printf("\"found\": {\"images\": %zu, \"videos\": %zu, \"audio\": %zu}, \"formats\": {",
                s.found[0], s.found[1], s.found[2]);
    for (std::size_t i = 0; i < s.formats.size(); ++i) {
        std::printf("%s%s: %zu", i ? ", " : "", json_string(s.formats[i].first).c_str(),
                    s.formats[i].second);
    }
    constexpr std::size_t listed = 1000;  // a dataset with a label file per image has millions
    std::printf("}, \"skipped\": %zu, \"skipped_files\": [", s.skipped.size());
    for (std::size_t i = 0; i < s.skipped.size() && i < listed; ++i) {
        std::printf("%s{\"path\": %s, \"why\": %s}", i ? ", " : "",
                    json_string(s.skipped[i].path).c_str(), json_string(s.skipped[i].why).c_str());
    }
    std::printf("]");
}

}  // namespace

std::vector<ferry::failure> failed_inputs(const std::vector<trial>& trials) {
    std::vector<ferry::failure> out;
    std::set<std::pair<std::string, std::string>> seen;  // (input, stage)
    for (const trial& t : trials) {
        for (const ferry::failure& f : t.failures) {
            if (seen.emplace(f.input, f.stage).second) out.push_back(f);
        }
    }
    return out;
}

void print_json(const settings& s, std::size_t urls, const std::vector<trial>& trials,
                const trial& best) {
    std::printf(
        "{\"kind\": \"%s\", \"files\": %zu, \"urls\": %zu, \"sample\": %zu, \"threads\": %d, "
        "\"usable_cpus\": %d, ",
        name_of(s.kind), s.files.size(), urls, s.sample.size(), s.threads, usable_cpus());
    print_found(s);
    std::printf(", \"trials\": [");
    for (std::size_t i = 0; i < trials.size(); ++i) {
        const trial& t = trials[i];
        std::printf(
            "%s{\"read\": %d, \"decode\": %d, \"items\": %llu, \"items_digest\": \"%016llx\", "
            "\"seconds\": %s, \"images_per_s\": %.1f, \"mb_per_s\": %.2f, \"images\": %llu, "
            "\"units_per_s\": %.1f, \"failed\": %llu, \"stats\": ",
            i ? ", " : "", t.read, t.decode, static_cast<unsigned long long>(t.items),
            static_cast<unsigned long long>(t.digest), number(t.seconds).c_str(), t.images_per_s(),
            t.mb_per_s(), static_cast<unsigned long long>(t.images), t.units_per_s(),
            static_cast<unsigned long long>(t.failed));
        print_stats(t.stats);
        std::printf("}");
    }
    std::printf("], \"best\": {\"read\": %d, \"decode\": %d, \"images_per_s\": %.1f}, \"stats\": ",
                best.read, best.decode, best.images_per_s());
    print_stats(best.stats);
    std::printf(", \"failed_inputs\": [");
    const auto failed = failed_inputs(trials);
    for (std::size_t i = 0; i < failed.size(); ++i) {
        // The quarantine file's line: input, stage, code, message, epoch, item, items.
        std::printf("%s%s", i ? ", " : "", ferry::quarantine_line(failed[i]).c_str());
    }
    std::printf("]}\n");
}

}  // namespace probe
