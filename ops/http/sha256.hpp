// SPDX-License-Identifier: Apache-2.0
/// \file
/// SHA-256 (FIPS 180-4) through OpenSSL's EVP, for the cache: file names that say nothing of the
/// URL, and collisions that do not happen by accident.
#pragma once

#include <string>
#include <string_view>

namespace ferry::ops::detail {

/// The SHA-256 of `data` as 64 lower-case hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace ferry::ops::detail
