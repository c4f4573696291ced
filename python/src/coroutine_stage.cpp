// SPDX-License-Identifier: Apache-2.0
/// \file
/// Python coroutines as the engine's map_async stage. Each call: on the engine's thread, with the
/// GIL, `f(x)` makes the coroutine and hands it to the stage's event loop (ferry/_async.py);
/// when it ends, the loop's thread converts its result with the GIL and completes the engine's
/// sink *without* it (completing starts the next waiting call, which takes engine locks). The
/// loop cancels a coroutine whose result is no longer wanted (asked with the GIL released), so a
/// closing pipeline, which waits for its outstanding calls, is not held up by one.
#include "coroutine_stage.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "builder.hpp"
#include "convert.hpp"
#include "ferry/error.hpp"
#include "ops.hpp"
#include "python_stage.hpp"
#include "value.hpp"

namespace ferry::python {
namespace {

/// A pipeline's event loop for one stage (a `ferry._async.Loop`), stopped when the pipeline's
/// copy of the stage goes (its runtime is destroyed: every call has ended by then).
struct event_loop {
    py_ref loop;
    event_loop() = default;
    event_loop(const event_loop&) = delete;
    event_loop& operator=(const event_loop&) = delete;
    ~event_loop() {
        if (!loop) return;
        gil_hold gil;
        if (PyObject* r = PyObject_CallMethod(loop.get(), "close", nullptr)) {
            Py_DECREF(r);
        } else {
            PyErr_WriteUnraisable(loop.get());
        }
    }
};

/// The loop's `done(task)` for one call: the task's result, exception or cancellation to the
/// engine's sink. Called by the loop's thread with the GIL.
py::cpp_function done_callback(std::shared_ptr<detail::async_sink> sink) {
    return py::cpp_function([sink = std::move(sink)](const py::object& task) {
        value result;
        std::exception_ptr failed;
        try {
            if (task.attr("cancelled")().cast<bool>()) {
                failed = std::make_exception_ptr(ferry::error(
                    ferry::errc::cancelled,
                    "map_async: the coroutine was cancelled (the pipeline stopped, the epoch "
                    "ended or the stage's timeout passed)"));
            } else {
                py::object exc = task.attr("exception")();
                if (exc.is_none()) {
                    result = from_python(task.attr("result")());
                } else {
                    // Raised again as it was, its traceback with it, for the failure's text.
                    PyObject* type = Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())));
                    PyObject* tb = PyException_GetTraceback(exc.ptr());
                    PyErr_Restore(type, exc.release().ptr(), tb);
                    failed = std::make_exception_ptr(fetch_python_error());
                }
            }
        } catch (py::error_already_set& e) {
            e.restore();
            failed = std::make_exception_ptr(fetch_python_error());
        } catch (...) {
            failed = std::current_exception();
        }
        py::gil_scoped_release released;
        if (failed) {
            sink->fail(std::move(failed));
        } else {
            detail::any_value v;
            v.emplace<value>(std::move(result));
            sink->complete(std::move(v));
        }
    });
}

/// The loop's `stop()` for one call: whether its result is still wanted, asked without the GIL
/// (the sink takes a lock of the engine's).
py::cpp_function stop_callback(std::shared_ptr<detail::async_sink> sink) {
    return py::cpp_function([sink = std::move(sink)]() {
        py::gil_scoped_release released;
        return sink->stop_requested();
    });
}

bool awaitable(PyObject* o) {
    return PyCoro_CheckExact(o) != 0 || PyObject_HasAttrString(o, "__await__") != 0;
}

}  // namespace

bool is_coroutine_function(const py::object& f) {
    return py::module_::import("inspect").attr("iscoroutinefunction")(f).cast<bool>();
}

