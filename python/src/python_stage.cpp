// SPDX-License-Identifier: Apache-2.0
/// \file
/// Python callables as stages: the GIL for the call only, exceptions as `python_error`.
#include "python_stage.hpp"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "convert.hpp"

namespace ferry::python {
namespace {

/// "module.Name" as Python's traceback prints a type (builtins without the module).
std::string type_name(PyObject* type) {
    try {
        py::handle t(type);
        const std::string name = py::str(t.attr("__qualname__"));
        const std::string module = py::str(t.attr("__module__"));
        return module == "builtins" ? name : module + "." + name;
    } catch (const py::error_already_set&) {
        PyErr_Clear();
        return reinterpret_cast<PyTypeObject*>(type)->tp_name;
    }
}

/// "file:line in function; ..." of a traceback, outermost call first.
std::string frames_of(PyObject* tb) {
    std::string out;
    try {
        py::object frames = py::module_::import("traceback").attr("extract_tb")(py::handle(tb));
        for (auto f : frames) {
            if (!out.empty()) out += "; ";
            out += py::str(f.attr("filename")).cast<std::string>() + ":" +
                   py::str(f.attr("lineno")).cast<std::string>() + " in " +
                   py::str(f.attr("name")).cast<std::string>();
        }
    } catch (const py::error_already_set&) {
        PyErr_Clear();
    }
    return out;
}

/// Calls `fn(arg)`; a Python exception becomes a `python_error`. Holds the GIL.
py::object call(PyObject* fn, py::object arg) {
    PyObject* r = PyObject_CallOneArg(fn, arg.ptr());
    arg = py::object();  // the stage's reference only: a result that is the argument is sole
    if (r == nullptr) throw fetch_python_error();
    return py::reinterpret_steal<py::object>(r);
}

/// Runs `body` with the GIL, turning a pybind11 error (a conversion that raised) into a
/// `python_error` so that no pybind11 exception object outlives the GIL.
template <class F>
decltype(auto) with_gil(F&& body) {
    gil_hold gil;
    try {
        return body();
    } catch (py::error_already_set& e) {
        e.restore();
        throw fetch_python_error();
    }
}

/// Calls `fn(x)`, `x` the Python form of `v`, and leaves `v` as it was: bytes and images are
/// lent to Python and taken back after the call (without a copy where `fn` kept no reference);
/// the rest stays as it is and `fn` gets a Python copy, so that a path stays a native string.
/// Holds the GIL; a Python exception becomes a `python_error`.
py::object call_keeping(PyObject* fn, value& v) {
    const bool lend = v.holds<ferry::bytes>() || v.holds<ferry::image>();
    py::object arg = to_python(lend ? std::move(v) : value(v));
    PyObject* r = PyObject_CallOneArg(fn, arg.ptr());
    std::optional<python_error> failed;
    if (r == nullptr) failed.emplace(fetch_python_error());
    if (lend) v = from_python(arg);
    if (failed) throw *failed;
    return py::reinterpret_steal<py::object>(r);
}

}  // namespace

python_error fetch_python_error() {
    PyObject* type = nullptr;
    PyObject* val = nullptr;
    PyObject* tb = nullptr;
    PyErr_Fetch(&type, &val, &tb);
    if (type == nullptr) {
        return python_error("an unknown Python error (none was set)", py_ref{});
    }
    PyErr_NormalizeException(&type, &val, &tb);
    if (tb != nullptr && val != nullptr) PyException_SetTraceback(val, tb);
    std::string what = type_name(type);
    if (val != nullptr) {
        PyObject* s = PyObject_Str(val);
        if (s != nullptr) {
            const char* text = PyUnicode_AsUTF8(s);
            if (text != nullptr && *text != '\0') what += std::string(": ") + text;
            Py_DECREF(s);
        }
        PyErr_Clear();
    }
    if (tb != nullptr) {
        const std::string frames = frames_of(tb);
        if (!frames.empty()) {
            what += " [Python traceback, most recent call last: " + frames + "]";
        }
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return python_error(what, py_ref::steal(val));
}

detail::stage_spec python_map(py::object f) {
    auto fn = std::make_shared<py_ref>(py_ref::borrow(f.ptr()));
    detail::stage_spec s;
    s.kind = detail::stage_kind::map;
    s.map_fn = [fn](detail::any_value& in, detail::any_value& out, bool last_attempt) {
        value& v = in.get<value>();
        value result = with_gil([&] {
            py::object arg = to_python(last_attempt ? std::move(v) : value(v));
            return from_python(call(fn->get(), std::move(arg)));
        });
        out.emplace<value>(std::move(result));
    };
    s.retry_reads_input = true;  // a retry's attempt gets a copy of the input
    return s;
}

detail::stage_spec python_filter(py::object pred) {
    auto fn = std::make_shared<py_ref>(py_ref::borrow(pred.ptr()));
    detail::stage_spec s;
    s.kind = detail::stage_kind::filter;
    s.filter_fn = [fn](detail::any_value& a) {
        value& v = a.get<value>();
        return with_gil([&] {
            py::object r = call_keeping(fn->get(), v);
            const int keep = PyObject_IsTrue(r.ptr());
            if (keep < 0) throw fetch_python_error();
            return keep == 1;
        });
    };
    return s;
}

std::function<std::int64_t(detail::any_value&)> python_selector(py::object select,
                                                                std::string where) {
    auto fn = std::make_shared<py_ref>(py_ref::borrow(select.ptr()));
    return [fn, where = std::move(where)](detail::any_value& a) -> std::int64_t {
        value& v = a.get<value>();
        return with_gil([&] {
            py::object r = call_keeping(fn->get(), v);
            if (PyIndex_Check(r.ptr()) == 0) {
                PyErr_Format(PyExc_TypeError,
                             "%s: select must return an int, the index of a branch; got a "
                             "Python %s",
                             where.c_str(), Py_TYPE(r.ptr())->tp_name);
                throw fetch_python_error();
            }
            const Py_ssize_t b = PyNumber_AsSsize_t(r.ptr(), nullptr);  // clamps a huge int
            if (b == -1 && PyErr_Occurred() != nullptr) throw fetch_python_error();
            return static_cast<std::int64_t>(b);
        });
    };
}

std::function<double(detail::any_value&)> python_cost(py::object cost, std::string where) {
    auto fn = std::make_shared<py_ref>(py_ref::borrow(cost.ptr()));
    return [fn, where = std::move(where)](detail::any_value& a) {
        value& v = a.get<value>();
        return with_gil([&] {
            py::object r = call_keeping(fn->get(), v);
            if (PyFloat_Check(r.ptr()) == 0 && PyLong_Check(r.ptr()) == 0 &&
                PyIndex_Check(r.ptr()) == 0 && !py::hasattr(r, "__float__")) {
                PyErr_Format(PyExc_TypeError,
                             "%s: cost must return a number (int or float), got a Python %s",
                             where.c_str(), Py_TYPE(r.ptr())->tp_name);
                throw fetch_python_error();
            }
            const double c = PyFloat_AsDouble(r.ptr());
            if (c == -1.0 && PyErr_Occurred() != nullptr) throw fetch_python_error();
            return c;
        });
    };
}

detail::stage_spec python_flat_map(py::object g) {
    auto fn = std::make_shared<py_ref>(py_ref::borrow(g.ptr()));
    detail::stage_spec s;
    s.kind = detail::stage_kind::flat_map;
    s.expand_fn = [fn](detail::any_value& in, std::vector<detail::any_value>& out,
                       bool last_attempt) {
        value& v = in.get<value>();
        with_gil([&] {
            py::object arg = to_python(last_attempt ? std::move(v) : value(v));
            py::object r = call(fn->get(), std::move(arg));
            PyObject* it = PyObject_GetIter(r.ptr());
            if (it == nullptr) throw fetch_python_error();
            py::object iter = py::reinterpret_steal<py::object>(it);
            while (PyObject* x = PyIter_Next(it)) {
                py::object item = py::reinterpret_steal<py::object>(x);
                out.emplace_back().emplace<value>(from_python(item));
            }
            if (PyErr_Occurred() != nullptr) throw fetch_python_error();
        });
    };
    s.retry_reads_input = true;
    return s;
}

}  // namespace ferry::python
