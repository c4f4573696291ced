// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.sources`: datasets listed natively (`image_folder`, `files`, `lines`), and the sources
/// `ferry.source` makes of them, whose items are native values (no Python per item).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>

#include "ferry/detail/spec.hpp"
#include "ferry/sampling.hpp"
#include "ferry/sources.hpp"

namespace ferry::python {

namespace py = pybind11;

/// `ferry.sources.LabelledFiles`: the files of an image folder with their labels and the class
/// names (`ferry::sources::labelled_files`, immutable, shared with the sources made of it).
struct py_labelled_files {
    std::shared_ptr<const ferry::sources::labelled_files> files;
};

/// The source of `src` where it is a `LabelledFiles` (the caller holds the GIL): its files in
/// `sampling`'s order, each item a labelled item, the list value `[path, label]` (a string and
/// an int, native: per-item native ops map the path and keep the label, `ops.collate` stacks the
/// labels into an int64 tensor), named by its path in failure records. Empty for another `src`.
[[nodiscard]] std::optional<detail::source_spec> folder_source(py::handle src,
                                                               const ferry::sampling& sampling);

/// Registers `LabelledFiles`, `image_folder`, `files` and `lines` in `sources` (the module
/// `ferry._ferry.sources`).
void bind_folder_sources(py::module_& sources);

}  // namespace ferry::python
