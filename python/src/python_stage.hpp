// SPDX-License-Identifier: Apache-2.0
/// \file
/// Python callables as engine stages (map, filter, flat_map), each call holding the GIL for the
/// call only, and `python_error`: a Python exception as a `ferry::error`.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <functional>
#include <string>

#include "ferry/detail/spec.hpp"
#include "ferry/error.hpp"
#include "value.hpp"

namespace ferry::python {

namespace py = pybind11;

/// A Python exception raised in a stage (or a Python source), as the engine records it:
/// `what()` is "<type>: <message> [Python traceback, most recent call last: <file>:<line> in
/// <function>; ...]" (one line: failure records and logs escape newlines), and `exception()`
/// the exception object itself, its `__traceback__` set, for `ferry.StageError.__cause__`.
/// Transient, like any exception that is not a `ferry::error` of ferry's own: `ferry.retry`
/// tries it again.
class python_error : public ferry::error {
  public:
    python_error(const std::string& what, py_ref exception)
        : ferry::error(ferry::errc::stage_failed, what, /*transient=*/true),
          exception_(std::move(exception)) {}
    /// The exception object (hold the GIL to use it).
    [[nodiscard]] const py_ref& exception() const noexcept { return exception_; }

  private:
    py_ref exception_;
};

/// The Python error now set (`PyErr_Occurred()`), taken and cleared, as a `python_error`. The
/// caller holds the GIL.
[[nodiscard]] python_error fetch_python_error();

/// A map stage calling `f(x)`: the input converted to Python (`to_python`), the result back
/// (`from_python`).
[[nodiscard]] detail::stage_spec python_map(py::object f);
/// A filter stage keeping the elements for which `pred(x)` is true.
[[nodiscard]] detail::stage_spec python_filter(py::object pred);
/// A flat_map stage: each element of the iterable `g(x)` returns becomes an element.
[[nodiscard]] detail::stage_spec python_flat_map(py::object g);

/// A route's `select_fn`: `select(x)`, with the GIL, as a branch index. `x` is a Python view of
/// the element as `filter` gives it (bytes and images lent and taken back, the rest a copy); a
/// result that is not an int is a `TypeError` naming `where` ("route(select) (stage
/// 'route#2')"). The engine checks the index is a branch.
[[nodiscard]] std::function<std::int64_t(detail::any_value&)> python_selector(py::object select,
                                                                              std::string where);
/// A batch_by's `cost_fn`: `cost(x)`, with the GIL, as a number (`x` as for `python_selector`);
/// a result that is not a number is a `TypeError` naming `where`. The engine checks the cost
/// is finite and not negative.
[[nodiscard]] std::function<double(detail::any_value&)> python_cost(py::object cost,
                                                                    std::string where);

}  // namespace ferry::python
