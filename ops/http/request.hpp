// SPDX-License-Identifier: Apache-2.0
/// \file
/// One HTTP(S) or file:// GET as the transfer code runs it: the URL curl fetches, the URL errors
/// name, and for S3 the SigV4 signing and the store's error format.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/bytes.hpp"
#include "ferry/http.hpp"

namespace ferry::ops::detail {

/// What `fetch` asks for.
struct request {
    std::string url;      ///< what curl fetches
    std::string display;  ///< what messages and `http_error::url()` name (the user's URL)
    /// CURLOPT_AWS_SIGV4's value ("aws:amz:<region>:s3"); empty: not signed.
    std::string sigv4;
    std::string user;                  ///< the access key id (with `sigv4`)
    std::string password;              ///< the secret key (with `sigv4`); never in a message
    std::vector<std::string> headers;  ///< request headers added to `http_options::headers`
    bool s3 = false;                   ///< errors come as S3's XML and become `ferry::s3_error`
};

/// Runs `r` with `options` (read_url's transfer).
bytes fetch(const request& r, const http_options& options);

/// The request for an `s3://bucket/key` URL (see read_url's documentation for the environment it
/// reads). Throws `ferry::invalid_argument` for a URL without a bucket or key.
request s3_object_request(std::string_view url);

/// Throws the `ferry::s3_error` that an S3 error response (`status`, its body) describes.
[[noreturn]] void throw_s3_error(const request& r, int status, const std::string& status_text,
                                 const std::string& body, std::chrono::milliseconds retry_after);

/// A `Retry-After` header's value (delay-seconds or an HTTP-date) as a wait from now; 0 for none
/// or an unreadable one, at most an hour.
std::chrono::milliseconds parse_retry_after(std::string_view value);

}  // namespace ferry::ops::detail
