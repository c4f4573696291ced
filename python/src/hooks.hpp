// SPDX-License-Identifier: Apache-2.0
/// \file
/// `build(logger=..., on_report=...)`: Python callables as the pipeline's log sink and periodic
/// report (`pipeline_options::logger`, `on_report`), called from ferry's threads with the GIL for
/// the call only; the tuner's decisions reach the logger too.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>

#include "ferry/options.hpp"
#include "ferry/stats.hpp"

namespace ferry::python {

namespace py = pybind11;

/// What `build()` says about logging and reports.
struct hook_args {
    py::object logger;         ///< None or `callable(level: int, message: str)`
    int log_burst = 5;         ///< `pipeline_options::log_burst`
    double log_window = 10;    ///< seconds
    py::object on_report;      ///< None or `callable(stats: ferry.Stats)`
    double report_every = 10;  ///< seconds
};

/// Checks `a` (`TypeError` for a hook that is not callable, `ValueError` for a negative burst or
/// a window or interval that is not a positive number of seconds) and sets `o`'s logger,
/// log_burst, log_window, on_report and report_every. The logger gets `logging`'s levels
/// (INFO 20, WARNING 30, ERROR 40), so `logging.getLogger("ferry").log` fits. `tuned`: the
/// pipeline has tuned stages or an autotune budget, whose decisions then go to the logger too
/// ("autotune: 1.5 s: decode 1 -> 2 (...)"), checked every `o.autotune`'s interval. A hook that
/// raises is reported through `sys.unraisablehook` (the hook as its object) and the pipeline
/// goes on. The caller holds the GIL. Returns, when decisions are logged, what logs those not
/// logged yet from a `pipeline_stats` (the pipeline calls it at an epoch's end and at close,
/// without the GIL); else an empty function.
[[nodiscard]] std::function<void(const pipeline_stats&)> apply_hooks(const hook_args& a, bool tuned,
                                                                     ferry::pipeline_options& o);

}  // namespace ferry::python
