// SPDX-License-Identifier: Apache-2.0
/// \file
/// Reading over HTTP(S), S3 and `file://` with libcurl: `ferry::ops::read_url`, its options and
/// its errors, and `ferry::sources::list_objects` for S3 prefixes. Link `ferry::http`; no curl
/// header is included here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/bytes.hpp"
#include "ferry/error.hpp"
#include "ferry/export.hpp"

namespace ferry {

class object_cache;  // <ferry/cache.hpp>

/// A byte range of a resource: `length` bytes from `offset` (0: to the end).
struct byte_range {
    std::uint64_t offset = 0;  ///< the first byte
    std::uint64_t length = 0;  ///< how many bytes; 0 = from `offset` to the end
    /// true: `length` is at most; where the resource ends first, what there is (none for a
    /// range that starts at or past its end) is the answer, not an error. For reading a
    /// resource of unknown size in chunks.
    bool at_most = false;
};

/// How `read_url` fetches. Declaration order is part of the API (designated initializers):
/// \code
///   ferry::ops::read_url(url, {.timeout = std::chrono::seconds(30),
///                              .headers = {"Authorization: Bearer " + token}})
/// \endcode
struct http_options {
    /// Longest time to set up the connection (DNS, TCP, TLS).
    std::chrono::milliseconds connect_timeout{10'000};
    /// Longest time for the whole transfer, connection included; 0 = no limit (the low-speed
    /// rule below still ends a stalled or trickling transfer; a total limit would also end a
    /// large object read over a slow link).
    std::chrono::milliseconds timeout{0};
    /// A transfer slower than `low_speed_limit` bytes/s (1 KiB/s) for `low_speed_time` (30 s)
    /// fails (transient): a server that stops sending mid-body, or trickles a few bytes a
    /// second, ends in an error instead of holding the call for good. `low_speed_time` 0 turns
    /// the rule off (curl counts it in whole seconds). curl averages the speed over its last
    /// few seconds, so after a burst a full stall can take up to about 6 s more to be seen.
    std::uint64_t low_speed_limit = 1024;
    std::chrono::seconds low_speed_time{30};
    /// Bodies larger than this are refused: up front when the server announces a larger
    /// Content-Length, else as soon as more arrives. 0 = no limit.
    std::uint64_t max_bytes = std::uint64_t{1} << 30;
    /// Extra request headers, each `"Name: value"`.
    std::vector<std::string> headers{};
    /// Follow 3xx redirects (at most 10, to http and https only). A request that carries a
    /// credential (an `Authorization`, `Cookie` or other credential header, a `user:password@`,
    /// an S3 session token) is redirected to https only, and its credentials stay with its
    /// origin (scheme, host, port): on a redirect to another origin every credential header
    /// (`Authorization`, `Proxy-Authorization`, `Cookie`, and any whose name holds `auth`,
    /// `token`, `key`, `secret`, `session`, `cookie`, `password`, `signature` or `credential`,
    /// such as `X-Api-Key` or `x-amz-security-token`) and the URL's user part are dropped from
    /// that hop on, unless its host is one of `credential_hosts`; other headers (`Range`, your
    /// own) go on every hop. A signed `s3://` request is not redirected at all (S3 redirects to
    /// the bucket's region: the `s3_error` names it).
    bool follow_redirects = true;
    /// Hosts to which a redirect may take the request's credentials (its credential headers and
    /// user part, see `follow_redirects`) although they are another origin: host names or IP
    /// addresses as in the URL (`"cdn.example.com"`, `"10.0.0.7"`, `"[::1]"`), compared exactly
    /// and without regard to case; no port (any port of the host, over https, as every hop of
    /// a request with credentials is). Empty (the default): credentials never leave the origin
    /// they were given for. A name here also lets them reach that host on another port.
    /// \code
    ///   ferry::ops::read_url(url, {.headers = {"X-Api-Key: " + key},
    ///                              .credential_hosts = {"data.example.com"}})
    /// \endcode
    std::vector<std::string> credential_hosts{};
    /// Verify the server's TLS certificate and host name (https). Off, ferry says so once per
    /// process on stderr, naming the first host it was off for.
    bool verify_tls = true;
    /// Only these bytes of the resource (an HTTP `Range` request; `file://` reads just them). A
    /// `206 Partial Content` must start at `offset` and hold `length` bytes; a server that
    /// ignores ranges answers `200` with the whole resource, and `read_url` returns the range's
    /// bytes of it (the whole body is downloaded, within `max_bytes`). A range that does not
    /// lie within the resource is an `http_error` that is not transient (HTTP 416, or fewer
    /// bytes than `length` where the resource ends); a `206` cut short is a truncated body.
    std::optional<byte_range> range{};
    /// Adapt to throttling per host (AIMD): an HTTP 429 or 503 halves how many `read_url` calls
    /// may be in flight to that host (at least 1; from what was in flight at the first one),
    /// each other answer raises the limit by 1/limit, and calls over it wait (a stop request
    /// ends the wait). Limits are per process; `ferry::ops::http_hosts()` shows them.
    bool adaptive = true;
    /// A local cache (`ferry::ops::open_cache`, in <ferry/cache.hpp>) for `http(s)://` and
    /// `s3://` objects: a hit is read from local disk with no request; a miss downloads the whole
    /// object into it first (also for a `range`). Null: no cache.
    std::shared_ptr<object_cache> cache{};
};

/// `read_url` failed: an HTTP status of 400 or more, a transport error (refused, timed out,
/// stalled, reset, TLS), a truncated body, a body over `max_bytes`. An `io_error`, so code that
/// handles `read_file`'s failures handles these too. `what()` names the URL and the cause:
/// \code
///   read_url: 'http://host/a.jpg': HTTP 404
///   read_url: 'http://host/b.jpg': Failed to connect to host port 80 after 3 ms: ...
/// \endcode
///
/// `transient()` is true for what can pass: no status (a refused or reset connection, a timeout,
/// DNS), 408, 425, 429 and 5xx, a truncated body; false for the rest of 4xx (404, 403, ...), a
/// body over `max_bytes`, a redirect not followed, a malformed or unsupported URL, a TLS
/// certificate that does not verify, a `file://` that cannot be read — so `ferry::retry` does not
/// ask a server three times for a file it does not have.
class FERRY_API http_error : public io_error {
  public:
    http_error(std::string url, int status, const std::string& what)
        : http_error(std::move(url), status, what, transient_status(status)) {}
    http_error(std::string url, int status, const std::string& what, bool transient)
        : io_error(what, transient), url_(std::move(url)), status_(status) {}

