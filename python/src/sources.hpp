// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.source(src, sampling=None)`: a Python sequence, range, iterable or epoch factory as the
/// engine's type-erased source.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "ferry/detail/spec.hpp"
#include "ferry/sampling.hpp"
#include "python_stage.hpp"
#include "value.hpp"

namespace ferry::python {

namespace py = pybind11;

/// The source for `src` (the caller holds the GIL):
///  * a `ferry.sources.LabelledFiles`: its labelled items, natively (`folder_source`);
///  * a list or tuple: its elements converted once, now (`source_element`: str and int native),
///    then visited as `ferry::from(elements, sampling)` visits a vector: no Python per item
///    unless an element is a Python object;
///  * a `range`: its integers, computed natively, never materialised;
///  * another sequence (`len()` and `[i]`, e.g. a map-style torch Dataset): `src[i]` with the
///    GIL per item, in the sampler's order;
///  * a callable: an epoch factory, `src(epoch)` returning an iterable, called each epoch;
///  * another iterable: `iter(src)` each epoch (a generator continues where it stopped).
/// Every kind of sequence goes through `ferry::from(dataset, sampling)` (the default sampling
/// visits it in order), so its state names its position and size and a resume seeks there.
/// Elements that are str name themselves (`failure.input`), ints by their value.
/// Throws `pybind11::type_error` for a str or bytes (not a list of paths), for `sampling` with a
/// source that is not a sequence, and for an object that is none of the above.
[[nodiscard]] detail::source_spec python_source(py::handle src,
                                                const std::optional<ferry::sampling>& sampling);

/// A range's start, step and length, where all fit 64 bits (its last element too).
[[nodiscard]] bool range_numbers(py::handle r, std::int64_t& start, std::int64_t& step,
                                 std::int64_t& n);

/// Whether `src` is read by position: `len()` and `[i]`, not an iterator, not a mapping (whose
/// `[]` takes keys).
[[nodiscard]] bool is_sequence(py::handle src);

/// `use(dataset)` with `src` as a sized random-access range of `value`s, the one way
/// `ferry.source` and `ferry.mix` read a sequence: a list or tuple converted once, now
/// (`source_element`); a `range` computed natively; another sequence read with `[i]` and the GIL
/// per item. `use` is called with one of three range types, and must return one type; nothing
/// (and `use` not called) where `src` is not a sequence. The caller holds the GIL.
template <class Use>
auto with_dataset(py::handle src, Use&& use) -> std::optional<decltype(use(std::vector<value>{}))> {
    if (PyList_Check(src.ptr()) != 0 || PyTuple_Check(src.ptr()) != 0) {
        std::vector<value> items;
        py::sequence seq = py::reinterpret_borrow<py::sequence>(src);
        items.reserve(seq.size());
        for (auto x : seq) items.push_back(source_element(x));
        return use(std::move(items));
    }
    std::int64_t start = 0;
    std::int64_t step = 1;
    std::int64_t n = 0;
    if (PyRange_Check(src.ptr()) != 0 && range_numbers(src, start, step, n)) {
        return use(std::views::iota(std::int64_t{0}, n) |
                   std::views::transform([start, step](std::int64_t i) {
                       return value(static_cast<std::int64_t>(start + i * step));
                   }));
    }
    if (!is_sequence(src)) return std::nullopt;
    auto seq = std::make_shared<py_ref>(py_ref::borrow(src.ptr()));
    const auto size = static_cast<std::int64_t>(py::len(src));
    return use(std::views::iota(std::int64_t{0}, size) |
               std::views::transform([seq](std::int64_t i) {
                   gil_hold gil;
                   PyObject* x = PySequence_GetItem(seq->get(), static_cast<Py_ssize_t>(i));
                   if (x == nullptr) throw fetch_python_error();
                   py::object item = py::reinterpret_steal<py::object>(x);
                   try {
                       return source_element(item);
                   } catch (py::error_already_set& e) {
                       e.restore();
                       throw fetch_python_error();
                   }
               }));
}

}  // namespace ferry::python
