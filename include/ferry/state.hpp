// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::pipeline_state` and `ferry::resumed_sampler`, as the engine's API has always named
/// them: see ferry/pipeline_state.hpp (part of ferry::core), which this header includes.
#pragma once

#include "ferry/pipeline_state.hpp"
