// SPDX-License-Identifier: Apache-2.0
/// \file
/// Helpers shared by the tests of ferry's ops (tests/core, tests/image, tests/video): encoded
/// files as bytes, checks on error messages, temporary folders; how Boost.Test prints ferry's
/// core values.
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <ferry/bytes.hpp>
#include <ferry/error.hpp>
#include <ferry/tensor.hpp>
#include <filesystem>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "expect.hpp"
#include "temp_folder.hpp"

// How Boost.Test prints ferry's values in failed assertions (found by argument-dependent lookup;
// Boost's own customization point, so nothing named operator<< is added to ferry).
namespace ferry {
inline std::ostream& boost_test_print_type(std::ostream& os, dtype t) {
    return os << to_string(t);
}
inline std::ostream& boost_test_print_type(std::ostream& os, errc c) {
    return os << to_string(c);
}
}  // namespace ferry

namespace ops_test {

using ferry_test::expect_throw;
using ferry_test::temp_folder;

/// A file's contents as the tests make them (an encoded image, random bytes).
using file_bytes = std::vector<std::uint8_t>;

inline std::span<const std::byte> as_span(const file_bytes& f) {
    return std::as_bytes(std::span<const std::uint8_t>(f));
}

/// True when `message`, lower-cased, contains one of `keywords`.
inline bool mentions(std::string_view message, const std::vector<std::string_view>& keywords) {
    std::string lower(message);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::any_of(keywords.begin(), keywords.end(),
                       [&](std::string_view k) { return lower.find(k) != std::string::npos; });
}

}  // namespace ops_test
