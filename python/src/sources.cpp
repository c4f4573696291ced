// SPDX-License-Identifier: Apache-2.0
/// \file
/// `python_source`: sequences, ranges, iterables and epoch factories as sources.
#include "sources.hpp"

#include <cstdint>
#include <memory>
#include <ranges>
#include <string>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "ferry/from.hpp"
#include "folder_sources.hpp"
#include "io_ops.hpp"
#include "python_stage.hpp"
#include "value.hpp"

namespace ferry::python {
namespace {

/// The source of a `ferry::from(...)` builder, its elements named by their str or int (a
/// tuple's by its first element: a segment's path).
template <class B>
detail::source_spec named(const B& b) {
    auto described = b.describe([](const value& v) -> std::string {
        const value& named = v.holds<value_tuple>() && !v.as<value_tuple>().items.empty()
                                 ? v.as<value_tuple>().items.front()
                                 : v;
        if (named.holds<std::string>()) return named.as<std::string>();
        if (named.holds<std::int64_t>()) return std::to_string(named.as<std::int64_t>());
        return {};
    });
    return detail::source_access::source(described);
}

/// A cursor over `it` (a Python iterator), with the GIL per element.
detail::source_cursor iterator_cursor(py_ref it) {
    auto held = std::make_shared<py_ref>(std::move(it));
    return [held](detail::any_value& out) {
        gil_hold gil;
        PyObject* x = PyIter_Next(held->get());
        if (x == nullptr) {
            if (PyErr_Occurred() != nullptr) throw fetch_python_error();
            return false;
        }
        py::object item = py::reinterpret_steal<py::object>(x);
        try {
            out.emplace<value>(source_element(item));
        } catch (py::error_already_set& e) {
            e.restore();
            throw fetch_python_error();
        }
        return true;
    };
}

/// A source that opens `open(epoch)`'s iterator each epoch.
template <class Open>
detail::source_spec iterating(Open open) {
    auto b = detail::make_source<value>([open](std::uint64_t epoch) {
        py_ref it;
        {
            gil_hold gil;
            PyObject* o = open(epoch);
            if (o == nullptr) throw fetch_python_error();
            PyObject* i = PyObject_GetIter(o);
            Py_DECREF(o);
            if (i == nullptr) throw fetch_python_error();
            it = py_ref::steal(i);
        }
        return iterator_cursor(std::move(it));
    });
    return named(b);
}

}  // namespace

bool range_numbers(py::handle r, std::int64_t& start, std::int64_t& step, std::int64_t& n) {
    try {
        start = r.attr("start").cast<std::int64_t>();
        step = r.attr("step").cast<std::int64_t>();
        n = static_cast<std::int64_t>(py::len(r));
        // The last element must fit too.
        std::int64_t span = 0;
        std::int64_t last = 0;
        return n == 0 || (!__builtin_mul_overflow(n - 1, step, &span) &&
                          !__builtin_add_overflow(start, span, &last));
    } catch (const py::error_already_set&) {
        return false;
    } catch (const py::cast_error&) {
        return false;
    }
}

bool is_sequence(py::handle src) {
    if (PySequence_Check(src.ptr()) == 0 || PyIter_Check(src.ptr()) != 0) return false;
    if (!py::hasattr(src, "__len__")) return false;
    // A mapping's [] takes keys, not positions: iterate it instead.
    py::object mapping = py::module_::import("collections.abc").attr("Mapping");
    return !py::isinstance(src, mapping);
}

detail::source_spec python_source(py::handle src, const std::optional<ferry::sampling>& sampling) {
    const ferry::sampling order = sampling.value_or(ferry::sampling{});
    if (PyUnicode_Check(src.ptr()) != 0 || PyBytes_Check(src.ptr()) != 0) {
        throw py::type_error(std::string("ferry.source(src): src is a ") +
                             Py_TYPE(src.ptr())->tp_name +
                             "; give a list of paths (or another sequence or iterable)");
    }
    if (auto folder = folder_source(src, order)) return std::move(*folder);
#ifdef FERRY_PYTHON_SHARDS
    if (auto tar = tar_source(src, sampling)) return std::move(*tar);
#endif
    if (auto dataset = with_dataset(
            src, [&order](auto&& items) { return named(ferry::from(std::move(items), order)); })) {
        return std::move(*dataset);
    }
    if (sampling) {
        throw py::type_error(std::string("ferry.source(src, sampling=...): sampling visits a "
                                         "sequence by index (len() and [i]); src is a ") +
                             Py_TYPE(src.ptr())->tp_name);
    }
    auto held = std::make_shared<py_ref>(py_ref::borrow(src.ptr()));
    if (PyCallable_Check(src.ptr()) != 0 && PyIter_Check(src.ptr()) == 0) {
        return iterating([held](std::uint64_t epoch) {
            py::object e = py::int_(epoch);
            return PyObject_CallOneArg(held->get(), e.ptr());
        });
    }
    if (py::hasattr(src, "__iter__")) {
        return iterating([held](std::uint64_t) { return py_ref(*held).release(); });
    }
    throw py::type_error(std::string("ferry.source(src): src must be a sequence, an iterable or "
                                     "an epoch factory (epoch -> iterable); got a Python ") +
                         Py_TYPE(src.ptr())->tp_name);
}

}  // namespace ferry::python
