// SPDX-License-Identifier: Apache-2.0
/// \file
/// `read_url`'s byte ranges: the `Range` request value, the `Content-Range` answer, and the
/// checks that make a ranged body exactly the bytes asked for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ferry/http.hpp"

namespace ferry::ops::detail {

/// CURLOPT_RANGE's value for `r`: "first-last", or "first-" to the end. Throws
/// `ferry::invalid_argument` for a range past 2^63.
std::string range_request(const byte_range& r, const std::string& where);

/// A `Content-Range: bytes first-last/total` value (`total` -1 for `*`).
struct content_range {
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    std::int64_t total = -1;
};

/// Parses a `Content-Range` header's value; nullopt when it is not `bytes a-b/n` or `bytes a-b/*`.
std::optional<content_range> parse_content_range(std::string_view value);

/// What a finished transfer of a ranged request holds: the status (0 for `file://`), the bytes
/// received, and the `Content-Range` header's value (empty when none came).
struct ranged_body {
    int status = 0;
    bytes body;
    std::size_t got = 0;
    std::string content_range;
};

/// How many bytes from `r.offset` a resource of `size` bytes gives for `r`, or the `http_error`
/// (naming `url`, with `status`) for a range past its end; 0 for an `at_most` range at or past it.
std::uint64_t range_within(const byte_range& r, std::uint64_t size, int status,
                           const std::string& url, const std::string& where);

/// The range's bytes out of `in`, or an `http_error` naming `url`, the range and what came.
bytes take_range(ranged_body in, const byte_range& r, const std::string& url,
                 const std::string& where);

}  // namespace ferry::ops::detail