    /// Whether an HTTP status (0: none came) describes a failure that can pass.
    [[nodiscard]] static constexpr bool transient_status(int status) noexcept {
        return status == 0 || status == 408 || status == 425 || status == 429 || status >= 500 ||
               (status >= 200 && status < 300);  // 2xx: the body was cut short
    }

    /// The URL as the caller passed it, its credentials replaced by `REDACTED` as in `what()`
    /// (`ferry::detail::redact_url`: AWS, GCS and Azure signatures, tokens, a password or a
    /// token in the user part), and its control characters (a NUL, a newline) escaped.
    [[nodiscard]] const std::string& url() const noexcept { return url_; }
    /// The last HTTP status received (e.g. 404, 503; 200 for a truncated or oversized body),
    /// or 0 when none was (refused connection, DNS, timeout before the headers, `file://`).
    [[nodiscard]] int status() const noexcept { return status_; }

  private:
    std::string url_;
    int status_;
};

/// An S3 request failed with an error document: `code()` is S3's error code (`NoSuchKey`,
/// `NoSuchBucket`, `AccessDenied`, `SignatureDoesNotMatch`, `InvalidAccessKeyId`, `SlowDown`,
/// ...; empty when the body was no S3 error), and `what()` says it with S3's message:
/// \code
///   read_url: 's3://bucket/a.jpg': HTTP 404 Not Found: NoSuchKey: The specified key does not
///   exist.
/// \endcode
/// `transient()` follows the status (429, 5xx) and is also true for `SlowDown`, `RequestTimeout`,
/// `InternalError` and `ServiceUnavailable`; not for `RequestTimeTooSkewed` (this machine's clock
/// stays as far off: the message says by how much). A redirect S3 answers with (a bucket in
/// another region) is an `s3_error` too, naming the region `x-amz-bucket-region` gives. Messages
/// never hold the credentials or the request's signature, and show the store's texts with
/// control characters escaped.
class FERRY_API s3_error : public http_error {
  public:
    s3_error(std::string url, int status, std::string code, const std::string& what, bool transient)
        : http_error(std::move(url), status, what, transient), code_(std::move(code)) {}
    /// S3's error code, e.g. `"NoSuchKey"`.
    [[nodiscard]] const std::string& code() const noexcept { return code_; }

