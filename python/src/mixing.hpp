// SPDX-License-Identifier: Apache-2.0
/// \file
/// Sources made of sources: `ferry.mix` (datasets drawn by weight, `ferry::mix`), `ferry.merge`
/// (sub-pipelines in a weighted round robin, `ferry::merge`) and `ferry.zip` (two sources paired
/// item by item, `ferry::zip`), each resumable exactly as in C++.
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

namespace py = pybind11;

/// Registers `MixInput`, `mix`, `merge` and `zip` in `m` (after `bind_builder`).
void bind_mixing(py::module_& m);

}  // namespace ferry::python
