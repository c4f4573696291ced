// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.Pipeline`: iteration without the GIL, Ctrl-C, close, and the exit hook.
#include "pipeline.hpp"

#include <pybind11/stl.h>

#include <fstream>
#include <utility>

#include "convert.hpp"
#include "ferry/error.hpp"
#include "ferry/pipeline_state.hpp"
#include "thread_state.hpp"

namespace ferry::python {
namespace {

/// Runs `f` without the GIL: released here when this thread holds it.
template <class F>
decltype(auto) without_gil(F&& f) {
    if (PyGILState_Check() != 0) {
        py::gil_scoped_release released;
        return f();
    }
    return f();
}

/// Every pipeline made, for the exit hook. Never destroyed: it may be read while the process
/// exits.
std::mutex registry_mutex;
std::vector<std::weak_ptr<py_pipeline>>& registry() {
    static auto* pipelines = new std::vector<std::weak_ptr<py_pipeline>>();
    return *pipelines;
}

/// atexit: closes every pipeline still open, while threads may still take the GIL (after
/// atexit the interpreter ends any thread that asks for it, an engine thread included).
void close_all() {
    std::vector<std::shared_ptr<py_pipeline>> open;
    {
        std::lock_guard lock(registry_mutex);
        for (auto& w : registry()) {
            if (auto p = w.lock()) open.push_back(std::move(p));
        }
        registry().clear();
    }
    for (auto& p : open) p->close();
    stop_keeping_thread_states();
}

}  // namespace

std::shared_ptr<py_pipeline> py_pipeline::make(
    std::unique_ptr<detail::runtime> rt, std::function<void(const pipeline_stats&)> at_epoch_end) {
    std::shared_ptr<py_pipeline> p(new py_pipeline(std::move(rt), std::move(at_epoch_end)));
    std::lock_guard lock(registry_mutex);
    auto& r = registry();
    std::erase_if(r, [](const std::weak_ptr<py_pipeline>& w) { return w.expired(); });
    r.push_back(p);
    return p;
}

py_pipeline::py_pipeline(std::unique_ptr<detail::runtime> rt,
                         std::function<void(const pipeline_stats&)> at_epoch_end)
    : runtime_(std::move(rt)), at_epoch_end_(std::move(at_epoch_end)) {}

py_pipeline::~py_pipeline() {
    try {
        close();
    } catch (...) {
        // A destructor cannot report: stats() kept nothing, nothing else is lost.
    }
}

detail::runtime& py_pipeline::open_runtime(const char* what) {
    if (!runtime_) {
        throw ferry::invalid_argument(std::string("ferry.Pipeline.") + what +
                                      ": the pipeline is closed");
    }
    return *runtime_;
}

std::optional<value> py_pipeline::next() {
    detail::any_value out;
    bool got = false;
    bool interrupted = false;
    std::exception_ptr failed;
    {
        py::gil_scoped_release released;
        std::lock_guard consumer(consumer_);
        std::shared_lock life(life_);
        detail::runtime& rt = open_runtime("__next__");
        // The loop's own work is this thread's time between two takes, not the waiter's.
        rt.consumer_enters();
        // An output already there is taken on this thread: the waiter's two thread wake-ups
        // cost more than the call (python/README.md, "Ctrl-C"), and nothing here can block.
        detail::next_poll ready = detail::next_poll::not_ready;
        try {
            ready = rt.try_next(out);
        } catch (...) {
            failed = std::current_exception();
        }
        if (failed || ready != detail::next_poll::not_ready) {
            got = ready == detail::next_poll::value;
        } else {
            interrupted = !waiter_.run(
                [&] {
                    try {
                        got = rt.next(out);
                    } catch (...) {
                        failed = std::current_exception();
                    }
                },
                [&rt] { rt.stop(); });
        }
        rt.consumer_leaves();
        if (!interrupted && !failed && !got && at_epoch_end_) at_epoch_end_(rt.stats());
    }
    if (interrupted) throw py::error_already_set();  // the handler's KeyboardInterrupt
    if (failed) std::rethrow_exception(failed);
    if (!got) return std::nullopt;
    return std::optional<value>(out.take_as<value>());
}

void py_pipeline::abandon_epoch() {
    without_gil([this] {
        std::lock_guard consumer(consumer_);
        std::shared_lock life(life_);
        if (runtime_) runtime_->abandon_epoch();
    });
}

void py_pipeline::stop() {
    without_gil([this] {
        std::shared_lock life(life_);
        if (runtime_) runtime_->stop();
    });
}

pipeline_stats py_pipeline::stats() {
    return without_gil([this] {
        std::shared_lock life(life_);
        if (!runtime_ && final_stats_) return *final_stats_;
        return open_runtime("stats").stats();
    });
}

std::vector<failure> py_pipeline::failures() {
    return without_gil([this] {
        std::shared_lock life(life_);
        if (!runtime_) return final_failures_;
        return runtime_->failures();
    });
}

std::string py_pipeline::state() {
    return without_gil([this] {
        std::lock_guard consumer(consumer_);
        std::shared_lock life(life_);
        return open_runtime("state").state().serialize();
    });
}

void py_pipeline::write_trace(const std::filesystem::path& path) {
    without_gil([&] {
        std::shared_lock life(life_);
        detail::runtime& rt = open_runtime("write_trace");
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) {
            throw ferry::io_error("write_trace: cannot open '" + path.string() + "' for writing",
                                  false);
        }
        rt.write_trace(out);
        out.flush();
        if (!out) throw ferry::io_error("write_trace: writing '" + path.string() + "' failed");
    });
}

