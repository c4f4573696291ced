// SPDX-License-Identifier: Apache-2.0
/// \file
/// Where a URL's user part lies (`scheme://USER@host/...`): the one reading of it that
/// redaction, the cache's key, request guards and per-host limits share (ops/core/redact.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "ferry/export.hpp"

namespace ferry::detail {

/// A span of a URL: `offset` and `size` in characters.
struct url_span {
    std::size_t offset = 0;
    std::size_t size = 0;
};

/// The user part of `url`'s authority: what stands between `://` and the authority's last `@`
/// (`user:password`, a token, or empty for `scheme://@host`); nullopt where there is none.
[[nodiscard]] FERRY_API std::optional<url_span> user_part(std::string_view url) noexcept;

}  // namespace ferry::detail