  private:
    std::string code_;
};

namespace ops {
namespace detail {
struct FERRY_API read_url_fn {
    bytes operator()(std::string_view url, const http_options& options = {}) const;
};
}  // namespace detail

/// Fetches a whole URL (or `http_options::range` of it) into memory: `http://`, `https://`,
/// `file://` or `s3://bucket/key`. Throws `ferry::http_error` (an `io_error`) naming the URL and
/// the cause; for S3, `ferry::s3_error` with the store's error code. A URL of any other scheme,
/// or of none (`user:pw@host/x`, which curl would send as plain http), is an `http_error` with
/// status 0, not transient, naming the accepted schemes, and no request is made. Messages show
/// URLs and quoted error bodies with their credentials `REDACTED`.
///
/// `s3://` reads the environment AWS's tools read, at each call: the region from `AWS_REGION` or
/// `AWS_DEFAULT_REGION` (else `us-east-1`); the store from `AWS_ENDPOINT_URL_S3` or
/// `AWS_ENDPOINT_URL` (MinIO, Ceph, a test server: path-style `<endpoint>/<bucket>/<key>`), else
/// `https://<bucket>.s3.<region>.amazonaws.com/<key>`; the credentials from `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, else from the `AWS_PROFILE` (`default`)
/// section of `AWS_SHARED_CREDENTIALS_FILE` (`~/.aws/credentials`); without any, the request
/// is not signed (public buckets). Credentials asked for but not found (one of the two keys
/// without the other, an `AWS_PROFILE` the file does not have, a profile without both keys)
/// throw `ferry::invalid_argument` before any request. Requests are signed with SigV4 by libcurl.
/// The bucket, which becomes part of the host name or the path, must be named by S3's rules for
/// general purpose buckets: 3 to 63 characters of `a-z`, `0-9`, `.` and `-`, beginning and
/// ending with a letter or a digit, no `..`, not formatted as an IP address (`192.168.5.4`);
/// any other name (`s3://2130706433:8443#/k` would send the signed request to 127.0.0.1:8443,
/// `s3://../other/k` would read another path of the endpoint) throws `ferry::invalid_argument`
/// naming the rule, before credentials are read or any request is made. The key is sent
/// percent-encoded, its `.` and `..` segments too (`%2E%2E`), so it stays in its bucket.
///
/// Each thread keeps one curl handle and reuses it across calls, so consecutive requests to a
/// host reuse its keep-alive connection (no new TCP or TLS handshake per item); a failed
/// transfer leaves the handle usable. Inside a stage call, the transfer gives up within about
/// 50 ms of `ferry::this_call::stop_requested()` turning true (the pipeline stopping or being
/// destroyed, the epoch abandoned, the stage's timeout) — even while the server sends nothing —
/// and throws `ferry::error` with `errc::cancelled` (`read_url: '<url>': cancelled: the
/// pipeline is stopping`). Nothing is retried here: give the stage a
/// `ferry::retry{...}` policy, and run it on I/O threads, where a blocking transfer costs no
/// compute worker:
/// \code
///   ferry::from(urls)
///       .map(ferry::ops::read_url, {.concurrency = 16, .name = "fetch",
///                                   .on_error = ferry::retry{.attempts = 3,
///                                                            .then = ferry::skip},
///                                   .executor = ferry::io})
/// \endcode
/// With options, wrap it: `.map([](const std::string& u) { return ferry::ops::read_url(u,
/// {.timeout = std::chrono::seconds(20)}); }, ...)`. To keep hundreds of requests outstanding
/// without a thread each, use `ferry::ops::http_client` (<ferry/http_client.hpp>) with
/// `map_async`: the same requests and errors on one event loop.
inline constexpr detail::read_url_fn read_url{};
}  // namespace ops

namespace ops {

/// One host's requests as `read_url` adapts to it (see `http_options::adaptive`).
struct http_host {
    std::string host;             ///< `scheme://host[:port]`
    int limit = 0;                ///< calls allowed in flight; 0: no limit (never throttled)
    int in_flight = 0;            ///< calls in flight now
    std::uint64_t requests = 0;   ///< calls so far
    std::uint64_t throttled = 0;  ///< answers that were 429 or 503
};

/// Every host `read_url` has called with `adaptive` on, and how it stands: to see throttling.
[[nodiscard]] FERRY_API std::vector<http_host> http_hosts();

/// Byte ranges of URLs, for readers that stream a resource in chunks — such as
/// `ferry::sources::tar_options::read_remote`, which reads tar shards from `s3://` or `https://`:
/// `url_ranges{options}(url, offset, length)` is `read_url(url, options)` with
/// `.range = {offset, length, .at_most = true}` (short at the end, empty past it).
/// \code
///   ferry::sources::tar_samples(ferry::sources::list_objects("s3://bucket/train/"),
///                               {.read_remote = ferry::ops::url_ranges{}})
/// \endcode
struct url_ranges {
    http_options options{};  ///< each request's options (`range` is set per call)
    bytes operator()(const std::string& url, std::uint64_t offset, std::uint64_t length) const {
        http_options o = options;
        o.range = byte_range{.offset = offset, .length = length, .at_most = true};
        return read_url(url, o);
    }
};

}  // namespace ops

namespace sources {

/// How `list_objects` lists, and how much of a listing it takes. A store decides how many
/// pages a listing has: one that hands out a fresh continuation token with every page would be
/// listed until memory runs out, so a listing is bounded in pages, keys and bytes, each checked
/// as the pages come; passing a bound is a `ferry::io_error` (not transient) that names it, its
/// value and the page. The defaults are far above a real dataset's listing and below what
/// exhausts a training machine's memory: raise them for a larger listing.
/// \code
///   ferry::sources::list_objects("s3://bucket/train/", {.max_keys = 500'000'000,
///                                                        .max_bytes = std::uint64_t{32} << 30});
/// \endcode
struct list_options {
    /// Keys asked for per request (S3's `max-keys`, 1 to 1000).
    std::size_t page_size = 1000;
    /// The most keys the store may list (folder markers included), at least 1. 100 million: an
    /// ImageNet-sized dataset is 1.3 million objects, and a listing of 100 million full pages
    /// takes 100 000 requests (hours) before it ends here.
    std::uint64_t max_keys = 100'000'000;
    /// The most pages (requests), at least 1. A million: ten times what `max_keys` takes in
    /// full pages, so a store that returns short pages is not cut off, while one that returns
    /// a page of one key and a fresh token forever ends after a million requests.
    std::uint64_t max_pages = 1'000'000;
    /// The most bytes the listing holds, at least 1: the returned URLs' text and every
    /// continuation token kept (to refuse one given twice). 4 GiB: 40 million URLs of 100 bytes;
    /// each URL costs about 40 bytes more in memory than its text (its `std::string`). A bound
    /// on memory, unlike `max_keys`, whatever the store makes its keys' length.
    std::uint64_t max_bytes = std::uint64_t{4} << 30;
    /// The requests' options (timeouts, TLS; `range` is not used; `max_bytes` is a page's size,
    /// at most 16 MiB).
    http_options http{};
};

/// Every object under an S3 prefix, as `s3://bucket/key` URLs in S3's order (by key, UTF-8
/// bytes): `list_objects("s3://bucket/train/")` lists the keys that start with `train/`, at any
/// depth (ListObjectsV2, page after page). Keys ending in `/` (folder markers) are left out.
/// A key is listed as it is, `.` and `..` segments included (`s3://bkt/../x` is the key `../x`
/// in bucket `bkt`, and `read_url` reads that key). Same environment and bucket naming rules as
/// `read_url`'s `s3://`. Throws `ferry::s3_error` or `ferry::http_error` as `read_url` does
/// (`url()` is the listing's URL, redacted and escaped, and its page: `s3://bkt/train/ (page
/// 3)`), `ferry::invalid_argument` before any request for a URL that is not `s3://`, a bucket
/// name S3 does not allow or options out of range, and `ferry::io_error` (not transient) for a
/// store that cannot be trusted: a continuation token it gave before or one longer than 4096
/// bytes, a listing past `max_pages`, `max_keys` or `max_bytes`, an answer that is not a
/// `ListBucketResult` (a captive portal's page; the message shows what came back, escaped and
/// cut short), a key outside the prefix, XML with a DOCTYPE, nested deeper than 32 or larger
/// than 16 MiB.
/// \code
///   auto shards = ferry::sources::list_objects("s3://bucket/train/");
/// \endcode
[[nodiscard]] FERRY_API std::vector<std::string> list_objects(std::string_view url,
                                                              const list_options& options = {});

}  // namespace sources

}  // namespace ferry