void py_pipeline::close() {
    without_gil([this] { close_released(); });
}

void py_pipeline::close_released() {
    bool orphaned = false;
    {
        // A next() waiting on another thread returns now, and frees the consumer's lock.
        std::shared_lock life(life_);
        if (runtime_) runtime_->stop();
        // In a process forked after the pipeline was built its threads are not there:
        // destroying it would wait for them, so it is left as it is.
        orphaned = runtime_ && runtime_->orphaned();
    }
    if (orphaned) {
        std::unique_lock life(life_);
        (void)runtime_.release();
        at_epoch_end_ = nullptr;
        return;
    }
    std::lock_guard consumer(consumer_);
    std::unique_lock life(life_);
    if (!runtime_) return;
    final_stats_ = runtime_->stats();
    final_failures_ = runtime_->failures();
    if (at_epoch_end_) {
        at_epoch_end_(*final_stats_);
        at_epoch_end_ = nullptr;  // nothing of the hooks is held after close()
    }
    // Waits for the calls in progress: a Python stage's call finishes with the GIL, which this
    // thread does not hold.
    runtime_.reset();
}

bool py_pipeline::closed() {
    return without_gil([this] {
        std::shared_lock life(life_);
        return runtime_ == nullptr;
    });
}

py_epoch::~py_epoch() {
    if (!pipe || !started || finished) return;
    try {
        pipe->abandon_epoch();
    } catch (...) {
        // Dropping an iterator cannot fail; the next epoch starts afresh either way.
    }
}

void bind_pipeline(py::module_& m) {
    py::class_<py_epoch>(m, "_Epoch", "One epoch of a ferry.Pipeline (what iter(pipe) returns).")
        .def("__iter__", [](py::object self) { return self; })
        .def("__next__", [](py_epoch& e) -> py::object {
            if (e.finished) throw py::stop_iteration();
            std::optional<value> v;
            try {
                v = e.pipe->next();
            } catch (...) {
                e.finished = true;  // failed or stopped: nothing left to abandon
                throw;
            }
            if (!v) {
                e.finished = true;
                throw py::stop_iteration();
            }
            e.started = true;
            return to_python(std::move(*v));
        });

    py::class_<py_pipeline, std::shared_ptr<py_pipeline>>(m, "Pipeline", R"doc(
A running pipeline (what Builder.build() returns). Iterate it for one epoch; iterate again for
the next. Leaving a loop early ends that epoch's work. The loop waits without the GIL; Ctrl-C
raises KeyboardInterrupt within a second and stops the pipeline. close() (or a with block, or
the last reference going) stops it and frees its threads.)doc")
        .def("__iter__",
             [](const std::shared_ptr<py_pipeline>& self) {
                 return std::make_unique<py_epoch>(self);
             })
        .def("stop", &py_pipeline::stop,
             "Stops for good, from any thread; a loop waiting for an element ends.")
        .def("stats", &py_pipeline::stats,
             "Per-stage counters and timings (str() prints ferry's table; .as_dict()).")
        .def("failures", &py_pipeline::failures,
             "Every item a stage failed on: stage, item, epoch, message, code, input.")
        .def(
            "state", [](py_pipeline& self) { return py::bytes(self.state()); },
            "Where the epoch stands, as bytes to save with a checkpoint and pass to "
            "build(resume=...).")
        .def(
            "write_trace",
            [](py_pipeline& self, const py::object& path) {
                self.write_trace(std::filesystem::path(
                    py::str(py::module_::import("os").attr("fspath")(path)).cast<std::string>()));
            },
            py::arg("path"),
            "Writes the recorded spans as Chrome trace-event JSON (needs build(trace_spans=N)).")
        .def("close", &py_pipeline::close,
             "Stops the pipeline, waits for the calls in progress and frees its threads.")
        .def_property_readonly("closed", &py_pipeline::closed)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](py_pipeline& self, const py::args&) { self.close(); });

    py::module_::import("atexit").attr("register")(py::cpp_function(&close_all));
}

}  // namespace ferry::python
