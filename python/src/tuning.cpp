// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.tuned(lo, hi)` as a stage's concurrency and `ferry.Autotune(...)` as build()'s
/// budgets, checked where they are made.
#include "tuning.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>

#include "ferry/error.hpp"

namespace ferry::python {
namespace {

/// `ferry.Tuned`: the range of concurrencies the tuner may give a stage (`hi` 0: the stage
/// kind's default, as C++'s bare `ferry::tuned`).
struct py_tuned {
    int lo = 1;
    int hi = 0;
};

py_tuned make_tuned(int lo, int hi) {
    if (lo < 1 || lo > ferry::tuned_concurrency::limit) {
        throw ferry::invalid_argument("ferry.tuned(lo=" + std::to_string(lo) +
                                      ", hi=" + std::to_string(hi) + "): lo must be 1 to " +
                                      std::to_string(ferry::tuned_concurrency::limit));
    }
    if (hi != 0 && (hi < lo || hi > ferry::tuned_concurrency::limit)) {
        throw ferry::invalid_argument("ferry.tuned(lo=" + std::to_string(lo) +
                                      ", hi=" + std::to_string(hi) + "): hi must be lo to " +
                                      std::to_string(ferry::tuned_concurrency::limit) +
                                      " (or 0: the stage kind's default)");
    }
    return py_tuned{lo, hi};
}

std::string tuned_repr(const py_tuned& t) {
    if (t.lo == 1 && t.hi == 0) return "ferry.tuned";
    return "ferry.tuned(" + std::to_string(t.lo) + ", " + std::to_string(t.hi) + ")";
}

ferry::autotune make_autotune(double cpu_budget, const py::object& memory_budget, double interval) {
    const auto say = [](const std::string& what) {
        throw ferry::invalid_argument("ferry.Autotune(" + what);
    };
    if (!(cpu_budget == 0 || (std::isfinite(cpu_budget) && cpu_budget >= 1))) {
        say("cpu_budget=" + std::to_string(cpu_budget) +
            "): cores the pipeline may use, at least 1 (or 0: the arena's threads)");
    }
    if (!std::isfinite(interval) || interval < 0.01) {
        say("interval=" + std::to_string(interval) +
            "): seconds between the tuner's decisions, at least 0.01");
    }
    std::int64_t bytes = 0;
    try {
        bytes = memory_budget.cast<std::int64_t>();
    } catch (const py::cast_error&) {
        throw py::type_error(
            "ferry.Autotune(memory_budget=...): bytes as an int (0: no limit), got a Python " +
            std::string(Py_TYPE(memory_budget.ptr())->tp_name));
    }
    if (bytes < 0) {
        say("memory_budget=" + std::to_string(bytes) +
            "): bytes the items in flight may hold, 0 or more (0: no limit)");
    }
    ferry::autotune a;
    a.cpu_budget = cpu_budget;
    a.memory_budget = static_cast<std::uint64_t>(bytes);
    a.interval =
        std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(interval * 1000)));
    return a;
}

}  // namespace

int concurrency_of(const py::object& concurrency, const std::string& where) {
    if (py::isinstance<py_tuned>(concurrency)) {
        const auto& t = concurrency.cast<const py_tuned&>();
        return ferry::tuned(t.lo, t.hi);
    }
    if (PyLong_Check(concurrency.ptr()) != 0) {
        int overflow = 0;
        const long long n = PyLong_AsLongLongAndOverflow(concurrency.ptr(), &overflow);
        if (overflow == 0 && n >= 1 && n <= 1'000'000) return static_cast<int>(n);
        PyErr_Clear();
        throw ferry::invalid_argument(where + ": concurrency must be at least 1, got " +
                                      py::str(concurrency).cast<std::string>() +
                                      " (or ferry.tuned(lo, hi): chosen at run time)");
    }
    throw py::type_error(where +
                         ": concurrency must be an int or ferry.tuned(lo, hi), got a Python " +
                         std::string(Py_TYPE(concurrency.ptr())->tp_name));
}

std::optional<ferry::autotune> autotune_of(const py::object& autotune) {
    if (autotune.is_none()) return std::nullopt;
    if (py::isinstance<ferry::autotune>(autotune)) return autotune.cast<ferry::autotune>();
    throw py::type_error(
        "build(autotune=...): a ferry.Autotune(cpu_budget=..., memory_budget=..., "
        "interval=...) or None, got a Python " +
        std::string(Py_TYPE(autotune.ptr())->tp_name));
}

void bind_tuning(py::module_& m) {
    py::class_<py_tuned>(m, "Tuned", R"doc(
A stage's concurrency chosen at run time by the pipeline's tuner: what ferry.tuned and
ferry.tuned(lo, hi) are. Pass it as concurrency= of map, filter or flat_map.)doc")
        .def_readonly("lo", &py_tuned::lo, "The fewest calls at once the tuner may give.")
        .def_readonly("hi", &py_tuned::hi,
                      "The most (0: the arena's threads for a compute stage, 64 for an io one).")
        .def(
            "__call__", [](const py_tuned&, int lo, int hi) { return make_tuned(lo, hi); },
            py::arg("lo"), py::arg("hi") = 0, "ferry.tuned(lo, hi): a range of its own.")
        .def("__eq__",
             [](const py_tuned& a, const py_tuned& b) { return a.lo == b.lo && a.hi == b.hi; })
        .def("__repr__", &tuned_repr);
    m.attr("tuned") = py_tuned{};

    py::class_<ferry::autotune>(m, "Autotune", R"doc(
The tuner's budgets, for build(autotune=...): every interval seconds it measures each stage, the
rate the loop takes items at and the process's CPU time, and moves one tuned stage's concurrency
(or undoes its last move when the rate fell), never past cpu_budget cores (0: the arena's
threads; the arena gets int(cpu_budget) threads unless threads= says fewer) nor memory_budget
bytes held by the items in flight (0: no limit).)doc")
        .def(py::init(&make_autotune), py::kw_only(), py::arg("cpu_budget") = 0.0,
             py::arg("memory_budget") = py::int_(0), py::arg("interval") = 0.5)
        .def_readonly("cpu_budget", &ferry::autotune::cpu_budget)
        .def_readonly("memory_budget", &ferry::autotune::memory_budget)
        .def_property_readonly("interval",
                               [](const ferry::autotune& a) {
                                   return std::chrono::duration<double>(a.interval).count();
                               })
        .def("__repr__", [](const ferry::autotune& a) {
            return "ferry.Autotune(cpu_budget=" +
                   py::repr(py::float_(a.cpu_budget)).cast<std::string>() +
                   ", memory_budget=" + std::to_string(a.memory_budget) + ", interval=" +
                   py::repr(py::float_(std::chrono::duration<double>(a.interval).count()))
                       .cast<std::string>() +
                   ")";
        });
}

}  // namespace ferry::python
