// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.source()`, `ferry.Builder` and the options they take (`Sampling`, `retry`, stage and
/// pipeline options): Python builds the same `detail::pipeline_spec` the C++ builder builds, and
/// `build()` compiles it with the same engine.
#include "builder.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "convert.hpp"
#include "coroutine_stage.hpp"
#include "ferry/byte_size.hpp"
#include "ferry/error.hpp"
#include "ferry/pipeline_state.hpp"
#include "ferry/world.hpp"
#include "hooks.hpp"
#include "ops.hpp"
#include "pipeline.hpp"
#include "python_stage.hpp"
#include "sources.hpp"
#include "tuning.hpp"

namespace ferry::python {
namespace {

std::size_t output_bytes(detail::any_value& v) {
    return ferry::byte_size(v.get<value>());
}

/// Every stage's outputs, a route's branches' too, are `value`s: the memory budget measures them
/// as C++'s builder measures each stage's element type (`stage_spec::value_bytes`).
void measure_values(std::vector<detail::stage_spec>& stages) {
    for (auto& s : stages) {
        s.value_bytes = &output_bytes;
        for (auto& branch : s.branches) measure_values(branch);
    }
}

}  // namespace

ferry::error_policy policy_of(const py::object& on_error, const std::string& where) {
    if (py::isinstance<py::str>(on_error)) {
        const auto s = on_error.cast<std::string>();
        if (s == "fail") return ferry::fail;
        if (s == "skip") return ferry::skip;
        throw ferry::invalid_argument(where +
                                      ": on_error must be 'fail', 'skip' or "
                                      "ferry.retry(...), got '" +
                                      s + "'");
    }
    if (py::isinstance<ferry::retry>(on_error)) return on_error.cast<ferry::retry>();
    throw py::type_error(where +
                         ": on_error must be 'fail', 'skip' or ferry.retry(...), got a Python " +
                         std::string(Py_TYPE(on_error.ptr())->tp_name));
}

ferry::stage_options stage_options_of(const std::string& where, const py::object& concurrency,
                                      const std::string& executor, bool ordered,
                                      const py::object& on_error, const py::object& timeout,
                                      const py::object& name, std::uint64_t max_failures,
                                      double max_failure_rate, std::size_t failure_window) {
    ferry::stage_options o;
    o.concurrency = concurrency_of(concurrency, where);
    if (executor == "compute") {
        o.executor = ferry::compute;
    } else if (executor == "io") {
        o.executor = ferry::io;
    } else {
        throw ferry::invalid_argument(where + ": executor must be 'compute' or 'io', got '" +
                                      executor + "'");
    }
    o.ordered = ordered;
    o.on_error = policy_of(on_error, where);
    if (!timeout.is_none()) {
        const double s = timeout.cast<double>();
        if (!(s > 0) || !std::isfinite(s)) {
            throw ferry::invalid_argument(where + ": timeout is seconds above 0 (or None), got " +
                                          std::to_string(s));
        }
        o.timeout = ceil_millis(s);
    }
    if (!name.is_none()) o.name = name.cast<std::string>();
    o.max_failures = max_failures;
    o.max_failure_rate = max_failure_rate;
    if (failure_window == 0) {
        throw ferry::invalid_argument(where + ": failure_window must be at least 1 item");
    }
    o.failure_window = failure_window;
    return o;
}

void check_no_retry(const ferry::stage_options& o, const std::string& where) {
    if (o.on_error.attempts > 1) {
        throw ferry::invalid_argument(where +
                                      ": on_error must be 'fail' or 'skip'; a retry does not "
                                      "apply (the input was handed over to the call)");
    }
}

namespace {

/// Whether the pipeline's tuner runs: an autotune budget, or a tuned stage (in a branch too).
bool has_tuned_stage(const std::vector<detail::stage_spec>& stages) {
    for (const auto& s : stages) {
        if (ferry::tuned_concurrency::is_tuned(s.options.concurrency)) return true;
        for (const auto& b : s.branches) {
            if (has_tuned_stage(b)) return true;
        }
    }
    return false;
}

/// What C++'s `builder::build()` does before compiling: each stage's build step (to_cuda makes
/// its streams and pools, an async stage its event loop) on this pipeline's copy.
void run_build_steps(std::vector<detail::stage_spec>& stages) {
    for (auto& s : stages) {
        if (s.on_build) s.on_build(s);
        for (auto& b : s.branches) run_build_steps(b);
    }
}

}  // namespace

void pack_values(std::vector<detail::any_value>& items, detail::any_value& out) {
    value_list batch;
    batch.reserve(items.size());
    for (auto& a : items) batch.push_back(a.take_as<value>());
    out.emplace<value>(std::move(batch));
}

void check_callable(const py::object& f, const std::string& where, const char* what) {
    if (PyCallable_Check(f.ptr()) == 0) {
        throw py::type_error(where + ": " + what + ", got a Python " + Py_TYPE(f.ptr())->tp_name);
    }
}

std::string where_of(const py_builder& b, const char* call, const char* kind,
                     const py::object& name) {
    const std::string stage = name.is_none() ? b.next_name(kind) : name.cast<std::string>();
    return std::string(call) + " (stage '" + stage + "')";
}

#define FERRY_STAGE_ARGS                                                                  \
    py::kw_only(), py::arg("concurrency") = py::int_(1), py::arg("executor") = "compute", \
                   py::arg("ordered") = true, py::arg("on_error") = "fail",               \
                   py::arg("timeout") = py::none(), py::arg("name") = py::none(),         \
                   py::arg("max_failures") = 0, py::arg("max_failure_rate") = 0.0,        \
                   py::arg("failure_window") = 100

void bind_builder(py::module_& m) {
    py::class_<ferry::sampling>(m, "Sampling", R"doc(
How a sequence is visited each epoch: in order or shuffled (a permutation of its own per epoch,
from seed and the epoch alone), and which part is this rank's (rank of world_size; remainder
'pad' repeats items so every rank gets ceil(n / world_size), 'drop' leaves the tail out).)doc")
        .def(py::init([](bool shuffle, std::uint64_t seed, std::size_t rank, std::size_t world_size,
                         const std::string& remainder) {
                 ferry::sampling s;
                 s.shuffle = shuffle;
                 s.seed = seed;
                 s.rank = rank;
                 s.world_size = world_size;
                 if (remainder == "pad") {
                     s.remainder = ferry::remainder::pad;
                 } else if (remainder == "drop") {
                     s.remainder = ferry::remainder::drop;
                 } else {
                     throw ferry::invalid_argument(
                         "Sampling(remainder=...): 'pad' or 'drop', got '" + remainder + "'");
                 }
                 return s;
             }),
             py::kw_only(), py::arg("shuffle") = false, py::arg("seed") = 0, py::arg("rank") = 0,
             py::arg("world_size") = 1, py::arg("remainder") = "pad")
        .def_readonly("shuffle", &ferry::sampling::shuffle)
        .def_readonly("seed", &ferry::sampling::seed)
        .def_readonly("rank", &ferry::sampling::rank)
        .def_readonly("world_size", &ferry::sampling::world_size)
        .def_property_readonly("remainder", [](const ferry::sampling& s) {
            return s.remainder == ferry::remainder::pad ? "pad" : "drop";
        });

