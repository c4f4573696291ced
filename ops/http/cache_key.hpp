// SPDX-License-Identifier: Apache-2.0
/// \file
/// The cache's key for a read: the URL without credentials or presigning, and a hash of who is
/// asking, so that an entry fetched with a credential is served to that credential's identity
/// only.
#pragma once

#include <optional>
#include <string>

#include "ferry/cache.hpp"
#include "ferry/http.hpp"
#include "request.hpp"

namespace ferry::ops::detail {

/// The key `r`, read with `options`, is cached under in a cache opened with `cache`; nullopt
/// when it is not cached (a URL with a line break; a credential whose identity cannot be told,
/// unless `cache.cache_unidentified`).
///
/// The key is `unsigned_url(r.url)` (names read through `ferry::detail::parameter_name`, the
/// decoder messages use: `X%2DAmz%2DSignature` is left out too) with a digest in place of each
/// value that may still hold a secret (a parameter named like a credential but not on the list,
/// `key=`, `continuation-token=`, a nested URL with a signature in it: kept apart by the digest,
/// since such a parameter may pick the object), and for a read with credentials a line
/// `credential <sha256>` of the identities they name: `user <name>` for a URL's
/// `user:password@` and for `Authorization: Basic` (what curl makes of the former), `aws <key
/// id>` for a SigV4-signed S3 request, `X-Amz-Credential`, `AWSAccessKeyId` and an
/// `Authorization: AWS4-HMAC-SHA256 Credential=...` header, `goog <id>` for
/// `X-Goog-Credential`. Secrets (passwords, signatures, tokens) are never part of it. Any other
/// credential — a header whose name says auth, token, key, secret, session, cookie, password,
/// signature or credential, a token as a URL's user part, a credential query parameter without
/// its key id — names nobody: such a key is `credential unidentified <sha256>` (only with
/// `cache_unidentified`).
std::optional<std::string> cache_key(const request& r, const http_options& options,
                                     const cache_options& cache);

}  // namespace ferry::ops::detail