detail::stage_spec python_map_async(py::object f, std::string where) {
    auto fn = std::make_shared<py_ref>(py_ref::borrow(f.ptr()));
    detail::stage_spec s;
    s.kind = detail::stage_kind::map_async;
    s.start_fn = [](detail::any_value&&, std::shared_ptr<detail::async_sink> sink) {
        sink->fail(std::make_exception_ptr(
            ferry::error(ferry::errc::internal, "map_async: the stage ran without being built")));
    };
    s.on_build = [fn, where = std::move(where)](detail::stage_spec& self) {
        auto loop = std::make_shared<event_loop>();
        {
            gil_hold gil;
            try {
                py::object l = py::module_::import("ferry._async").attr("Loop")("ferry " + where);
                loop->loop = py_ref::borrow(l.ptr());
            } catch (py::error_already_set& e) {
                e.restore();
                throw fetch_python_error();
            }
        }
        self.start_fn = [fn, loop, where](detail::any_value&& in,
                                          std::shared_ptr<detail::async_sink> sink) {
            std::exception_ptr failed;
            {
                gil_hold gil;
                try {
                    py::object arg = to_python(in.take_as<value>());
                    PyObject* r = PyObject_CallOneArg(fn->get(), arg.ptr());
                    arg = py::object();
                    if (r == nullptr) throw fetch_python_error();
                    py::object call = py::reinterpret_steal<py::object>(r);
                    if (!awaitable(call.ptr())) {
                        PyErr_Format(PyExc_TypeError,
                                     "%s: f must return an awaitable (call an async def "
                                     "function), got a Python %s",
                                     where.c_str(), Py_TYPE(call.ptr())->tp_name);
                        throw fetch_python_error();
                    }
                    py::handle(loop->loop.get())
                        .attr("submit")(call, done_callback(sink), stop_callback(sink));
                } catch (py::error_already_set& e) {
                    e.restore();
                    failed = std::make_exception_ptr(fetch_python_error());
                } catch (...) {
                    failed = std::current_exception();
                }
            }
            // Failing settles the call, which may start the next one: without the GIL.
            if (failed) sink->fail(std::move(failed));
        };
    };
    return s;
}

void bind_coroutine_stage(py::module_& m) {
    auto builder = py::reinterpret_borrow<py::class_<py_builder>>(m.attr("Builder"));
    builder.def(
        "map_async",
        [](const py_builder& b, const py::object& f, const py::object& concurrency, bool ordered,
           const py::object& on_error, const py::object& timeout, const py::object& name,
           std::uint64_t max_failures, double max_failure_rate, std::size_t failure_window) {
            const std::string where = where_of(b, "map_async(f)", "map_async", name);
            detail::stage_spec s;
            if (py::isinstance<py_async_op>(f)) {
                s = native_map_async(f.cast<const py_async_op&>().op);
            } else {
                check_callable(f, where,
                               "f must be an async def function (or return an awaitable) or a "
                               "ferry.AsyncOp");
                s = python_map_async(f, where);
            }
            s.options = stage_options_of(where, concurrency, "compute", ordered, on_error, timeout,
                                         name, max_failures, max_failure_rate, failure_window);
            check_no_retry(s.options, where);
            return b.with(std::move(s));
        },
        py::arg("f"), py::kw_only(), py::arg("concurrency") = py::int_(1),
        py::arg("ordered") = true, py::arg("on_error") = "fail", py::arg("timeout") = py::none(),
        py::arg("name") = py::none(), py::arg("max_failures") = 0,
        py::arg("max_failure_rate") = 0.0, py::arg("failure_window") = 100, R"doc(
Applies an async def function, or a native ferry.AsyncOp (http.Client(...).reader()), to every
element (C++'s map_async). An async def function's f(x) coroutine runs on an
asyncio event loop of the pipeline's own thread, up to concurrency coroutines at once, and its
result becomes the element. map(f) does this by itself for an async def f. on_error is 'fail'
or 'skip' (a retry does not apply: the input was handed over); timeout in seconds cancels the
coroutine. A coroutine still running when the pipeline stops, or its epoch ends, is cancelled.)doc");
}

}  // namespace ferry::python
