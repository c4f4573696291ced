// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.Stats`, `ferry.StageStats` and `ferry.Failure`: the engine's accounting as Python
/// objects (times in seconds).
#include "stats.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <sstream>

#include "ferry/stats.hpp"

namespace ferry::python {
namespace {

double seconds(std::chrono::nanoseconds d) {
    return std::chrono::duration<double>(d).count();
}

py::dict decision_dict(const ferry::tuning_decision& t) {
    py::dict d;
    d["at"] = seconds(t.at);
    d["stage"] = t.stage;
    d["from"] = t.from;
    d["to"] = t.to;
    d["why"] = t.why;
    d["rate_before"] = t.rate_before;
    d["rate_after"] = t.rate_after;
    d["undone"] = t.undone;
    return d;
}

py::dict stage_dict(const ferry::stage_stats& s) {
    py::dict d;
    d["name"] = s.name;
    d["kind"] = s.kind;
    d["concurrency"] = s.concurrency;
    d["tuned_lo"] = s.tuned_lo;
    d["tuned_hi"] = s.tuned_hi;
    d["io"] = s.io;
    d["items_in"] = s.items_in;
    d["items_out"] = s.items_out;
    d["failed"] = s.failed;
    d["filtered"] = s.filtered;
    d["retries"] = s.retries;
    d["timeouts"] = s.timeouts;
    d["cost"] = s.cost;
    d["padded_cost"] = s.padded_cost;
    py::dict counters;
    for (const auto& [name, n] : s.counters) counters[py::str(name)] = n;
    d["counters"] = counters;
    d["task_mean"] = seconds(s.task_mean);
    d["task_p50"] = seconds(s.task_p50);
    d["task_p99"] = seconds(s.task_p99);
    d["busy"] = seconds(s.busy);
    d["utilization"] = s.utilization;
    d["starved"] = s.starved;
    d["backpressured"] = s.backpressured;
    d["queue_mean"] = s.queue_mean;
    d["queue_max"] = s.queue_max;
    return d;
}

py::dict stats_dict(const ferry::pipeline_stats& s) {
    py::dict d;
    py::list stages;
    for (const auto& st : s.stages) stages.append(stage_dict(st));
    d["stages"] = stages;
    d["produced"] = s.produced;
    d["delivered"] = s.delivered;
    d["filtered"] = s.filtered;
    d["failed"] = s.failed;
    d["cancelled"] = s.cancelled;
    d["pending"] = s.pending;
    d["outputs"] = s.outputs;
    d["epochs"] = s.epochs;
    d["threads"] = s.threads;
    d["in_flight"] = s.in_flight;
    d["bytes_in_flight"] = s.bytes_in_flight;
    py::list tuning;
    for (const auto& t : s.tuning) tuning.append(decision_dict(t));
    d["tuning"] = tuning;
    d["elapsed"] = seconds(s.elapsed);
    d["consumer_wait"] = seconds(s.consumer_wait);
    d["consumer_cpu"] = seconds(s.consumer_cpu);
    d["first_output"] = seconds(s.first_output);
    d["first_output_max"] = seconds(s.first_output_max);
    d["full"] = s.full;
    d["bottleneck"] = s.bottleneck();
    return d;
}

}  // namespace

void bind_stats(py::module_& m) {
    py::class_<ferry::stage_stats>(m, "StageStats", "One stage's counters and timings.")
        .def_readonly("name", &ferry::stage_stats::name)
        .def_readonly("kind", &ferry::stage_stats::kind)
        .def_readonly("concurrency", &ferry::stage_stats::concurrency)
        .def_readonly("items_in", &ferry::stage_stats::items_in)
        .def_readonly("items_out", &ferry::stage_stats::items_out)
        .def_readonly("failed", &ferry::stage_stats::failed)
        .def_readonly("filtered", &ferry::stage_stats::filtered)
        .def_readonly("retries", &ferry::stage_stats::retries)
        .def_readonly("tuned_lo", &ferry::stage_stats::tuned_lo,
                      "A tuned stage's range (ferry.tuned(lo, hi)); 0 and 0 otherwise.")
        .def_readonly("tuned_hi", &ferry::stage_stats::tuned_hi)
        .def_readonly("cost", &ferry::stage_stats::cost,
                      "batch_by: the summed cost of its batches (padded_cost: padded to their "
                      "largest element).")
        .def_readonly("padded_cost", &ferry::stage_stats::padded_cost)
        .def_property_readonly(
            "counters",
            [](const ferry::stage_stats& s) {
                py::dict d;
                for (const auto& [name, n] : s.counters) d[py::str(name)] = n;
                return d;
            },
            "Named counts ('oversized batches', ...).")
        .def("as_dict", &stage_dict);

    py::class_<ferry::pipeline_stats>(m, "Stats", R"doc(
A pipeline's accounting (source items: a batch of 32 counts 32): produced == delivered +
filtered + failed + cancelled + pending. str() is ferry's per-stage table; as_dict() has every
number (times in seconds).)doc")
        .def_readonly("stages", &ferry::pipeline_stats::stages)
        .def_readonly("produced", &ferry::pipeline_stats::produced)
        .def_readonly("delivered", &ferry::pipeline_stats::delivered)
        .def_readonly("filtered", &ferry::pipeline_stats::filtered)
        .def_readonly("failed", &ferry::pipeline_stats::failed)
        .def_readonly("cancelled", &ferry::pipeline_stats::cancelled)
        .def_readonly("pending", &ferry::pipeline_stats::pending)
        .def_readonly("outputs", &ferry::pipeline_stats::outputs)
        .def_readonly("epochs", &ferry::pipeline_stats::epochs)
        .def_readonly("threads", &ferry::pipeline_stats::threads,
                      "Compute threads that work (the tuner may hold some idle).")
        .def_readonly("in_flight", &ferry::pipeline_stats::in_flight,
                      "Source items the pipeline may hold now (the tuner may move it).")
        .def_readonly("bytes_in_flight", &ferry::pipeline_stats::bytes_in_flight,
                      "What autotune's memory budget counts now: items in flight times their "
                      "measured bytes (0 without a budget, and before the first output).")
        .def_property_readonly(
            "tuning",
            [](const ferry::pipeline_stats& s) {
                py::list out;
                for (const auto& t : s.tuning) out.append(decision_dict(t));
                return out;
            },
            "The tuner's decisions, oldest first: dicts of at (s), stage, from, to, why, "
            "rate_before, rate_after (the interval's delivered rate, items/s), undone.")
        .def_property_readonly("bottleneck", &ferry::pipeline_stats::bottleneck)
        .def("as_dict", &stats_dict)
        .def("__str__", [](const ferry::pipeline_stats& s) {
            std::ostringstream out;
            out << s;
            return out.str();
        });

    py::class_<ferry::failure>(m, "Failure", "One failed item: stage, item, epoch, why.")
        .def_readonly("stage", &ferry::failure::stage)
        .def_readonly("item", &ferry::failure::item, "Source position within its epoch.")
        .def_readonly("items", &ferry::failure::items, "Source items it stood for.")
        .def_readonly("epoch", &ferry::failure::epoch)
        .def_readonly("message", &ferry::failure::message)
        .def_property_readonly(
            "code", [](const ferry::failure& f) { return ferry::to_string(f.code); },
            "The cause's ferry::errc ('io', 'decode', ...; 'stage_failed' for others).")
        .def_readonly("input", &ferry::failure::input, "The item's path, if it has one.")
        .def("__repr__", [](const ferry::failure& f) {
            return "ferry.Failure(stage='" + f.stage + "', item=" + std::to_string(f.item) +
                   ", epoch=" + std::to_string(f.epoch) + ", message='" + f.message + "')";
        });
}

}  // namespace ferry::python
