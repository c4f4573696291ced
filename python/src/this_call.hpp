// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.this_call()`, `ferry.ItemInfo`, `ferry.item_rng()` and `ferry.RandomEngine`: what C++
/// gives a stage's call about its item (`ferry::item_info`, `ferry::item_rng`), from Python.
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

namespace py = pybind11;

/// Registers `ItemInfo`, `RandomEngine`, `this_call` and `item_rng` in `m`.
void bind_this_call(py::module_& m);

}  // namespace ferry::python
