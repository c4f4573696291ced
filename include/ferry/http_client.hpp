// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::ops::http_client`: many HTTP(S), S3 and `file://` requests outstanding on one event
/// loop (libcurl's multi interface) on one thread, for `map_async`. Link `ferry::http`; no curl
/// header is included here.
#pragma once

#include <cstddef>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "ferry/bytes.hpp"
#include "ferry/completion.hpp"
#include "ferry/export.hpp"
#include "ferry/http.hpp"
#include "ferry/retry.hpp"

namespace ferry::ops {

/// How an `http_client` runs.
struct http_client_options {
    /// Transfers running at once on the loop; more wait in a queue, first in, first out (and a
    /// request whose host is at its adaptive limit waits in that host's queue without taking
    /// one of these). At least 1.
    std::size_t max_outstanding = 256;
    /// Tries again, on the loop, a request that failed with a transient error (`retry.when`,
    /// `ferry::is_transient` by default: no answer, a timeout, a reset or truncated body, 408,
    /// 425, 429, 5xx, S3's `SlowDown`): up to `retry.attempts` in all, after a pause of
    /// `backoff * multiplier^k` (times a random factor in [1 - jitter, 1]) and at least the
    /// server's `Retry-After`. A retry waits without a transfer or a thread, and a stop request
    /// ends the wait. `retry.then` does not apply: the `map_async` stage's `on_error` decides what
    /// a request that failed every attempt does. The default, one attempt, retries nothing.
    ferry::retry retry{.attempts = 1};
};

class http_client;

/// What `http_client::reader()` returns: a callable `(std::string url,
/// ferry::completion<ferry::bytes> done)` for `map_async`, which starts `client.fetch(url, done,
/// options)`. It refers to the client, which must outlive every pipeline that uses it.
class http_client_reader {
  public:
    http_client_reader(http_client& client, http_options options)
        : client_(&client), options_(std::make_shared<const http_options>(std::move(options))) {}
    /// Starts the request; the result arrives through `done`.
    void operator()(std::string url, completion<bytes> done) const;

  private:
    http_client* client_;
    std::shared_ptr<const http_options> options_;
};

/// An HTTP client on one event loop: `fetch` starts a GET and returns at once; up to
/// `max_outstanding` transfers run at the same time on the client's one thread (no thread is
/// blocked per request), and the result arrives through a `ferry::completion` or a future. For
/// a pipeline that keeps hundreds of requests outstanding, where `read_url` on I/O threads would
/// need a thread each:
/// \code
///   ferry::ops::http_client client;  // outlives the pipeline
///   auto pipe = ferry::from(urls)
///                   .map_async<ferry::bytes>(client.reader({.timeout = 30s}),
///                                            {.concurrency = 256, .on_error = ferry::skip})
///                   .map([](ferry::bytes b) { return ferry::ops::decode_image(b); }, 8)
///                   .build();
/// \endcode
///
/// Each request means what `read_url(url, options)` means, word for word: the same URL kinds
/// (`http://`, `https://`, `s3://` signed from the same environment, `file://`), `range`,
/// `max_bytes`, timeouts and the low-speed rule, redirects, TLS, headers, and the same errors
/// with the same messages (`http_error`, `s3_error` with `retry_after()`). With
/// `http_options::adaptive` (the default) it shares `read_url`'s per-host limits (AIMD, see
/// `http_options::adaptive`; `ferry::ops::http_hosts()` counts both): a request over its host's
/// limit waits in a queue, never a thread. `http_options::cache` is not supported: `fetch` and
/// `reader` throw `ferry::invalid_argument` for it (use `read_url` on I/O threads with a cache).
/// `file://` is read on the loop's thread, as one transfer among the others.
///
/// Connections are kept alive and reused, and so are the transfers' handles. A `map_async`
/// stage's retry policy does not apply (its input is handed over): the client retries transient
/// failures itself with `http_client_options::retry`; the stage's `skip` and `fail` policies and
/// its `timeout` do apply. The loop runs outside the stage's calls, so the stage's
/// `throttled` counter (`this_call::count`) is not kept: `http_hosts()` counts throttled answers.
/// Completions run on the loop's thread: keep them short, and do not destroy the client from one.
/// When the pipeline a completion belongs to stops, is destroyed or abandons its epoch
/// (`completion::stop_requested()`, which the loop asks every 50 ms), the request ends within
/// about 50 ms with `ferry::error` (`errc::cancelled`, `read_url: '<url>': cancelled: the
/// pipeline is stopping`), so that the pipeline is never held up by a slow server. Thread-safe:
/// any thread may call `fetch`. A host name is resolved by curl's resolver, which may use a
/// short-lived thread of its own per lookup; an IP address needs none.
class FERRY_API http_client {
  public:
    /// Starts the loop's thread. Throws `ferry::invalid_argument` for `max_outstanding` 0,
    /// `ferry::io_error` when curl cannot be set up.
    explicit http_client(http_client_options options = {});
    /// Ends promptly: every request still running or queued fails with `ferry::error`
    /// (`errc::cancelled`, naming its URL), then the thread is joined.
    ~http_client();
    http_client(const http_client&) = delete;
    http_client& operator=(const http_client&) = delete;

    /// Starts a GET of `url`; `done(bytes)` or `done.fail(e)` is called once, from the loop's
    /// thread (for a URL that cannot be requested at all, from this one, before `fetch` returns).
    /// Throws `ferry::invalid_argument` for `options.cache`.
    void fetch(std::string url, completion<bytes> done, http_options options = {});
    /// The same, as a future: `get()` returns the bytes or throws what `read_url` would.
    [[nodiscard]] std::future<bytes> fetch(std::string url, http_options options = {});
    /// A callable `(std::string url, ferry::completion<ferry::bytes>)` for
    /// `.map_async<ferry::bytes>(client.reader(), 256)`, fetching with `options`. It holds a
    /// reference to the client: keep the client alive while it is used. Throws
    /// `ferry::invalid_argument` for `options.cache`.
    [[nodiscard]] http_client_reader reader(http_options options = {});

    /// Transfers running now.
    [[nodiscard]] std::size_t outstanding() const noexcept;
    /// Requests waiting: for a free transfer (`max_outstanding`), for their host's limit, or
    /// for their next attempt.
    [[nodiscard]] std::size_t queued() const noexcept;
    /// Attempts made again after a transient failure (`http_client_options::retry`), so far.
    [[nodiscard]] std::size_t retried() const noexcept;

    /// The loop (http_client.cpp).
    class impl;

  private:
    std::unique_ptr<impl> impl_;
};

inline void http_client_reader::operator()(std::string url, completion<bytes> done) const {
    client_->fetch(std::move(url), std::move(done), *options_);
}

}  // namespace ferry::ops
