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

/// One native asynchronous op: what `map(op)` starts per item, as C++'s `map_async` does. `start`
/// runs on an engine thread without the GIL, returns at once and settles `sink` exactly once,
/// later and from any thread, with a `value` (or fails it); it never throws.
struct native_async_op {
    /// As Python shows it: "http.Client.reader(timeout=20.0)".
    std::string name;
    std::function<void(value&&, std::shared_ptr<detail::async_sink>)> start;
};

/// `ferry.AsyncOp`: the Python object that holds a native asynchronous op (immutable, shared).
struct py_async_op {
    std::shared_ptr<const native_async_op> op;
};

/// A sink passing a call's result through `map` (on the completing thread, without the GIL) to
/// `to`: what adapts a C++ asynchronous call's result to the `value` a stage delivers.
[[nodiscard]] std::shared_ptr<detail::async_sink> mapped_sink(
    std::shared_ptr<detail::async_sink> to, std::function<value(detail::any_value&&)> map);

/// A map_async stage starting `op` for each item (its results are `value`s).
[[nodiscard]] detail::stage_spec native_map_async(std::shared_ptr<const native_async_op> op);

/// Registers `Op` in `m` and the core ops (`read_file`, `collate`) in `ops`.
void bind_ops(py::module_& m, py::module_& ops);

#ifdef FERRY_PYTHON_IMAGE
/// Registers the image ops' factories in `image` (image_ops.cpp).
void bind_image_ops(py::module_& image);
#endif

}  // namespace ferry::python
