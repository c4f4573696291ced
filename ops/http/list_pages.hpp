// SPDX-License-Identifier: Apache-2.0
/// \file
/// A ListObjectsV2 listing walked page by page, apart from how a page is fetched: the bounds a
/// listing keeps and the answers of a store it refuses (list_objects.cpp). The listing fuzzer
/// drives it with pages of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/bytes.hpp"
#include "ferry/http.hpp"
#include "s3_text.hpp"

namespace ferry::ops::detail {

/// The longest continuation token a listing takes. A token goes back to the store in the next
/// request's URL (percent-encoded) and every token is kept to refuse one given twice. S3's are
/// some hundred bytes; 4096 leaves room for a store whose token carries a whole key (1024 bytes
/// at most, about 1400 in base64).
inline constexpr std::size_t max_continuation_token_bytes = 4096;

/// Fetches a listing's page: `query` is the request's query string (in SigV4's canonical order,
/// values encoded), `page` its number from 1. Returns the answer's body (a 2xx's); throws as
/// `fetch` does.
using page_fetcher = std::function<bytes(const std::string& query, std::uint64_t page)>;

/// Lists `loc`'s bucket under the prefix `loc.key` page after page with `fetch_page`, and
/// returns the keys as `s3://bucket/key` URLs in the store's order, folder markers (keys ending
/// in `/`) left out. `options`' `page_size` goes into each request; its bounds (`max_keys`,
/// `max_pages`, `max_bytes`, at least 1 each: the caller checks) are checked as the pages come,
/// before a page more is asked for. `shown` is the listing's URL as messages show it (redacted,
/// escaped, cut short). Throws `ferry::io_error` (not transient), its message
/// `list_objects: '<shown>' (page N): ...`, for a store that cannot be trusted: an answer that is
/// not a `ListBucketResult` (read_listing_page), a key outside the prefix, a page that says the
/// listing goes on without a token, a token given before or longer than
/// `max_continuation_token_bytes`, and a listing past a bound (naming it, its value and the
/// option to raise).
std::vector<std::string> list_pages(const s3_location& loc, std::string_view shown,
                                    const sources::list_options& options,
                                    const page_fetcher& fetch_page);

}  // namespace ferry::ops::detail
