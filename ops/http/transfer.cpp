// SPDX-License-Identifier: Apache-2.0
/// \file
/// One transfer's options, callbacks and outcome, shared by `read_url` and `http_client`
/// (transfer.hpp).

#include "transfer.hpp"

#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "credential_guard.hpp"
#include "ferry/detail/redact.hpp"
#include "ferry/version.hpp"
#include "host_limits.hpp"
#include "range.hpp"
#include "redirects.hpp"
#include "s3_text.hpp"

namespace ferry::ops::detail {
namespace {

using ferry::detail::escape_controls;

// A body with an error status is kept only for a short excerpt in the message; past this much
// the transfer is aborted (the connection is closed, the status is still reported).
constexpr std::size_t error_body_limit = 64 * 1024;
// Kept of an error body: enough for an S3 error document; messages quote 200 characters of it.
constexpr std::size_t error_kept = 4096;
constexpr std::size_t error_excerpt = 200;
// Where the size is not announced (chunked, or ended by a close) the first buffer is this big
// (or max_bytes, if smaller) and grows by doubling; an announced size is allocated at once, up
// to max_preallocation (a larger one grows from there as the bytes really arrive).
constexpr std::size_t initial_guess = 256 * 1024;
constexpr std::size_t max_preallocation = 256ull * 1024 * 1024;

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<transfer*>(user);
    try {
        return t.append(data, size * count);
    } catch (...) {  // bad_alloc must not cross curl's C frames
        t.exception = std::current_exception();
        return 0;
    }
}

/// A header's value without the white space around it and the line end.
std::string header_value(const char* data, std::size_t n, std::size_t name_length) {
    std::string_view v(data + name_length, n - name_length);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() &&
           (v.back() == '\r' || v.back() == '\n' || v.back() == ' ' || v.back() == '\t')) {
        v.remove_suffix(1);
    }
    return std::string(v);
}

/// Whether the header line `data` (`n` bytes) is the header `name` (lower case, with its colon).
bool is_header(const char* data, std::size_t n, std::string_view name) {
    return n > name.size() && strncasecmp(data, name.data(), name.size()) == 0;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<transfer*>(user);
    const std::size_t n = size * count;
    try {
        if (n > 5 && std::memcmp(data, "HTTP/", 5) == 0) {
            std::string line(data, n);
            while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
            t.new_response(std::move(line));
        } else if (is_header(data, n, "content-length:")) {
            t.announced = std::strtoll(std::string(data + 15, n - 15).c_str(), nullptr, 10);
        } else if (is_header(data, n, "content-range:")) {
            t.content_range = header_value(data, n, 14);
        } else if (is_header(data, n, "retry-after:")) {
            t.retry_after = header_value(data, n, 12);
        } else if (is_header(data, n, "etag:")) {
            t.etag = header_value(data, n, 5);
        } else if (is_header(data, n, "location:")) {
            t.location = header_value(data, n, 9);
        } else if (is_header(data, n, "x-amz-bucket-region:")) {
            t.bucket_region = header_value(data, n, 20);
        } else if (is_header(data, n, "date:")) {
            t.date = header_value(data, n, 5);
        }
    } catch (...) {
        t.exception = std::current_exception();
        return 0;
    }
    return n;
}

/// Printable characters of an error body, for the message: line breaks and tabs as one space,
/// credentials REDACTED (a body can echo the request's URL and headers: S3's `<URL>`, a proxy's
/// echo of `Authorization`), then cut to `error_excerpt` characters. Redacted before the cut, so
/// that no cut parts a credential's name from its value.
std::string excerpt(const std::string& s) {
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f) {
            out += c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            if (!out.empty() && out.back() != ' ') out += ' ';
        }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out = ferry::detail::redact_text(out);
    if (out.size() > error_excerpt) out.resize(error_excerpt);
    return out;
}

/// Whether a transfer that failed with `rc` (and no HTTP status of 400 or more) might succeed if
/// tried again: not for what the URL, the options or the certificate decide.
bool transient_curl(CURLcode rc) {
    switch (rc) {
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_URL_MALFORMAT:
        case CURLE_TOO_MANY_REDIRECTS:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_FILE_COULDNT_READ_FILE:
        case CURLE_LOGIN_DENIED:
        case CURLE_REMOTE_ACCESS_DENIED:
        case CURLE_REMOTE_FILE_NOT_FOUND:
            return false;
        default:
            return true;
    }
}

}  // namespace

std::string status_text(long status, const std::string& line) {
    std::string out = "HTTP " + std::to_string(status);
    const auto code_at = line.find(' ');
    if (code_at != std::string::npos) {
        const auto reason_at = line.find(' ', code_at + 1);
        if (reason_at != std::string::npos && reason_at + 1 < line.size()) {
            out += escape_controls(line.substr(reason_at));
        }
    }
    return out;
}

