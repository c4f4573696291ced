// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's version.
#pragma once

#define FERRY_VERSION_MAJOR 0
#define FERRY_VERSION_MINOR 2
#define FERRY_VERSION_PATCH 0

namespace ferry {
/// "MAJOR.MINOR.PATCH"
inline constexpr const char* version = "0.2.0";
}  // namespace ferry
