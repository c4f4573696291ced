// SPDX-License-Identifier: Apache-2.0
/// \file
/// Naming a source's items and leaving some out, as `ferry::source_builder::describe` and
/// `exclude` do: the engine reads `source_spec::describe` once per item on the source's thread
/// (names in failure records, the log and the quarantine file) and drops, as filtered, the
/// items whose name `source_spec::excluded` holds.
#include "source_names.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>

#include "builder.hpp"
#include "convert.hpp"
#include "ferry/detail/redact.hpp"
#include "ferry/error.hpp"
#include "ferry/quarantine.hpp"
#include "python_stage.hpp"
#include "value.hpp"

namespace ferry::python {
namespace {

/// Refuses `call` on a builder with stages: what only a source can say.
void check_source_only(const py_builder& b, const char* call) {
    if (!b.spec.stages.empty()) {
        throw ferry::invalid_argument(std::string(call) +
                                      ": only right after the source (ferry.source(...)), before "
                                      "its first stage");
    }
}

/// The text `f(x)` names an item by: a str, or an os.PathLike's path. The caller holds the GIL.
std::string name_of(const py::object& r) {
    py::object s = r;
    if (!py::isinstance<py::str>(r)) {
        if (py::hasattr(r, "__fspath__")) s = py::module_::import("os").attr("fspath")(r);
        if (!py::isinstance<py::str>(s)) {
            throw py::type_error(
                "describe(f): f must return a str or an os.PathLike, got a "
                "Python " +
                std::string(Py_TYPE(r.ptr())->tp_name));
        }
    }
    return s.cast<std::string>();
}

}  // namespace

void bind_source_names(py::module_& m) {
    auto builder = py::reinterpret_borrow<py::class_<py_builder>>(m.attr("Builder"));
    builder.def(
        "describe",
        [](const py_builder& b, const py::object& f) {
            check_source_only(b, "describe(f)");
            check_callable(f, "describe(f)", "f must be a Python callable");
            auto fn = std::make_shared<py_ref>(py_ref::borrow(f.ptr()));
            py_builder next = b;
            next.spec.source.describe = [fn](detail::any_value& v, std::string& out) {
                gil_hold gil;
                try {
                    py::object arg = to_python(value(v.get<value>()));
                    PyObject* r = PyObject_CallOneArg(fn->get(), arg.ptr());
                    if (r == nullptr) throw fetch_python_error();
                    out = name_of(py::reinterpret_steal<py::object>(r));
                } catch (py::error_already_set& e) {
                    e.restore();
                    throw fetch_python_error();
                }
                // As C++'s describe(f): a returned URL's credentials never reach a record.
                if (detail::may_hold_credentials(out)) out = detail::redact_url(out);
            };
            return next;
        },
        py::arg("f"), R"doc(
Names each source item by f(x) (a str or os.PathLike) in failures (Failure.input), log lines
and the quarantine file, instead of its own str or int; right after ferry.source(...). f is
called once per item, with the GIL, on the source's thread; a URL's credentials are REDACTED
before ferry keeps the name. An f that raises fails the source.)doc");
    builder.def(
        "exclude",
        [](const py_builder& b, const py::iterable& inputs, const py::object& quarantine) {
            check_source_only(b, "exclude(...)");
            if (!b.spec.source.describe) {
                throw ferry::invalid_argument(
                    "exclude(...): the source's elements have no name to match the list "
                    "against; name them first with .describe(f)");
            }
            auto list = std::make_shared<ferry::quarantine_list>();
            if (!quarantine.is_none()) {
                *list = ferry::load_quarantine(
                    py::str(py::module_::import("os").attr("fspath")(quarantine))
                        .cast<std::string>());
            }
            if (py::isinstance<py::str>(inputs)) {
                throw py::type_error(
                    "exclude(inputs): an iterable of names (str), not one str; a quarantine "
                    "file goes to quarantine=");
            }
            for (const auto& x : inputs) {
                if (!py::isinstance<py::str>(x)) {
                    throw py::type_error("exclude(inputs): names are str, got a Python " +
                                         std::string(Py_TYPE(x.ptr())->tp_name));
                }
                list->insert(x.cast<std::string>());
            }
            py_builder next = b;
            auto before = std::move(next.spec.source.excluded);
            next.spec.source.excluded = [list, before](const std::string& input) {
                return list->contains(input) || (before && before(input));
            };
            return next;
        },
        py::arg("inputs") = py::tuple(), py::kw_only(), py::arg("quarantine") = py::none(),
        R"doc(
Leaves out the source items whose name (a path, an int's text, or describe(f)'s) is in inputs
or in the quarantine file a run with build(quarantine=path) wrote (ferry::load_quarantine):
each is pulled, counted as filtered at the source and goes no further. Calls add up. Right after
ferry.source(...) (and describe). ferry.IOError for a file that cannot be read, ValueError
naming the line of one that is not a quarantine file.)doc");
}

}  // namespace ferry::python
