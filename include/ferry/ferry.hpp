// SPDX-License-Identifier: Apache-2.0
/// \file
/// The umbrella header: the builder, pipelines, options, stats, errors, quarantine, tensors (and
/// their collate), bytes, and datasets (sources, sampling, the launcher's world). Pulls in no TBB,
/// FFmpeg, OpenCV or CUDA header. The media ops have their own headers (`ferry/image.hpp`,
/// `ferry/video.hpp`, `ferry/cuda.hpp`) and libraries.
#pragma once

#include "ferry/builder.hpp"
#include "ferry/bytes.hpp"
#include "ferry/collate.hpp"
#include "ferry/error.hpp"
#include "ferry/from.hpp"
#include "ferry/input.hpp"
#include "ferry/item.hpp"
#include "ferry/merge.hpp"
#include "ferry/mix.hpp"
#include "ferry/mixing.hpp"
#include "ferry/options.hpp"
#include "ferry/pipeline.hpp"
#include "ferry/quarantine.hpp"
#include "ferry/sampling.hpp"
#include "ferry/sources.hpp"
#include "ferry/state.hpp"
#include "ferry/stats.hpp"
#include "ferry/tensor.hpp"
#include "ferry/this_call.hpp"
#include "ferry/version.hpp"
#include "ferry/world.hpp"
#include "ferry/zip.hpp"
