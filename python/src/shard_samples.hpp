// SPDX-License-Identifier: Apache-2.0
/// \file
/// A tar shard's sample (`ferry::sample`) as a Python pipeline's value, and the native ops that
/// read its members (`ferry.shards.field`, `fields`, `labelled`).
///
/// A sample travels as a tuple of pairs, natively (no Python object, no GIL): one `(ext, bytes)`
/// pair per member in extension order, then `("__key__", key)` and `("__url__", shard)`, and for
/// a damaged sample (`sample::damaged()`) last `("__damage__", (code, message, path))`. Python
/// sees that tuple (a stage, the loop): `dict(sample)` is WebDataset's sample dict, its reserved
/// keys winning over a member whose extension is `__key__` (they come last). The ops rethrow a
/// damaged sample's error, so the first stage that reads its members fails it under its policy,
/// as in C++.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "ferry/shards.hpp"
#include "value.hpp"

namespace ferry::python {

namespace py = pybind11;

/// `s` as a value (its members' bytes moved, not copied).
[[nodiscard]] value sample_value(ferry::sample&& s);

/// What a sample value is named by in failure records: `sample::path`, `<shard>#<key>` (or, for
/// a shard's lost rest, `<shard>#@<offset>`). Empty for a value that is no sample.
[[nodiscard]] std::string sample_path(value& v);

/// Registers `field`, `fields` and `labelled` in `shards`.
void bind_sample_ops(py::module_& shards);

}  // namespace ferry::python
