// SPDX-License-Identifier: Apache-2.0
/// \file
/// The Python faces of ferry's values: `ferry.Tensor`, `ferry.Image` and `ferry.Bytes`, with the
/// buffer protocol (numpy.asarray, memoryview) and DLPack (`__dlpack__`, torch.from_dlpack),
/// both without a copy: the Python object, or the DLPack capsule, keeps ferry's memory alive.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "ferry/bytes.hpp"
#include "ferry/image.hpp"
#include "ferry/tensor.hpp"

namespace ferry::python {

namespace py = pybind11;

/// `ferry.Image`: an 8-bit H x W x C image. Shared so that a DLPack export can keep it alive
/// after the Python object is gone.
struct py_image {
    std::shared_ptr<ferry::image> img;
};

/// `ferry.Bytes`: a file's contents as `read_file` returned them.
struct py_bytes {
    std::shared_ptr<ferry::bytes> data;
};

/// Registers `Tensor`, `Image`, `Bytes` and `tensor(obj)` in `m`.
void bind_arrays(py::module_& m);

/// A contiguous copy of a buffer-protocol object (numpy array, bytes, memoryview) as a tensor of
/// its shape and element type; throws `ferry::invalid_argument` naming `what` for an element
/// type ferry has no dtype for. The caller holds the GIL.
[[nodiscard]] ferry::tensor tensor_from_buffer(py::handle obj, const char* what);

}  // namespace ferry::python