void transfer::new_response(std::string line) {
    status_line = std::move(line);
    started = false;
    error_status = false;
    got = 0;
    content_length = -1;
    announced = -1;
    content_range.clear();
    retry_after.clear();
    location.clear();
    bucket_region.clear();
    date.clear();
    error_body.clear();
    error_bytes = 0;
}

std::size_t transfer::append(const char* data, std::size_t n) {
    if (!started) {
        started = true;
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &content_length);
        // A 3xx body reaches here only when the redirect is not followed: it is not the resource.
        error_status = status >= 300;
        if (!error_status && sink != nullptr) {
            if (sink->start && !sink->start(static_cast<std::int64_t>(content_length))) {
                sink->refused = true;
                return 0;
            }
        } else if (!error_status) {
            if (max_bytes != 0 && content_length > 0 &&
                static_cast<std::uint64_t>(content_length) > max_bytes) {
                too_large = true;
                return 0;
            }
            std::size_t first =
                content_length > 0 ? static_cast<std::size_t>(content_length) : initial_guess;
            if (max_bytes != 0) first = std::min<std::size_t>(first, max_bytes);
            first = std::max(std::min(first, max_preallocation), n);
            if (body.size() < first) body = bytes(first);
        }
    }
    if (error_status) {
        error_bytes += n;
        if (error_body.size() < error_kept) {
            error_body.append(data, std::min(n, error_kept - error_body.size()));
        }
        return error_bytes > error_body_limit ? 0 : n;
    }
    if (max_bytes != 0 && got + n > max_bytes) {
        too_large = true;
        return 0;
    }
    if (sink != nullptr) {
        if (!sink->write(reinterpret_cast<const std::byte*>(data), n)) {
            sink->refused = true;
            return 0;
        }
        got += n;
        return n;
    }
    if (got + n > body.size()) {
        bytes bigger(std::max(body.size() * 2, got + n));
        if (got != 0) std::memcpy(bigger.data(), body.data(), got);
        body = std::move(bigger);
    }
    std::memcpy(body.data() + got, data, n);
    got += n;
    return n;
}

std::string where_of(const request& r) {
    return "read_url: '" + r.display + "': ";
}

