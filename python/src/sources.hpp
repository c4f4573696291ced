// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.source(src, sampling=None)`: a Python sequence, range, iterable or epoch factory as the
/// engine's type-erased source.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

#include "ferry/detail/spec.hpp"
#include "ferry/sampling.hpp"

namespace ferry::python {

namespace py = pybind11;

/// The source for `src` (the caller holds the GIL):
///  * a `ferry.sources.LabelledFiles`: its labelled items, natively (`folder_source`);
///  * a list or tuple: its elements converted once, now (`source_element`: str and int native),
///    then visited as `ferry::from(elements, sampling)` visits a vector: no Python per item
///    unless an element is a Python object;
///  * a `range`: its integers, computed natively, never materialised;
///  * another sequence (`len()` and `[i]`, e.g. a map-style torch Dataset): `src[i]` with the
///    GIL per item, in the sampler's order;
///  * a callable: an epoch factory, `src(epoch)` returning an iterable, called each epoch;
///  * another iterable: `iter(src)` each epoch (a generator continues where it stopped).
/// Every kind of sequence goes through `ferry::from(dataset, sampling)` (the default sampling
/// visits it in order), so its state names its position and size and a resume seeks there.
/// Elements that are str name themselves (`failure.input`), ints by their value.
/// Throws `pybind11::type_error` for a str or bytes (not a list of paths), for `sampling` with a
/// source that is not a sequence, and for an object that is none of the above.
[[nodiscard]] detail::source_spec python_source(py::handle src,
                                                const std::optional<ferry::sampling>& sampling);

}  // namespace ferry::python
