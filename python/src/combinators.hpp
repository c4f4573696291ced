// SPDX-License-Identifier: Apache-2.0
/// \file
/// `Builder.route(select, *branches)` and `Builder.batch_by(cost, ...)`: the builder's stages
/// that take a Python function of an element (the GIL per item) and fill the engine's route and
/// batch_by specs, as `ferry::builder<T>::route` and `batch_by` do.
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

namespace py = pybind11;

/// Adds `route` and `batch_by` to `m.Builder` (after `bind_builder`).
void bind_combinators(py::module_& m);

}  // namespace ferry::python
