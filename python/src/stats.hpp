// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.Stats`, `ferry.StageStats` and `ferry.Failure`.
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

namespace py = pybind11;

/// Registers `Stats` (ferry::pipeline_stats), `StageStats` and `Failure` in `m`.
void bind_stats(py::module_& m);

}  // namespace ferry::python
