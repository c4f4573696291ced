// SPDX-License-Identifier: Apache-2.0
/// \file
/// Native ops as Python objects (`ferry.ops.read_file`, `ferry.image.decode_image(...)`): a C++
/// callable on values that `map` runs as a C++ stage, with no Python object made and no GIL
/// taken per item.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <string>

#include "ferry/detail/spec.hpp"
#include "value.hpp"

namespace ferry::python {

namespace py = pybind11;

/// One native op: what `map(op)` calls per item. `fn` switches on what the value holds and
/// throws `ferry::invalid_argument` naming what it expected and what it got.
struct native_op {
    /// As Python shows it: "read_file", "decode_image(resize=(224, 224))".
    std::string name;
    std::function<value(value&&)> fn;
    /// The op reads `ferry::detail::current_item()` (its randomness is the item's).
    bool wants_item = false;
    /// The op takes a list (a batch: `collate`). An op that does not, given a labelled item (the
    /// list `[x, label]`, an int label: `ferry.sources.image_folder`'s items), maps `x` and keeps
    /// the label.
    bool takes_lists = false;
};

/// `ferry.Op`: the Python object that holds a native op (immutable, shared).
struct py_op {
    std::shared_ptr<const native_op> op;
};

/// A map stage calling `op` (each retry attempt but the last on a copy of its input); a labelled
/// item's label passes by an op that does not take lists.
[[nodiscard]] detail::stage_spec native_map(std::shared_ptr<const native_op> op);

/// Registers `Op` in `m` and the core ops (`read_file`, `collate`) in `ops`.
void bind_ops(py::module_& m, py::module_& ops);

#ifdef FERRY_PYTHON_IMAGE
/// Registers the image ops' factories in `image` (image_ops.cpp).
void bind_image_ops(py::module_& image);
#endif

}  // namespace ferry::python
