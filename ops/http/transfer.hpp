// SPDX-License-Identifier: Apache-2.0
/// \file
/// One transfer as both `read_url` (blocking, one per thread) and `http_client` (many on one
/// event loop) run it: the easy handle's options for a request, the state curl's body and header
/// callbacks fill in, and what an ended transfer means: its bytes, or the `http_error` /
/// `s3_error` that names the URL and the cause.
#pragma once

#include <curl/curl.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "curl_session.hpp"
#include "ferry/bytes.hpp"
#include "ferry/http.hpp"
#include "request.hpp"

namespace ferry::ops::detail {

/// One transfer's state, shared with curl's callbacks, and what the handle points into while the
/// transfer runs (error buffer, header list, range, user agent): it must stay where it is, and
/// outlive the handle's use of it (reset the handle first), from `configure` to the end.
struct transfer {
    transfer() = default;
    transfer(const transfer&) = delete;
    transfer& operator=(const transfer&) = delete;

    CURL* curl = nullptr;
    std::uint64_t max_bytes = 0;
    bytes body;
    std::size_t got = 0;
    bool started = false;       // the current response's body has begun
    bool error_status = false;  // ... and its status is >= 300 (a 3xx not followed)
    bool too_large = false;
    curl_off_t content_length = -1;
    curl_off_t announced = -1;  // the Content-Length header as read (curl may refuse before
                                // it reports one)
    std::string status_line;
    std::string content_range;  // the Content-Range header's value, for a ranged request
    std::string retry_after;    // the Retry-After header's value
    std::string location;       // the Location header's value
    std::string bucket_region;  // the x-amz-bucket-region header's value
    std::string date;           // the Date header's value
    std::string error_body;
    std::size_t error_bytes = 0;
    std::exception_ptr exception;    // thrown inside a callback (bad_alloc), rethrown after
    body_sink* sink = nullptr;       // where a 2xx body goes instead of `body`
    std::string etag;                // the ETag header's value
    bool followed_by_ferry = false;  // a redirect_chain follows its redirects (redirects.hpp)

    // What the handle points into.
    char errors[CURL_ERROR_SIZE] = {};
    header_list headers;
    std::string range;  // CURLOPT_RANGE's value
    std::string agent;  // CURLOPT_USERAGENT's value

    /// Every response (a redirect's, a `100 Continue`, the final one) starts afresh.
    void new_response(std::string line);
    /// Takes `n` bytes of the body; fewer than `n` stops the transfer.
    std::size_t append(const char* data, std::size_t n);
};

/// `read_url: '<display URL>': `, the start of every message about `r`.
std::string where_of(const request& r);

/// Sets every option of the fresh (or reset) handle `c` for `r` under `options`: the URL, SigV4,
/// the range, limits, timeouts, the low-speed rule, redirects, TLS, headers and the callbacks into
/// `t` (whose `sink` and `followed_by_ferry` the caller sets first, if any). curl follows the
/// redirects of a request without credentials only. Throws `invalid_argument` for a range past
/// 2^63, `io_error` when this libcurl lacks an option.
void configure(CURL* c, const request& r, const http_options& options, transfer& t,
               const std::string& where);

/// The HTTP status of the handle's last response; 0 when none came.
long response_status(CURL* c);

/// "HTTP 404 Not Found" from the status line "HTTP/1.1 404 Not Found" (or "HTTP 404" without a
/// reason), control characters escaped: how messages name a response.
std::string status_text(long status, const std::string& line);

/// What the ended transfer on `c` (its result `rc`) gives for `r`: the body (the range's bytes of
/// it), or, with a `sink`, nothing once the body went there; throws the `http_error` or
/// `s3_error` that says what went wrong (read_url's documentation lists them).
bytes outcome(CURL* c, CURLcode rc, const request& r, const http_options& options, transfer& t,
              const std::string& where);

}  // namespace ferry::ops::detail
