// SPDX-License-Identifier: Apache-2.0
/// \file
/// One HTTP(S) or file:// GET as the transfer code runs it: the URL curl fetches, the URL errors
/// name, and for S3 the SigV4 signing and the store's error format.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
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
    std::string region;                ///< S3's region the request is for (with `s3`)
};

/// What an S3 error response said: its status and status text, its body (an S3 error document,
/// or none), and the headers that say what to do.
struct s3_answer {
    int status = 0;
    std::string status_text;  ///< "HTTP 404 Not Found", control characters escaped
    std::string body;
    std::chrono::milliseconds retry_after{0};
    std::string bucket_region;  ///< x-amz-bucket-region
    std::string location;       ///< a redirect's target, resolved, redacted and escaped
    bool other_origin = false;  ///< ... on another origin than the request's
    std::string date;           ///< the Date header
};

/// Where a 2xx body goes instead of memory (the cache streams objects to disk through it), and
/// what the cache learns of the response. `fetch` with a sink returns no bytes.
struct body_sink {
    /// Before the first byte, with the announced Content-Length (-1: none); false: stop.
    std::function<bool(std::int64_t length)> start;
    /// Each piece of the body, in order; false: stop (the transfer ends, `refused` is set).
    std::function<bool(const std::byte* data, std::size_t n)> write;
    // Set by fetch:
    int status = 0;        ///< the final status; 304 (Not Modified) is returned, not thrown
    std::string etag;      ///< the ETag header's value, as sent (quotes kept); empty: none
    bool refused = false;  ///< `start` or `write` said stop; fetch returned without throwing
};

/// The request for a URL as `read_url` takes it: an `s3://` URL's (`s3_object_request`), else
/// the URL itself, named redacted (and control characters escaped) in messages. Throws
/// `http_error` for a URL with a NUL,
/// `invalid_argument` for an `s3://` URL without a bucket or key.
request make_request(std::string_view url);

/// Runs `r` with `options` (read_url's transfer); with `sink`, the body goes there.
bytes fetch(const request& r, const http_options& options, body_sink* sink = nullptr);

/// The request for an `s3://bucket/key` URL (see read_url's documentation for the environment it
/// reads). Throws `ferry::invalid_argument` for a URL without a bucket or key, and for
/// credentials asked for but not found (a key without its secret, a missing AWS_PROFILE).
request s3_object_request(std::string_view url);

/// Throws the `ferry::s3_error` that an S3 error response (or a 3xx not followed) describes,
/// with what to do where the answer says it: the region to set, how far the clock is off.
[[noreturn]] void throw_s3_error(const request& r, const s3_answer& a);

/// A `Retry-After` header's value (delay-seconds or an HTTP-date) as a wait from now; 0 for none
/// or an unreadable one, at most an hour.
std::chrono::milliseconds parse_retry_after(std::string_view value);

}  // namespace ferry::ops::detail
