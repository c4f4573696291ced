// SPDX-License-Identifier: Apache-2.0
/// \file
/// The small text jobs of S3: where a bucket lives, which bucket names S3 allows, and URI
/// encoding as SigV4 wants it (its XML answers are read in s3_xml.hpp).
#pragma once

#include <string>
#include <string_view>

#include "ferry/detail/redact.hpp"
#include "request.hpp"

namespace ferry::ops::detail {

/// `s` without the spaces and tabs around it (and a trailing CR): a header's or a line's value.
inline std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

/// An `s3://bucket/key` URL resolved against the environment.
struct s3_location {
    std::string bucket;
    std::string key;     ///< as given (not encoded)
    std::string region;  ///< AWS_REGION, AWS_DEFAULT_REGION, else us-east-1
    /// The bucket's HTTPS base, no trailing slash: `<endpoint>/<bucket>` (path-style, for
    /// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL and for bucket names with dots), else
    /// `https://<bucket>.s3.<region>.amazonaws.com`.
    std::string base;
};

/// Splits and resolves `url` (`s3://...`); `key_required`: an object, not a bucket or prefix.
/// Every `s3://` request is located here first, so the bucket's name is checked here
/// (`s3_bucket_name_error`), before credentials are read or anything is signed or sent. Throws
/// `ferry::invalid_argument`, its message starting `<caller>: '<url>': ` (the URL redacted and
/// escaped), for a URL without a bucket (or key) and for a bucket name S3 does not allow.
s3_location s3_locate(std::string_view url, bool key_required,
                      std::string_view caller = "read_url");

/// Why `bucket` is no bucket name by S3's rules for general purpose buckets (3 to 63 characters
/// of `a-z`, `0-9`, `.` and `-`, beginning and ending with a letter or a digit, no `..`, not
/// formatted as an IP address): the first rule it breaks, checked in this order: "it holds
/// ':', which is not a lower-case letter, a digit, '.' or '-'" (a byte outside printable ASCII
/// named by its value: "byte 0x0A"), "it begins with '.'" (or ends), "it holds '..'", "it is
/// formatted as an IP address", "it is 2 characters long, not 3 to 63"; empty when it is one.
/// The bucket becomes a host name's first label (virtual-hosted) or a path's first segment (an
/// endpoint's, path-style): these rules keep `:`, `#`, `@`, `/`, `?`, `%` and dot segments,
/// which would pick another host, port or path, out of both. S3's reserved prefixes and
/// suffixes (`xn--`, `-s3alias`, ...) are not refused: access point aliases are used as bucket
/// names.
std::string s3_bucket_name_error(std::string_view bucket);

/// A signed request (credentials from the environment; unsigned without any) for `url`.
request s3_request(const s3_location& loc, std::string url, std::string display);

/// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters kept, every other byte
/// `%XX` (upper case); `/` kept unless `encode_slash` (keys in a path keep theirs, query values
/// do not). In a path (`encode_slash` false) a `.` or `..` segment is encoded too (`%2E`,
/// `%2E%2E`), so that no URL parser removes it: the key `../x` stays that key.
std::string uri_encode(std::string_view s, bool encode_slash);

/// `url` with its credentials REDACTED (ferry/detail/redact.hpp): what messages show of it.
using ferry::detail::redact_url;

/// `url` without what presigning adds or a credential is (the query parameters `redact_url`
/// redacts, and `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-Algorithm`, `X-Amz-SignedHeaders`,
/// `Expires` and their `X-Goog-` counterparts; a `user:password@`; the fragment): the same
/// object under every presigning, and
/// nothing secret in it. The cache's key.
std::string unsigned_url(std::string_view url);

}  // namespace ferry::ops::detail
