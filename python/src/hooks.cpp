// SPDX-License-Identifier: Apache-2.0
/// \file
/// The pipeline's log sink and report as Python callables. The engine calls them from its
/// threads (a stage's, the monitor's) holding none of its locks that the GIL's holder could wait
/// for; each call takes the GIL for itself only. The engine destroys its options with its
/// runtime, so after `close()` nothing holds, nor calls, the callables.
#include "hooks.hpp"

#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "ferry/error.hpp"
#include "ferry/stats.hpp"
#include "value.hpp"

namespace ferry::python {
namespace {

/// `logging`'s number for `level`.
int logging_level(log_level level) {
    switch (level) {
        case log_level::info:
            return 20;
        case log_level::warning:
            return 30;
        case log_level::error:
            return 40;
    }
    return 30;
}

/// Calls `fn(args...)` with the GIL. An exception goes to `sys.unraisablehook` with `fn` as its
/// object (printed to stderr by default, as Python reports errors in callbacks it cannot
/// raise), never into the engine.
template <class Make>
void call_hook(const py_ref& fn, Make&& make_args) noexcept {
    gil_hold gil;
    try {
        py::tuple args = make_args();
        PyObject* r = PyObject_Call(fn.get(), args.ptr(), nullptr);
        if (r == nullptr) {
            PyErr_WriteUnraisable(fn.get());
        } else {
            Py_DECREF(r);
        }
    } catch (py::error_already_set& e) {
        e.restore();
        PyErr_WriteUnraisable(fn.get());
    } catch (...) {
        // Converting the arguments failed without a Python error (out of memory): nothing to
        // report it with that could not fail the same way.
    }
}

/// Text as Python's str: invalid UTF-8 (a file name's bytes) replaced, never an error.
py::str text_of(std::string_view s) {
    PyObject* t = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
    if (t == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(t);
}

void call_logger(const py_ref& fn, log_level level, std::string_view line) {
    call_hook(fn, [&] { return py::make_tuple(logging_level(level), text_of(line)); });
}

/// The engine's `on_report` when the tuner's decisions go to the logger: runs every autotune
/// interval on the monitor thread, logs the decisions made since its last run, and calls the
/// user's `on_report` on the user's schedule. The pipeline also hands it the stats at an epoch's
/// end and at close (`log_decisions`), for the decisions made after the last report.
struct report_shim {
    std::shared_ptr<const py_ref> logger;
    std::shared_ptr<const py_ref> on_report;  ///< may be empty
    std::chrono::steady_clock::duration every{};
    std::chrono::steady_clock::time_point next_report{};  ///< the monitor thread's only
    /// Held while logging, so that each decision is logged once and in order. Taken only by
    /// threads without the GIL (the monitor, the pipeline's consumer side, which releases it).
    std::mutex mutex;
    std::chrono::nanoseconds last_decision{-1};  ///< under `mutex`

    void log_decisions(const pipeline_stats& s) {
        const std::lock_guard lock(mutex);
        for (const auto& d : s.tuning) {
            if (d.at <= last_decision) continue;
            last_decision = d.at;
            std::ostringstream line;
            line << "autotune: " << d;
            call_logger(*logger, log_level::info, line.str());
        }
    }

    void operator()(const pipeline_stats& s) {
        log_decisions(s);
        if (on_report && std::chrono::steady_clock::now() >= next_report) {
            next_report = std::chrono::steady_clock::now() + every;
            call_hook(*on_report, [&] { return py::make_tuple(py::cast(s)); });
        }
    }
};

std::chrono::milliseconds seconds_arg(double s, const char* name) {
    if (!(s > 0) || !std::isfinite(s)) {
        throw ferry::invalid_argument(std::string("build(") + name + "=" + std::to_string(s) +
                                      "): seconds above 0");
    }
    return std::chrono::milliseconds(std::max<std::int64_t>(1, std::llround(s * 1000)));
}

/// The callable `f` as a shared holder; `TypeError` naming `name` when it is not callable.
std::shared_ptr<const py_ref> callable_arg(const py::object& f, const char* name,
                                           const char* form) {
    if (PyCallable_Check(f.ptr()) == 0) {
        throw py::type_error(std::string("build(") + name + "=...): a callable " + form +
                             " or None, got a Python " + Py_TYPE(f.ptr())->tp_name);
    }
    return std::make_shared<const py_ref>(py_ref::borrow(f.ptr()));
}

}  // namespace

std::function<void(const pipeline_stats&)> apply_hooks(const hook_args& a, bool tuned,
                                                       ferry::pipeline_options& o) {
    if (a.log_burst < 0) {
        throw ferry::invalid_argument("build(log_burst=" + std::to_string(a.log_burst) +
                                      "): lines a stage may log per log_window, 0 or more");
    }
    o.log_burst = a.log_burst;
    o.log_window = seconds_arg(a.log_window, "log_window");
    o.report_every = seconds_arg(a.report_every, "report_every");
    std::shared_ptr<const py_ref> logger;
    std::shared_ptr<const py_ref> on_report;
    if (!a.logger.is_none()) {
        logger = callable_arg(a.logger, "logger", "(level, message)");
        o.logger = [logger](log_level level, std::string_view line) {
            call_logger(*logger, level, line);
        };
    }
    if (!a.on_report.is_none()) {
        on_report = callable_arg(a.on_report, "on_report", "(stats)");
        o.on_report = [on_report](const pipeline_stats& s) {
            call_hook(*on_report, [&] { return py::make_tuple(py::cast(s)); });
        };
    }
    if (!logger || !tuned) return {};
    auto shim = std::make_shared<report_shim>();
    shim->logger = logger;
    shim->on_report = on_report;
    shim->every = o.report_every;
    shim->next_report = std::chrono::steady_clock::now() + o.report_every;
    const auto interval = o.autotune ? o.autotune->interval : ferry::autotune{}.interval;
    o.report_every = std::min(o.report_every, interval);
    o.on_report = [shim](const pipeline_stats& s) { (*shim)(s); };
    return [shim](const pipeline_stats& s) { shim->log_decisions(s); };
}

}  // namespace ferry::python
