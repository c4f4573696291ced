// SPDX-License-Identifier: Apache-2.0
/// \file
/// `Builder.map_async(f)` (and `map(f)` for an `async def` f): the engine's map_async stage over
/// Python coroutines, run on an asyncio event loop of the pipeline's own (ferry/_async.py).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "ferry/detail/spec.hpp"

namespace ferry::python {

namespace py = pybind11;

/// True when `f` is an `async def` function (`inspect.iscoroutinefunction`), which `map` runs
/// as `map_async`. The caller holds the GIL.
[[nodiscard]] bool is_coroutine_function(const py::object& f);

/// A map_async stage: `f(x)` returns an awaitable, run on the stage's event loop (one per
/// pipeline, started by `build()`), at most the stage's concurrency at once; its result becomes
/// the element. `where` names the stage in the `TypeError` for a result that is not awaitable.
[[nodiscard]] detail::stage_spec python_map_async(py::object f, std::string where);

/// Adds `map_async` to `m.Builder` (after `bind_builder`).
void bind_coroutine_stage(py::module_& m);

}  // namespace ferry::python
