// SPDX-License-Identifier: Apache-2.0
/// \file
/// The module `ferry._ferry`: what the package `ferry` (python/ferry/) re-exports.
#include <pybind11/pybind11.h>

#include "arrays.hpp"
#include "builder.hpp"
#include "combinators.hpp"
#include "coroutine_stage.hpp"
#include "cuda_stage.hpp"
#include "errors.hpp"
#include "ferry/version.hpp"
#include "folder_sources.hpp"
#include "io_ops.hpp"
#include "mixing.hpp"
#include "ops.hpp"
#include "pipeline.hpp"
#include "source_names.hpp"
#include "stats.hpp"
#include "this_call.hpp"
#include "thread_state.hpp"
#include "tuning.hpp"
#include "value.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_ferry, m) {
    m.doc() = "ferry's native module; import ferry instead (python/README.md).";
#ifdef Py_GIL_DISABLED
    // Nothing in the module relies on the GIL for its own state (python/README.md, "The rules"):
    // a free-threaded interpreter may keep running without one. pybind11 2.10 has no
    // py::mod_gil_not_used(), so the single-phase module says so itself (CPython 3.13+).
    PyUnstable_Module_SetGIL(m.ptr(), Py_MOD_GIL_NOT_USED);
#endif
    m.attr("__version__") = ferry::version;
    m.def("_gil_acquisitions", &ferry::python::gil_hold::acquisitions,
          "Diagnostics: how many times ferry's threads took the GIL since import (a native "
          "chain takes it for no item; a Python stage once per call).");
    m.def("_kept_thread_states", &ferry::python::kept_thread_states,
          "Diagnostics: the Python thread states ferry's threads keep now (one per thread that "
          "called Python, until it ends and another thread deletes its state).");
    ferry::python::bind_errors(m);
    ferry::python::bind_arrays(m);
    ferry::python::bind_stats(m);
    ferry::python::bind_pipeline(m);
    ferry::python::bind_tuning(m);
    ferry::python::bind_builder(m);
    ferry::python::bind_combinators(m);
    ferry::python::bind_mixing(m);
    ferry::python::bind_coroutine_stage(m);
    ferry::python::bind_cuda_stage(m);
    ferry::python::bind_this_call(m);
    ferry::python::bind_source_names(m);
    py::module_ ops = m.def_submodule("ops", "Native ops of ferry::core.");
    ferry::python::bind_ops(m, ops);
    py::module_ sources = m.def_submodule("sources", "Datasets listed natively (ferry::sources).");
    ferry::python::bind_folder_sources(sources);
#ifdef FERRY_PYTHON_IMAGE
    py::module_ image = m.def_submodule("image", "Native image ops (ferry::image).");
    ferry::python::bind_image_ops(image);
    m.attr("has_image") = true;
#else
    m.attr("has_image") = false;
#endif
    // The optional components' submodules, each where its C++ component is built; has_<name>
    // tells the package (python/ferry/__init__.py) which to import.
#ifdef FERRY_PYTHON_VIDEO
    py::module_ video = m.def_submodule("video", "Native video ops (ferry::video).");
    ferry::python::bind_video_ops(video);
    ferry::python::bind_video_steps(video);
    ferry::python::bind_audio_ops(video);
    ferry::python::bind_probe_ops(video);
    m.attr("has_video") = true;
#else
    m.attr("has_video") = false;
#endif
#ifdef FERRY_PYTHON_HTTP
    py::module_ http =
        m.def_submodule("http", "read_url, list_objects, open_cache and Client (ferry::http).");
    ferry::python::bind_cache_ops(http);
    ferry::python::bind_http_ops(http);
    ferry::python::bind_http_client(http);
    m.attr("has_http") = true;
#else
    m.attr("has_http") = false;
#endif
#ifdef FERRY_PYTHON_SHARDS
    py::module_ shards = m.def_submodule("shards", "Tar shards (ferry::shards).");
    ferry::python::bind_shard_ops(shards);
    m.attr("has_shards") = true;
#else
    m.attr("has_shards") = false;
#endif
}
