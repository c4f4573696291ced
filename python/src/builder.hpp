// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.source()`, `ferry.Builder`, `ferry.Sampling`, `ferry.retry()` and `ferry.world()`.
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

namespace py = pybind11;

/// Registers the builder, its options and `source` in `m`.
void bind_builder(py::module_& m);

}  // namespace ferry::python
