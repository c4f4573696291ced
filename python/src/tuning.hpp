// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.tuned`, `ferry.Tuned` and `ferry.Autotune`: a stage's concurrency chosen at run time
/// by the pipeline's tuner, within budgets (`ferry::tuned`, `ferry::autotune`).
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "ferry/options.hpp"

namespace ferry::python {

namespace py = pybind11;

/// A stage's `concurrency=` as `stage_options::concurrency`: an int of at least 1, or
/// `ferry.tuned` / `ferry.tuned(lo, hi)` (`ferry::tuned`'s encoding). `ValueError` for an int
/// below 1, `TypeError` for anything else, both naming `where`.
[[nodiscard]] int concurrency_of(const py::object& concurrency, const std::string& where);

/// `build(autotune=...)`: None or a `ferry.Autotune`; `TypeError` for anything else.
[[nodiscard]] std::optional<ferry::autotune> autotune_of(const py::object& autotune);

/// Registers `Tuned`, `tuned` and `Autotune` in `m`.
void bind_tuning(py::module_& m);

}  // namespace ferry::python
