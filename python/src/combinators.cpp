// SPDX-License-Identifier: Apache-2.0
/// \file
/// `Builder.route` and `Builder.batch_by`: a Python selector or cost function (the GIL per
/// item) in the engine's route and batch_by stages, checked as `ferry::builder<T>` checks them.
#include "combinators.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "builder.hpp"
#include "ferry/builder.hpp"
#include "ferry/error.hpp"
#include "python_stage.hpp"

namespace ferry::python {
namespace {

/// `on_error` of a stage whose function is called once per item (route, batch_by): 'fail' or
/// 'skip'; a retry is a `ValueError`, as the engine would refuse it.
ferry::error_policy once_policy_of(const py::object& on_error, const std::string& where,
                                   const char* why) {
    ferry::error_policy p = policy_of(on_error, where);
    if (p.attempts > 1) {
        throw ferry::invalid_argument(where +
                                      ": on_error must be 'fail' or 'skip'; a retry does "
                                      "not apply (" +
                                      why + ")");
    }
    return p;
}

/// Branch `k` of a route: `f(start)`, which must be `start` with stages added.
std::vector<detail::stage_spec> branch_stages(const py::handle f, std::size_t k,
                                              const std::string& where) {
    const std::string which = "branch " + std::to_string(k);
    check_callable(py::reinterpret_borrow<py::object>(f), where,
                   (which + " must be a function taking a Builder and returning it with the "
                            "branch's stages, e.g. lambda b: b.map(f)")
                       .c_str());
    py::object r = f(py_builder{});
    if (!py::isinstance<py_builder>(r)) {
        throw py::type_error(where + ": " + which + " returned a Python " +
                             Py_TYPE(r.ptr())->tp_name +
                             "; a branch returns the Builder it was given with its stages, e.g. "
                             "lambda b: b.map(f)");
    }
    const auto& b = r.cast<const py_builder&>();
    if (b.spec.source.open) {
        throw ferry::invalid_argument(where + ": " + which +
                                      " returned a Builder with a source of its own; a branch "
                                      "adds stages to the Builder it was given (to join "
                                      "sources, use ferry.merge)");
    }
    return b.spec.stages;
}

}  // namespace

void bind_combinators(py::module_& m) {
    auto builder = py::reinterpret_borrow<py::class_<py_builder>>(m.attr("Builder"));
    builder.def(
        "route",
        [](const py_builder& b, const py::object& select, const py::args& branches,
           const py::object& name, const py::object& on_error, bool ordered,
           const py::object& names) {
            const std::string where = where_of(b, "route(select, *branches)", "route", name);
            check_callable(select, where, "select must be a Python callable (x -> branch index)");
            if (branches.empty()) {
                throw py::type_error(where +
                                     ": give at least one branch (a function taking a Builder and "
                                     "returning it with the branch's stages)");
            }
            detail::stage_spec s;
            s.kind = detail::stage_kind::route;
            if (!name.is_none()) s.options.name = name.cast<std::string>();
            s.options.on_error =
                once_policy_of(on_error, where, "the selector is called once per element");
            s.options.ordered = ordered;
            if (!names.is_none()) {
                s.branch_names = names.cast<std::vector<std::string>>();
                if (s.branch_names.size() != branches.size()) {
                    throw ferry::invalid_argument(
                        where + ": " + std::to_string(s.branch_names.size()) + " names for " +
                        std::to_string(branches.size()) + " branches");
                }
            }
            for (std::size_t k = 0; k < branches.size(); ++k) {
                s.branches.push_back(branch_stages(branches[k], k, where));
            }
            detail::check_branches("route", s.branches);
            s.select_fn = python_selector(select, where);
            return b.with(std::move(s));
        },
        py::arg("select"), py::kw_only(), py::arg("name") = py::none(),
        py::arg("on_error") = "fail", py::arg("ordered") = true, py::arg("names") = py::none(),
        R"doc(
Sends each element down one of several branches and joins them again, as C++'s route:
select(x) returns the branch's index (0 for the first branch; a Python call, with the GIL, per
element), and each branch is a function that takes a Builder and returns it with the branch's
stages (map, filter, flat_map, unbatch; no batch), e.g.
    .route(lambda x: 0 if x < 10 else 1, lambda b: b.map(small), lambda b: b.map(large))
The branches run in the pipeline's one graph; input order is kept across them unless
ordered=False; every element is counted once, by the route, then by its branch's stages, named
'<route>/<branch> <stage>' (<branch>: its index, or names[i]). A selector that raises or
returns an index with no branch fails the element under on_error ('fail' or 'skip').)doc");

    builder.def(
        "batch_by",
        [](const py_builder& b, const py::object& cost, double max_cost,
           const std::vector<double>& buckets, std::int64_t buffer, bool drop_last,
           const py::object& on_error, const py::object& name) {
            const std::string where = where_of(b, "batch_by(cost)", "batch_by", name);
            check_callable(cost, where, "cost must be a Python callable (x -> number)");
            const auto say = [&where](const std::string& what) {
                throw ferry::invalid_argument(where + ": " + what);
            };
            if (!(max_cost > 0) || !std::isfinite(max_cost)) {
                say("max_cost must be a finite number above 0, got " + std::to_string(max_cost));
            }
            for (std::size_t i = 0; i < buckets.size(); ++i) {
                const double x = buckets[i];
                if (!std::isfinite(x) || (i > 0 && !(buckets[i - 1] < x))) {
                    say("bucket bounds must be finite and ascending; bound " + std::to_string(i) +
                        " is " + std::to_string(x));
                }
            }
            if (buffer < 1) say("buffer must be at least 1 element, got " + std::to_string(buffer));
            detail::stage_spec s;
            s.kind = detail::stage_kind::batch_by;
            if (!name.is_none()) s.options.name = name.cast<std::string>();
            s.options.on_error =
                once_policy_of(on_error, where, "an element's cost is computed once");
            s.batch_size = static_cast<std::size_t>(buffer);
            s.drop_last = drop_last;
            s.max_cost = max_cost;
            s.cost_bounds = buckets;
            s.cost_fn = python_cost(cost, where);
            s.pack_fn = &pack_values;
            return b.with(std::move(s));
        },
        py::arg("cost"), py::kw_only(), py::arg("max_cost"),
        py::arg("buckets") = std::vector<double>{}, py::arg("buffer") = 1000,
        py::arg("drop_last") = false, py::arg("on_error") = "fail", py::arg("name") = py::none(),
        R"doc(
Groups elements into lists by cost (tokens, pixels, seconds) instead of count, as C++'s
batch_by: cost(x) returns a number (a Python call, with the GIL, per element); elements of one
bucket (buckets: ascending bounds; element of cost c joins bucket i, the number of bounds <= c)
are batched together, and a bucket's batch closes when the next element would take its summed
cost past max_cost. The stage gathers buffer elements at a time (a window, in input order),
groups them and emits the window's batches in the order they closed, then its partly filled
buckets in the order they were started: the same input gives the same batches on every run,
and a pipeline with it resumes exactly. An element that costs more than max_cost alone is a
batch of its own. drop_last leaves out the last window's unclosed batches. A cost that raises,
is not a number, or is negative, NaN or infinite fails the element under on_error ('fail' or
'skip').)doc");
}

}  // namespace ferry::python