    py::class_<ferry::retry>(m, "Retry", "A retry policy: what ferry.retry(...) returns.")
        .def_readonly("attempts", &ferry::retry::attempts)
        .def_property_readonly(
            "backoff",
            [](const ferry::retry& r) { return std::chrono::duration<double>(r.backoff).count(); })
        .def_readonly("multiplier", &ferry::retry::multiplier)
        .def_property_readonly("then", [](const ferry::retry& r) {
            return r.then == ferry::error_action::fail ? "fail" : "skip";
        });
    m.def(
        "retry",
        [](int attempts, double backoff, double multiplier, const std::string& then,
           double jitter) {
            if (attempts < 1) {
                throw ferry::invalid_argument("retry(attempts=" + std::to_string(attempts) +
                                              "): at least 1");
            }
            if (!(backoff >= 0) || !std::isfinite(backoff)) {
                throw ferry::invalid_argument("retry(backoff=...): seconds, 0 or more");
            }
            ferry::retry r;
            r.attempts = attempts;
            r.backoff = std::chrono::milliseconds(static_cast<std::int64_t>(backoff * 1000));
            r.multiplier = multiplier;
            if (then == "fail") {
                r.then = ferry::error_action::fail;
            } else if (then == "skip") {
                r.then = ferry::error_action::skip;
            } else {
                throw ferry::invalid_argument("retry(then=...): 'fail' or 'skip', got '" + then +
                                              "'");
            }
            r.jitter = jitter;
            return r;
        },
        py::arg("attempts") = 3, py::kw_only(), py::arg("backoff") = 0.01,
        py::arg("multiplier") = 2.0, py::arg("then") = "fail", py::arg("jitter") = 0.0, R"doc(
A stage's on_error: try a failed call again, attempts times in all, sleeping backoff seconds,
then backoff * multiplier, ...; when every attempt failed, do then ('fail' or 'skip'). A
failure ferry knows will not pass (a missing file, a corrupt image) goes to then at once; a
Python exception is tried again.)doc");

