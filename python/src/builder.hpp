// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.source()`, `ferry.Builder`, `ferry.Sampling`, `ferry.retry()` and `ferry.world()`; the
/// Builder's value (`py_builder`) and the checks of stage options that combinators.cpp shares.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ferry/detail/spec.hpp"
#include "ferry/options.hpp"

namespace ferry::python {

namespace py = pybind11;

/// What `ferry.source(...)....` has described so far: a source and its stages (a route's
/// branches start from one with no source).
struct py_builder {
    detail::pipeline_spec spec;

    /// "map#3", the engine's name of the next stage of `kind` when it has none (the engine
    /// numbers a route's branch stages right after the route).
    [[nodiscard]] std::string next_name(const char* kind) const {
        std::size_t n = spec.stages.size();
        for (const auto& s : spec.stages) {
            for (const auto& b : s.branches) n += b.size();
        }
        return std::string(kind) + "#" + std::to_string(n + 1);
    }
    /// This builder with `s` appended.
    [[nodiscard]] py_builder with(detail::stage_spec s) const {
        py_builder next{spec};
        next.spec.stages.push_back(std::move(s));
        return next;
    }
};

/// `where` for messages: "map(f) (stage 'map#3')", or with the stage's own `name`.
[[nodiscard]] std::string where_of(const py_builder& b, const char* call, const char* kind,
                                   const py::object& name);

/// `on_error` ('fail', 'skip' or `ferry.retry(...)`) as a policy; `ValueError` for another
/// string, `TypeError` for another object, both naming `where`.
[[nodiscard]] ferry::error_policy policy_of(const py::object& on_error, const std::string& where);

/// The stage options `map`, `map_async`, `filter` and `flat_map` share, checked; `where` names
/// the call and the stage ("map(f) (stage 'map#3')"); `concurrency` an int or
/// `ferry.tuned(...)`, `executor` 'compute' or 'io', `timeout` seconds or None.
[[nodiscard]] ferry::stage_options stage_options_of(
    const std::string& where, const py::object& concurrency, const std::string& executor,
    bool ordered, const py::object& on_error, const py::object& timeout, const py::object& name,
    std::uint64_t max_failures, double max_failure_rate, std::size_t failure_window);

/// `ValueError` naming `where` when `o.on_error` is a retry: a stage whose input is handed over
/// (map_async) cannot try again.
void check_no_retry(const ferry::stage_options& o, const std::string& where);

/// Throws `TypeError` ("<where>: <what>, got a Python int") unless `f` is callable.
void check_callable(const py::object& f, const std::string& where, const char* what);

/// `batch`'s and `batch_by`'s packing: the items, in order, as one list value.
void pack_values(std::vector<detail::any_value>& items, detail::any_value& out);

/// Registers the builder, its options and `source` in `m`.
void bind_builder(py::module_& m);

}  // namespace ferry::python
