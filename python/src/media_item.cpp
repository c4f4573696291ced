// SPDX-License-Identifier: Apache-2.0
/// \file
/// `take_media_item`: a media op's source and the item's own window.
#include "media_item.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "convert.hpp"
#include "ferry/error.hpp"

namespace ferry::python {
namespace {

/// "3 s", "0.25 s", "nan s": a number of seconds for a message.
std::string seconds_text(double s) {
    std::string t = std::to_string(s);
    if (t.find('.') != std::string::npos) {
        while (t.back() == '0') t.pop_back();
        if (t.back() == '.') t.pop_back();
    }
    return t + " s";
}

[[noreturn]] void bad_item(std::string_view op, const std::string& what) {
    throw ferry::invalid_argument(std::string(op) + ": " + what);
}

/// A window bound as seconds: an int or a float (Python's, or a native int); `none_ok`: None is
/// no value. `which` names the bound in messages.
std::optional<double> seconds_of(value&& v, std::string_view op, const char* which, bool none_ok) {
    if (v.holds<std::monostate>() && none_ok) return std::nullopt;
    if (v.holds<std::int64_t>()) return static_cast<double>(v.as<std::int64_t>());
    if (v.holds<double>()) return v.as<double>();
    if (v.holds<py_ref>()) {
        gil_hold gil;
        PyObject* o = v.as<py_ref>().get();
        if (o == Py_None && none_ok) return std::nullopt;
        // An int or a float, or a number that says it is one (NumPy's scalars); not a bool.
        if (PyBool_Check(o) == 0 && (PyFloat_Check(o) != 0 || PyLong_Check(o) != 0 ||
                                     PyObject_HasAttrString(o, "__float__") != 0)) {
            const double d = PyFloat_AsDouble(o);
            if (!(d == -1.0 && PyErr_Occurred() != nullptr)) return d;
            PyErr_Clear();
        }
    }
    bad_item(op, std::string("the item's window (source, start, end) has ") + kind_of(v) +
                     " for its " + which + ", not a number of seconds" +
                     (none_ok ? " or None" : ""));
}

/// The elements of a tuple input, or nothing where `v` is not a tuple.
std::optional<value_list> tuple_items(value& v) {
    if (v.holds<value_tuple>()) return std::move(v.as<value_tuple>().items);
    if (!v.holds<py_ref>()) return std::nullopt;
    gil_hold gil;
    PyObject* o = v.as<py_ref>().get();
    if (PyTuple_Check(o) == 0) return std::nullopt;
    value_list items;
    const Py_ssize_t n = PyTuple_GET_SIZE(o);
    items.reserve(static_cast<std::size_t>(n));
    // As a source reads them: a str, an int or a float becomes native, read here once.
    for (Py_ssize_t i = 0; i < n; ++i) items.push_back(source_element(PyTuple_GET_ITEM(o, i)));
    return items;
}

}  // namespace

media_item take_media_item(value&& v, std::string_view op) {
    std::optional<value_list> items = tuple_items(v);
    if (!items) {
        media_item out;
        out.source = take_path_or_bytes(std::move(v), op);
        return out;
    }
    if (items->size() != 3) {
        bad_item(op,
                 "a tuple item is the window (source, start, end) (end None: to the stream's "
                 "end), got a tuple of " +
                     std::to_string(items->size()) +
                     (items->size() == 2 ? " (a pair (x, label) keeps its label where its label "
                                           "is an int)"
                                         : ""));
    }
    media_item out;
    out.source = take_path_or_bytes(std::move((*items)[0]), op);
    out.windowed = true;
    out.start = *seconds_of(std::move((*items)[1]), op, "start", false);
    out.end = seconds_of(std::move((*items)[2]), op, "end", true);
    if (!std::isfinite(out.start) || out.start < 0.0) {
        bad_item(op, "the item's window (source, start, end) starts at " + seconds_text(out.start) +
                         ": a start is 0 or more seconds");
    }
    if (out.end && !(std::isfinite(*out.end) && *out.end > out.start)) {
        bad_item(op, "the item's window (source, start, end) ends at " + seconds_text(*out.end) +
                         ", not after its start " + seconds_text(out.start));
    }
    return out;
}

}  // namespace ferry::python
