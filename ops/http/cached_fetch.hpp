// SPDX-License-Identifier: Apache-2.0
/// \file
/// `read_url` through a cache (`http_options::cache`): hits from local disk, misses streamed
/// into the cache, revalidation with If-None-Match, and the network when the cache fails.
#pragma once

#include "ferry/bytes.hpp"
#include "ferry/cache.hpp"
#include "request.hpp"

namespace ferry::ops::detail {

/// `fetch(r, options)` answered through `cache` (see `ferry::ops::open_cache`).
bytes cached_fetch(object_cache& cache, const request& r, const http_options& options);

}  // namespace ferry::ops::detail
