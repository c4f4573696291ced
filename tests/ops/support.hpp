// SPDX-License-Identifier: Apache-2.0
/// \file
/// Helpers shared by the ops tests (core, image, video): encoded files as bytes, checks on error
/// messages, and temporary directories; how Boost.Test prints ferry's core values.
#pragma once

#include <boost/test/unit_test.hpp>

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

#include "../support/expect.hpp"

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

/// A file's contents as the tests make them (an encoded image, random bytes).
using file_bytes = std::vector<std::uint8_t>;

inline std::span<const std::byte> as_span(const file_bytes& f) {
    return std::as_bytes(std::span<const std::uint8_t>(f));
}

/// True when `message`, lower-cased, contains one of `keywords`.
bool mentions(std::string_view message, const std::vector<std::string_view>& keywords);

/// A fresh directory under the system's temp directory, removed with everything in it.
class temp_dir {
  public:
    temp_dir();
    ~temp_dir();
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }
    /// Writes `contents` to `name` inside the directory and returns its path.
    std::filesystem::path write(const std::string& name,
                                std::span<const std::uint8_t> contents) const;

  private:
    std::filesystem::path path_;
};

}  // namespace ops_test