    py::class_<ferry::world>(m, "World", "This process's place in a training job.")
        .def_readonly("rank", &ferry::world::rank)
        .def_readonly("size", &ferry::world::size)
        .def_readonly("local_rank", &ferry::world::local_rank)
        .def_readonly("local_size", &ferry::world::local_size)
        .def("__repr__", [](const ferry::world& w) {
            return "ferry.World(rank=" + std::to_string(w.rank) +
                   ", size=" + std::to_string(w.size) +
                   ", local_rank=" + std::to_string(w.local_rank) +
                   ", local_size=" + std::to_string(w.local_size) + ")";
        });
    m.def("world", &ferry::world::from_environment, R"doc(
Rank and size from the launcher's environment (torchrun, Open MPI, MPICH, Slurm; none: rank 0
of 1), for Sampling(rank=w.rank, world_size=w.size).)doc");

    py::class_<py_builder>(m, "Builder", R"doc(
A pipeline's description: a source and its stages. Each method returns a new Builder;
build() starts the pipeline.)doc")
        .def(
            "map",
            [](const py_builder& b, const py::object& f, const py::object& concurrency,
               const std::string& executor, bool ordered, const py::object& on_error,
               const py::object& timeout, const py::object& name, std::uint64_t max_failures,
               double max_failure_rate, std::size_t failure_window) {
                const bool native_async = py::isinstance<py_async_op>(f);
                const bool async =
                    native_async || (!py::isinstance<py_op>(f) && PyCallable_Check(f.ptr()) != 0 &&
                                     is_coroutine_function(f));
                const std::string where = async ? where_of(b, "map(f)", "map_async", name)
                                                : where_of(b, "map(f)", "map", name);
                detail::stage_spec s;
                if (py::isinstance<py_op>(f)) {
                    s = native_map(f.cast<const py_op&>().op);
                } else if (native_async) {
                    if (executor != "compute") {
                        throw ferry::invalid_argument(
                            where +
                            ": executor does not apply to an asynchronous op (its calls "
                            "finish on the op's own thread)");
                    }
                    s = native_map_async(f.cast<const py_async_op&>().op);
                } else if (async) {
                    if (executor != "compute") {
                        throw ferry::invalid_argument(
                            where +
                            ": executor does not apply to an async def function (its "
                            "coroutines run on the pipeline's event loop)");
                    }
                    s = python_map_async(f, where);
                } else {
                    check_callable(f, where, "f must be callable or a ferry op");
                    s = python_map(f);
                    s.wants_item = true;  // ferry.this_call() inside it
                }
                s.options =
                    stage_options_of(where, concurrency, executor, ordered, on_error, timeout, name,
                                     max_failures, max_failure_rate, failure_window);
                if (async) check_no_retry(s.options, where);
                return b.with(std::move(s));
            },
            py::arg("f"), FERRY_STAGE_ARGS, R"doc(
Applies f to every element: a ferry op (ops.read_file, image.decode_image(...)) runs in C++
without the GIL; a Python callable takes the GIL for each call (ferry.this_call() tells it its
item); an async def function, or a ferry.AsyncOp (http.Client(...).reader()), runs as
map_async. concurrency calls at once; executor 'io' for
blocking reads; on_error 'fail', 'skip' or ferry.retry(...); timeout in seconds; max_failures,
max_failure_rate over the last failure_window items: a skipping stage's failure budgets.)doc")
        .def(
            "filter",
            [](const py_builder& b, const py::object& pred, const py::object& concurrency,
               const std::string& executor, bool ordered, const py::object& on_error,
               const py::object& timeout, const py::object& name, std::uint64_t max_failures,
               double max_failure_rate, std::size_t failure_window) {
                const std::string where = where_of(b, "filter(pred)", "filter", name);
                check_callable(pred, where, "pred must be a Python callable");
                detail::stage_spec s = python_filter(pred);
                s.wants_item = true;
                s.options =
                    stage_options_of(where, concurrency, executor, ordered, on_error, timeout, name,
                                     max_failures, max_failure_rate, failure_window);
                return b.with(std::move(s));
            },
            py::arg("pred"), FERRY_STAGE_ARGS,
            "Keeps the elements for which pred(x) is true; the others count as filtered.")
        .def(
            "flat_map",
            [](const py_builder& b, const py::object& g, const py::object& concurrency,
               const std::string& executor, bool ordered, const py::object& on_error,
               const py::object& timeout, const py::object& name, std::uint64_t max_failures,
               double max_failure_rate, std::size_t failure_window) {
                const std::string where = where_of(b, "flat_map(g)", "flat_map", name);
                check_callable(g, where, "g must be a Python callable");
                detail::stage_spec s = python_flat_map(g);
                s.wants_item = true;
                s.options =
                    stage_options_of(where, concurrency, executor, ordered, on_error, timeout, name,
                                     max_failures, max_failure_rate, failure_window);
                return b.with(std::move(s));
            },
            py::arg("g"), FERRY_STAGE_ARGS,
            "One in, many out: each element of the iterable g(x) becomes an element.")
        .def(
            "batch",
            [](const py_builder& b, std::size_t n, bool drop_last, const py::object& name) {
                if (n == 0) throw ferry::invalid_argument("batch(n): n must be at least 1");
                detail::stage_spec s;
                s.kind = detail::stage_kind::batch;
                if (!name.is_none()) s.options.name = name.cast<std::string>();
                s.batch_size = n;
                s.drop_last = drop_last;
                s.pack_fn = &pack_values;
                return b.with(std::move(s));
            },
            py::arg("n"), py::kw_only(), py::arg("drop_last") = false, py::arg("name") = py::none(),
            R"doc(
Groups n consecutive elements into one list (ops.collate stacks a list of tensors or images
into one ferry.Tensor). The last batch of an epoch may be short unless drop_last.)doc")
        .def(
            "unbatch",
            [](const py_builder& b, const py::object& name) {
                detail::stage_spec s;
                s.kind = detail::stage_kind::unbatch;
                if (!name.is_none()) s.options.name = name.cast<std::string>();
                s.expand_fn = [](detail::any_value& in, std::vector<detail::any_value>& out, bool) {
                    value_list items = take_list(in.take_as<value>(), "unbatch");
                    for (auto& x : items) out.emplace_back().emplace<value>(std::move(x));
                };
                return b.with(std::move(s));
            },
            py::kw_only(), py::arg("name") = py::none(),
            "The inverse of batch: each element of a list (or tuple) becomes an element.")
        .def(
            "build",
            [](const py_builder& b, const py::object& threads, const py::object& in_flight,
               bool ordered, double max_epoch_failure_rate, const py::object& quarantine,
               const py::object& resume, bool fast_start, std::size_t trace_spans,
               const py::object& autotune, const py::object& logger, int log_burst,
               double log_window, const py::object& on_report, double report_every, bool nvtx) {
                ferry::pipeline_options o;
                if (!threads.is_none()) {
                    o.threads = threads.cast<int>();
                    if (o.threads < 1) {
                        throw ferry::invalid_argument(
                            "build(threads=" + std::to_string(o.threads) +
                            "): threads must be at least 1 (None: half the hardware threads)");
                    }
                }
                if (!in_flight.is_none()) {
                    const auto n = in_flight.cast<std::int64_t>();
                    if (n < 1) {
                        throw ferry::invalid_argument(
                            "build(in_flight=" + std::to_string(n) +
                            "): in_flight must be at least 1 (None: derived from the stages)");
                    }
                    o.in_flight = static_cast<std::size_t>(n);
                }
                o.ordered = ordered;
                o.max_epoch_failure_rate = max_epoch_failure_rate;
                if (!quarantine.is_none()) {
                    o.quarantine = py::str(py::module_::import("os").attr("fspath")(quarantine))
                                       .cast<std::string>();
                }
                if (!resume.is_none()) {
                    std::string text;
                    if (py::isinstance<py::bytes>(resume)) {
                        text = resume.cast<std::string>();
                    } else if (py::isinstance<py::str>(resume)) {
                        text = resume.cast<std::string>();
                    } else {
                        throw py::type_error(
                            "build(resume=...): the bytes pipe.state() returned "
                            "(or that text), got a Python " +
                            std::string(Py_TYPE(resume.ptr())->tp_name));
                    }
                    o.resume_from = ferry::pipeline_state::parse(text);
                }
                o.fast_start = fast_start;
                o.trace_spans = trace_spans;
                o.autotune = autotune_of(autotune);
                o.nvtx = nvtx;
                auto log_decisions =
                    apply_hooks(hook_args{logger, log_burst, log_window, on_report, report_every},
                                o.autotune.has_value() || has_tuned_stage(b.spec.stages), o);
                detail::pipeline_spec spec = b.spec;
                spec.output_bytes = &output_bytes;
                measure_values(spec.stages);
                // The build steps (a CUDA context, an event loop) and compiling (the graph's
                // threads, the engine's locks): not with the GIL held.
                std::unique_ptr<detail::runtime> rt;
                {
                    py::gil_scoped_release released;
                    run_build_steps(spec.stages);
                    rt = detail::compile(std::move(spec), std::move(o));
                }
                return py_pipeline::make(std::move(rt), std::move(log_decisions));
            },
            py::kw_only(), py::arg("threads") = py::none(), py::arg("in_flight") = py::none(),
            py::arg("ordered") = true, py::arg("max_epoch_failure_rate") = 0.5,
            py::arg("quarantine") = py::none(), py::arg("resume") = py::none(),
            py::arg("fast_start") = true, py::arg("trace_spans") = 0,
            py::arg("autotune") = py::none(), py::arg("logger") = py::none(),
            py::arg("log_burst") = 5, py::arg("log_window") = 10.0,
            py::arg("on_report") = py::none(), py::arg("report_every") = 10.0,
            py::arg("nvtx") = true, R"doc(
Starts the pipeline: threads compute threads (None: half the hardware threads; with
autotune=ferry.Autotune(cpu_budget=n), n), in_flight source items at most inside it (None:
derived from the stages), resume a state from pipe.state() to continue from, quarantine a file
for a JSON line per failure, trace_spans > 0 to record spans for write_trace, autotune the
tuner's budgets for the stages with concurrency=ferry.tuned(...). logger(level, message)
receives ferry's log lines (logging's levels: logging.getLogger("ferry").log fits; None:
stderr), at most log_burst per stage per log_window seconds, and the tuner's decisions;
on_report(stats) is called every report_every seconds while an epoch runs; both from ferry's
threads, with the GIL for the call only, never after close(); what they raise goes to
sys.unraisablehook. nvtx: NVTX ranges per call where ferry was built with CUDA.)doc")
        .def("__repr__", [](const py_builder& b) {
            return "ferry.Builder(source + " + std::to_string(b.spec.stages.size()) + " stages)";
        });

    m.def(
        "source",
        [](const py::object& src, const std::optional<ferry::sampling>& sampling) {
            return py_builder{detail::pipeline_spec{python_source(src, sampling), {}, nullptr}};
        },
        py::arg("src"), py::arg("sampling") = py::none(), R"doc(
Starts a pipeline's description from src: a list or tuple (of paths: the native stages read them
without the GIL), a range, another sequence (len and [i]), an iterable (iterated again each
epoch; a generator continues where it stopped) or an epoch factory (epoch -> iterable).
sampling=ferry.Sampling(...) shuffles and shards a sequence.)doc");
}

}  // namespace ferry::python
