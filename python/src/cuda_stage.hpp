// SPDX-License-Identifier: Apache-2.0
/// \file
/// `Builder.to_cuda(...)`: C++'s `to_cuda()` stage over Python's values (`ferry::cuda`), and
/// `ferry.cuda_built()` / `ferry.cuda_device_count()`.
#pragma once

#include <pybind11/pybind11.h>

namespace ferry::python {

namespace py = pybind11;

/// Adds `to_cuda` to `m.Builder` (after `bind_builder`) and registers `cuda_built` and
/// `cuda_device_count` in `m`.
void bind_cuda_stage(py::module_& m);

}  // namespace ferry::python
