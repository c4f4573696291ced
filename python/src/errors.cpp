// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's exception classes in Python and the translator that raises them.
#include "errors.hpp"

#include <exception>
#include <string>

#include "ferry/error.hpp"
#include "python_stage.hpp"

namespace ferry::python {
namespace {

/// The classes, made once at import (module objects live as long as the interpreter).
struct error_types {
    PyObject* error = nullptr;
    PyObject* stage = nullptr;
    PyObject* invalid = nullptr;
    PyObject* io = nullptr;
    PyObject* decode = nullptr;
    PyObject* timeout = nullptr;
};
error_types types;  // written once at import, read-only after

PyObject* new_type(py::module_& m, const char* name, const char* doc, py::tuple bases) {
    const std::string qualified = std::string("ferry.") + name;
    PyObject* t = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
    if (t == nullptr) throw py::error_already_set();
    m.add_object(name, py::handle(t));  // the module keeps the reference
    return t;
}

PyObject* type_for(ferry::errc code) {
    switch (code) {
        case ferry::errc::invalid_argument:
            return types.invalid;
        case ferry::errc::io:
            return types.io;
        case ferry::errc::decode:
            return types.decode;
        case ferry::errc::timeout:
            return types.timeout;
        default:
            return types.error;
    }
}

/// A new exception of `type` with `message` and `.code`; null with the Python error set when
/// that fails.
PyObject* make_error(PyObject* type, const std::string& message, ferry::errc code) {
    PyObject* text =
        PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "replace");
    if (text == nullptr) return nullptr;
    PyObject* e = PyObject_CallOneArg(type, text);
    Py_DECREF(text);
    if (e == nullptr) return nullptr;
    PyObject* c = PyUnicode_FromString(ferry::to_string(code));
    if (c == nullptr || PyObject_SetAttrString(e, "code", c) != 0) {
        Py_XDECREF(c);
        Py_DECREF(e);
        return nullptr;
    }
    Py_DECREF(c);
    return e;
}

PyObject* exception_of(const std::exception_ptr& p);

/// `ferry.StageError` for `e`, its `__cause__` the cause's exception.
PyObject* stage_exception(const ferry::stage_error& e) {
    PyObject* x = make_error(types.stage, e.what(), e.code());
    if (x == nullptr) return nullptr;
    const auto set = [x](const char* name, py::object v) {
        return PyObject_SetAttrString(x, name, v.ptr()) == 0;
    };
    if (!set("stage", py::str(e.stage())) || !set("item", py::int_(e.item())) ||
        !set("items", py::int_(e.items())) || !set("input", py::str(e.input())) ||
        !set("cause", py::str(e.cause()))) {
        Py_DECREF(x);
        return nullptr;
    }
    if (e.nested_ptr()) {
        PyObject* cause = exception_of(e.nested_ptr());
        if (cause == nullptr) {
            PyErr_Clear();  // the StageError still says what happened
        } else {
            PyException_SetCause(x, cause);  // steals; sets __suppress_context__
        }
    }
    return x;
}

/// The Python exception that stands for `p` (a new reference), or null with an error set.
PyObject* exception_of(const std::exception_ptr& p) {
    try {
        std::rethrow_exception(p);
    } catch (const python_error& e) {
        if (PyObject* original = e.exception().get()) {
            Py_INCREF(original);
            return original;
        }
        return make_error(types.error, e.what(), e.code());
    } catch (const ferry::stage_error& e) {
        return stage_exception(e);
    } catch (const ferry::error& e) {
        // A message ferry did not make can name a URL with its credentials: redacted as the
        // engine's failure records are.
        return make_error(type_for(e.code()), ferry::describe(std::current_exception()), e.code());
    } catch (const std::exception&) {
        const std::string what = ferry::describe(std::current_exception());
        return PyObject_CallFunction(PyExc_RuntimeError, "s", what.c_str());
    } catch (...) {
        return PyObject_CallFunction(PyExc_RuntimeError, "s", "unknown C++ exception");
    }
}

/// Raises the exception for `p` (the translator's way: the error set, no throw).
void raise(const std::exception_ptr& p) {
    PyObject* x = exception_of(p);
    if (x == nullptr) return;  // making it failed: that error stays set
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(x)), x);
    Py_DECREF(x);
}

}  // namespace

void bind_errors(py::module_& m) {
    types.error = new_type(m, "Error",
                           "Root of ferry's errors; .code names the ferry::errc "
                           "('io', 'decode', 'invalid_argument', ...).",
                           py::make_tuple(py::handle(PyExc_RuntimeError)));
    py::handle base(types.error);
    types.stage = new_type(m, "StageError",
                           "A stage failed under on_error='fail' (or past its failure budget): "
                           ".stage, .item, .items, .input, .cause (the message of the cause, "
                           "which is also __cause__).",
                           py::make_tuple(base));
    types.invalid =
        new_type(m, "InvalidArgument", "Options or input that cannot work (also a ValueError).",
                 py::make_tuple(base, py::handle(PyExc_ValueError)));
    types.io = new_type(m, "IOError", "Storage could not be read (also an OSError).",
                        py::make_tuple(base, py::handle(PyExc_OSError)));
    types.decode = new_type(m, "DecodeError",
                            "Media bytes could not be decoded (corrupt, truncated, unsupported).",
                            py::make_tuple(base));
    types.timeout = new_type(m, "TimeoutError",
                             "A call ran past its stage's timeout (also the builtin "
                             "TimeoutError).",
                             py::make_tuple(base, py::handle(PyExc_TimeoutError)));
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const ferry::error&) {
            raise(p);
        }
    });
}

}  // namespace ferry::python