void configure(CURL* c, const request& r, const http_options& options, transfer& t,
               const std::string& where) {
    t.curl = c;
    t.max_bytes = options.max_bytes;
    for (const auto* list : {&options.headers, &r.headers}) {
        for (const std::string& h : *list) {
            curl_slist* const grown = curl_slist_append(t.headers.list, h.c_str());
            if (grown == nullptr) throw std::bad_alloc();
            t.headers.list = grown;
        }
    }
    if (options.range) t.range = range_request(*options.range, where);
    set(c, CURLOPT_URL, r.url.c_str());
    if (!r.sigv4.empty()) {
        set(c, CURLOPT_AWS_SIGV4, r.sigv4.c_str());
        set(c, CURLOPT_USERNAME, r.user.c_str());
        set(c, CURLOPT_PASSWORD, r.password.c_str());
    }
    if (options.range) set(c, CURLOPT_RANGE, t.range.c_str());
    // No signals: timeouts must not use SIGALRM in a multi-threaded process.
    set(c, CURLOPT_NOSIGNAL, 1L);
    set(c, CURLOPT_ERRORBUFFER, t.errors);
    set(c, CURLOPT_WRITEFUNCTION, &on_body);
    set(c, CURLOPT_WRITEDATA, static_cast<void*>(&t));
    set(c, CURLOPT_HEADERFUNCTION, &on_header);
    set(c, CURLOPT_HEADERDATA, static_cast<void*>(&t));
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: the string forms; the bitmasks are deprecated
    set(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
    set(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    set(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS | CURLPROTO_FILE));
    set(c, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    set(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count()));
    set(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
    if (options.low_speed_time.count() > 0 && options.low_speed_limit > 0) {
        set(c, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options.low_speed_limit));
        set(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_time.count()));
    }
    if (options.max_bytes != 0) {
        set(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_bytes));
    }
    if (t.headers.list != nullptr) set(c, CURLOPT_HTTPHEADER, t.headers.list);
    // A signed S3 request is not redirected at all: S3 redirects only to the bucket's region (an
    // error that says which), and the session token is a header curl would carry to any host.
    // Nor does curl follow a request that carries a credential: it would drop Authorization and
    // Cookie on a change of host, but send X-Api-Key or x-amz-security-token on; ferry follows
    // those itself, to https only, keeping credentials with their origin (redirects.hpp).
    const bool curl_follows = options.follow_redirects && r.sigv4.empty() && !t.followed_by_ferry &&
                              credential_carrier(r, options).empty();
    set(c, CURLOPT_FOLLOWLOCATION, curl_follows ? 1L : 0L);
    set(c, CURLOPT_MAXREDIRS, max_redirects);
    if (!options.verify_tls && has_scheme(r.url, "https")) warn_unverified_tls(r.url);
    set(c, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
    set(c, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
    t.agent = std::string("ferry/") + ferry::version;
    set(c, CURLOPT_USERAGENT, t.agent.c_str());
}

long response_status(CURL* c) {
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

bytes outcome(CURL* c, CURLcode rc, const request& r, const http_options& options, transfer& t,
              const std::string& where) {
    if (t.exception) std::rethrow_exception(t.exception);
    const std::string& target = r.display;
    const long status = response_status(c);
    const auto st = static_cast<int>(status);
    body_sink* const sink = t.sink;
    if (sink != nullptr) {
        sink->status = st;
        sink->etag = t.etag;
        if (sink->refused) return bytes();
    }
    // curl's text can quote the server (a Location's scheme): escaped like every such text.
    const std::string curl_says =
        escape_controls(t.errors[0] != '\0' ? std::string(t.errors) : curl_easy_strerror(rc));

    // file:// with a range that starts past the file's end.
    if (rc == CURLE_BAD_DOWNLOAD_RESUME && options.range) {
        if (options.range->at_most) return bytes();
        throw http_error(target, st,
                         where + "range starts at byte " + std::to_string(options.range->offset) +
                             ", past the end of the resource",
                         false);
    }
    // A chunked reader's range that starts at or past the end: no bytes, not an error.
    if (status == 416 && options.range && options.range->at_most) return bytes();
    const bool redirect = status >= 300 && status < 400 && status != 304;
    if (status >= 400 || (redirect && r.s3)) {
        const auto wait = parse_retry_after(t.retry_after);
        if (r.s3) {
            s3_answer a{.status = st,
                        .status_text = status_text(status, t.status_line),
                        .body = t.error_body,
                        .retry_after = wait,
                        .bucket_region = t.bucket_region,
                        .location = {},
                        .other_origin = false,
                        .date = t.date};
            if (redirect && !t.location.empty()) {
                const std::string to = redirect_target(c, t.location);
                a.location = shown_url(to);
                a.other_origin = host_of(to) != host_of(last_url(c));
            }
            throw_s3_error(r, a);
        }
        std::string msg = where + status_text(status, t.status_line);
        const std::string body = excerpt(t.error_body);
        if (!body.empty()) msg += ": " + body;
        http_error e(target, st, msg);
        e.set_retry_after(wait);
        throw e;
    }
    if (t.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
        // curl refuses an announced size before any body arrives.
        if (t.content_length < 0) t.content_length = t.announced;
        std::string msg = where + "response body larger than max_bytes (" +
                          std::to_string(options.max_bytes) + " bytes)";
        if (t.content_length >= 0) {
            msg += "; Content-Length " + std::to_string(t.content_length);
        }
        throw http_error(target, st, msg, false);
    }
    if (rc == CURLE_PARTIAL_FILE) {
        throw http_error(
            target, st,
            where + "truncated body: got " + std::to_string(t.got) + " of " +
                (t.content_length >= 0 ? std::to_string(t.content_length) : std::string("?")) +
                " bytes (" + curl_says + ")");
    }
    if (rc != CURLE_OK) throw http_error(target, st, where + curl_says, transient_curl(rc));
    if (sink != nullptr && status == 304) return bytes();  // the cache's copy is current
    if (redirect) {
        // Not followed: the redirect's own body is not the resource.
        throw http_error(target, st,
                         where + status_text(status, t.status_line) +
                             (t.location.empty() ? " (a redirect without a Location)"
                                                 : " (a redirect; follow_redirects is off)"),
                         false);
    }
    // curl checks Content-Length itself; this guards the cases it lets through.
    if (t.content_length >= 0 && t.got != static_cast<std::size_t>(t.content_length) &&
        status >= 200 && status < 300) {
        throw http_error(target, st,
                         where + "truncated body: got " + std::to_string(t.got) + " of " +
                             std::to_string(t.content_length) + " bytes");
    }
    if (sink != nullptr) return bytes();
    if (options.range) {
        return take_range({st, std::move(t.body), t.got, std::move(t.content_range)},
                          *options.range, target, where);
    }
    bytes out = std::move(t.body);
    out.truncate(t.got);
    return out;
}

}  // namespace ferry::ops::detail
