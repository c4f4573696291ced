// SPDX-License-Identifier: Apache-2.0
/// \file
/// The optional components' faces in Python: `ferry.video` (load_video, decode_audio,
/// probe_video), `ferry.http` (read_url, list_objects, open_cache) and `ferry.shards` (tar_samples
/// and the ops on its samples), each compiled only where its C++ component is built (FERRY_VIDEO,
/// FERRY_HTTP, FERRY_SHARDS).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>

#include "ferry/detail/spec.hpp"
#include "ferry/sampling.hpp"
#include "ops.hpp"

#ifdef FERRY_PYTHON_HTTP
#include "ferry/http.hpp"
#endif

namespace ferry::python {

namespace py = pybind11;

#ifdef FERRY_PYTHON_VIDEO
/// Registers `FrameSelection` and the `load_video(...)` factory in `video` (video_ops.cpp).
void bind_video_ops(py::module_& video);
/// Registers `Packets` and the `demux_video(...)` and `decode_video(...)` factories in `video`
/// (video_steps.cpp).
void bind_video_steps(py::module_& video);
/// Registers the `decode_audio(...)` factory in `video` (audio_ops.cpp).
void bind_audio_ops(py::module_& video);
/// Registers `probe_video`, `VideoInfo` and `StreamInfo` in `video` (probe_ops.cpp).
void bind_probe_ops(py::module_& video);
#endif

#ifdef FERRY_PYTHON_HTTP
/// `ferry.http.ReadUrl`: the op `read_url` with its `http_options` (an `ferry.Op`, so `map` runs
/// it natively); `tar_samples(..., read_remote=...)` reads remote shards with its options.
struct py_read_url : py_op {
    std::shared_ptr<const ferry::http_options> options;
};

/// Registers `ReadUrl`, `read_url` and `list_objects` in `http` (http_ops.cpp).
void bind_http_ops(py::module_& http);
/// The URL an item holds: a C++ string, or a Python str (read with the GIL); otherwise a
/// `ferry::invalid_argument` naming what it holds (http_ops.cpp).
[[nodiscard]] std::string take_url(value&& v);

/// Registers `Client` (`ferry::ops::http_client` and its reader op) in `http`
/// (http_client_ops.cpp).
void bind_http_client(py::module_& http);

/// Registers `Cache`, `CacheStats` and `open_cache` in `http` (cache_ops.cpp).
void bind_cache_ops(py::module_& http);
#endif

#ifdef FERRY_PYTHON_SHARDS
/// Registers `TarSamples`, `tar_samples` and the sample ops (`field`, `fields`, `labelled`) in
/// `shards` (shard_sources.cpp, shard_samples.cpp).
void bind_shard_ops(py::module_& shards);

/// The source of `src` where it is a `ferry.shards.TarSamples` (the caller holds the GIL): its
/// samples natively, each the tuple of pairs `shard_samples.hpp` describes, positioned (a resume
/// opens the epoch at its position), named `<shard>#<key>` in failure records. Empty for another
/// `src`; a `TypeError` when `sampling` is given (tar_samples takes it).
[[nodiscard]] std::optional<detail::source_spec> tar_source(
    py::handle src, const std::optional<ferry::sampling>& sampling);
#endif

}  // namespace ferry::python
