// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's errors in Python: `ferry.Error` and its subclasses, and the translation of every
/// `ferry::error` into them (`ferry.StageError` chained to its cause with `raise ... from`).
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

namespace py = pybind11;

/// Creates `Error` (RuntimeError), `StageError`, `InvalidArgument` (also a ValueError),
/// `IOError` (also an OSError), `DecodeError` and `TimeoutError` (also the builtin
/// TimeoutError) in `m`, and registers the translator of C++ exceptions into them:
///  * `ferry::stage_error` -> `StageError` with `.stage`, `.item`, `.items`, `.input`, `.cause`
///    (the cause's message) and `__cause__`: the Python exception a Python stage raised
///    (`python_error::exception()`), or the cause translated the same way;
///  * `python_error` (a Python exception that left the engine) -> that exception;
///  * another `ferry::error` -> the class of its code, its message redacted, `.code` its name;
///  * `ferry::invalid_argument` -> `InvalidArgument`, a ValueError (so `threads=0` is one).
void bind_errors(py::module_& m);

}  // namespace ferry::python
