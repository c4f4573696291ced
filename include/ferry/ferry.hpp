// SPDX-License-Identifier: Apache-2.0
/// \file
/// The umbrella header: the builder, pipelines, options, stats and errors. Pulls in no TBB,
/// FFmpeg, OpenCV or CUDA header.
#pragma once

#include "ferry/builder.hpp"
#include "ferry/error.hpp"
#include "ferry/options.hpp"
#include "ferry/pipeline.hpp"
#include "ferry/stats.hpp"
#include "ferry/version.hpp"
