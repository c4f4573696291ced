// SPDX-License-Identifier: Apache-2.0
/// \file
/// The NVTX ranges a pipeline emits (`pipeline_options::nvtx`), as plain events: what tests and
/// tools that are not an NVTX profiler read. Engine side; needs no CUDA header.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "ferry/export.hpp"

namespace ferry::detail {

/// One range's start (`begin`) or end, on the thread that runs the call: `name` is the stage's
/// name ("source", a stage's, or "waiting for the pipeline" for the consumer's waits) and
/// `position` the item's position in its epoch (0 for a wait).
struct range_event {
    bool begin = true;
    std::string_view name;
    std::uint64_t position = 0;
};

/// Calls `observer` for every range of the pipelines built after this call (with
/// `pipeline_options::nvtx`), from the threads that open and close them (it must be safe to call
/// concurrently); an empty function stops it for pipelines built later. The ranges go to NVTX
/// as well when ferry was built with CUDA (`nvtx_compiled()`).
FERRY_API void observe_ranges(std::function<void(const range_event&)> observer);

/// Whether this ferry emits NVTX ranges (built with the CUDA Toolkit's nvtx3 headers).
[[nodiscard]] FERRY_API bool nvtx_compiled() noexcept;

}  // namespace ferry::detail
