// SPDX-License-Identifier: Apache-2.0
/// \file
/// `Builder.describe(f)` and `Builder.exclude(...)`: what C++'s `source_builder` says before the
/// first stage, how its items are named and which to leave out (`ferry::load_quarantine`).
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

namespace py = pybind11;

/// Adds `describe` and `exclude` to `m.Builder` (after `bind_builder`).
void bind_source_names(py::module_& m);

}  // namespace ferry::python
