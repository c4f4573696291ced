// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the tests that read over HTTP share: bodies as text, generated bodies, a substring test,
/// and a server answer that honours byte ranges (206 with Content-Range, 416 past the end).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "ferry/bytes.hpp"
#include "http_server.hpp"

namespace ferry_test {

/// The bytes as a string.
inline std::string as_string(const ferry::bytes& b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// Deterministic pseudo-random bytes (all 256 values occur).
inline std::string random_body(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::string out(n, '\0');
    for (auto& c : out) c = static_cast<char>(rng() & 0xFF);
    return out;
}

/// Whether `s` contains `part`.
inline bool contains(const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
}

/// The answer to `r` for a resource `body`, honouring `Range: bytes=a-b` / `bytes=a-` as RFC 9110
/// says: 206 with Content-Range (the end clamped to the body's), 416 for a start past the end;
/// without a Range header, 200 with the whole body.
inline http_response ranged(const std::string& body, const http_request& r) {
    const std::string range = r.header("range");
    if (range.empty()) return {.body = body};
    std::uint64_t first = 0;
    std::uint64_t last = body.empty() ? 0 : body.size() - 1;
    const auto dash = range.find('-');
    std::from_chars(range.data() + 6, range.data() + dash, first);
    if (dash + 1 < range.size()) {
        std::from_chars(range.data() + dash + 1, range.data() + range.size(), last);
    }
    if (first >= body.size()) {
        return {.status = 416,
                .headers = {{"Content-Range", "bytes */" + std::to_string(body.size())}}};
    }
    last = std::min<std::uint64_t>(last, body.size() - 1);
    return {.status = 206,
            .body = body.substr(first, last - first + 1),
            .headers = {{"Content-Range", "bytes " + std::to_string(first) + "-" +
                                              std::to_string(last) + "/" +
                                              std::to_string(body.size())}}};
}

}  // namespace ferry_test
