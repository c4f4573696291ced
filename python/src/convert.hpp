// SPDX-License-Identifier: Apache-2.0
/// \file
/// Values across the boundary: `value` to Python and back (the caller holds the GIL), and what a
/// native op reads from a value it was given (the GIL taken only where the value is a Python
/// object).
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "value.hpp"

namespace ferry::python {

namespace py = pybind11;

/// `v` as a Python object, moving its memory (no pixel or byte copied): nothing -> None, bytes
/// -> `ferry.Bytes`, image -> `ferry.Image`, tensor -> `ferry.Tensor`, string -> str, int ->
/// int, list -> list, tuple -> tuple, packets -> `ferry.video.Packets` (shared), a Python object
/// -> itself. The caller holds the GIL.
[[nodiscard]] py::object to_python(value&& v);

/// Strings (paths, URLs, lines) as a Python list of str, each converted as `to_python` converts
/// a string. The caller holds the GIL.
[[nodiscard]] py::list to_python_strs(std::vector<std::string>&& strings);

/// A Python object as a value: `ferry.Tensor` and `ferry.video.Packets` (shared), `ferry.Image`
/// and `ferry.Bytes` (taken over where no one else holds the object or its memory, else copied)
/// and None become native; anything else stays a Python object. The caller holds the GIL.
[[nodiscard]] value from_python(py::handle o);

/// What a source makes of one of its Python elements: `from_python`, but a `str` becomes a
/// `std::string`, an `int` that fits 64 bits an `std::int64_t`, a `float` a `double`, and a
/// tuple of such elements (or None, or such tuples) a `value_tuple`, so that native stages read
/// paths, indices and `(path, start, end)` segments without the GIL. The caller holds the GIL.
[[nodiscard]] value source_element(py::handle o);

/// The path in `v` for op `op`: a string, or a Python str or os.PathLike (read with the GIL).
/// Throws `ferry::invalid_argument` ("read_file expects a path (str), got a Python int").
[[nodiscard]] std::string take_path(value&& v, std::string_view op);

/// The bytes in `v` for op `op`: ferry's bytes, or a copy of a Python object with the buffer
/// protocol (bytes, bytearray, memoryview; read with the GIL). Throws `ferry::invalid_argument`
/// naming what it got.
[[nodiscard]] ferry::bytes take_bytes(value&& v, std::string_view op);

/// What an op that reads a file or memory (load_video, decode_audio) was given: a path (a
/// string, or a Python str or os.PathLike, read with the GIL) or bytes (ferry's, or a copy of a
/// Python object with the buffer protocol). Throws `ferry::invalid_argument` naming `op` and
/// what it got ("load_video expects a path (str or os.PathLike) or bytes (ferry.Bytes or a
/// bytes-like object), got an int").
[[nodiscard]] std::variant<std::filesystem::path, ferry::bytes> take_path_or_bytes(
    value&& v, std::string_view op);

/// Seconds as Python gave them (finite and checked by the caller), as milliseconds rounded up:
/// what a timeout option takes. Past a billion seconds (31 years) it is a billion seconds,
/// which no timeout reaches, rather than a conversion past int64.
[[nodiscard]] std::chrono::milliseconds ceil_millis(double seconds) noexcept;

/// The elements of a batch for op `op`: a list or tuple value, or a Python list or tuple (converted
/// with `from_python`, with the GIL). Throws `ferry::invalid_argument` naming what it got.
[[nodiscard]] value_list take_list(value&& v, std::string_view op);

}  // namespace ferry::python
