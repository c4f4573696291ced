// SPDX-License-Identifier: Apache-2.0
/// \file
/// Redirects that ferry follows itself (redirects.cpp): those of a request that carries a
/// credential. curl, following a redirect to another host, drops `Authorization` and `Cookie`
/// but sends every other header on (`X-Api-Key`, `x-amz-security-token`, the user's own names),
/// and has no option to stop that; so for such a request curl does not follow (`configure`), and
/// `fetch` and `http_client` ask a `redirect_chain` after each transfer where the next one goes,
/// with which headers, and re-issue it on the same handle.
#pragma once

#include <curl/curl.h>

#include <optional>
#include <string>

#include "credential_guard.hpp"
#include "ferry/http.hpp"
#include "request.hpp"
#include "transfer.hpp"

namespace ferry::ops::detail {

/// The most redirects a request follows, whoever follows them (curl's CURLOPT_MAXREDIRS).
inline constexpr long max_redirects = 10;

/// One request's way through its redirects, when ferry follows them: each hop's request and
/// options, the hops so far, and whether the credentials still go along. The rules: at most
/// `max_redirects` hops (the 11th is an `http_error`, as curl says it); to https only; every
/// credential header (`credential_header`) and the URL's user part go to the origin they were
/// given for (scheme, host, port) and to the hosts of `http_options::credential_hosts`, and once
/// a hop leaves them they stay dropped; other headers, the range and the limits go on every hop,
/// within what is left of `http_options::timeout`. Refers to the first request and options,
/// which must outlive it.
class redirect_chain {
  public:
    /// For `r` with `options`.
    redirect_chain(const request& r, const http_options& options);

    /// Whether ferry follows this request's redirects (and curl must not): it carries a
    /// credential, follows redirects and is not signed (a signed S3 request is not redirected).
    [[nodiscard]] bool followed_here() const noexcept { return !carrier_.empty(); }
    /// The request of the current hop (at first, the caller's); it names the caller's URL.
    [[nodiscard]] const request& hop() const noexcept { return next_ ? *next_ : *first_; }
    /// The options of the current hop (at first, the caller's).
    [[nodiscard]] const http_options& hop_options() const noexcept {
        return next_options_ ? *next_options_ : *first_options_;
    }

    /// After the transfer on `c` ended with `rc` (and `t` filled): true when it was a redirect
    /// that ferry follows, and `hop()` and `hop_options()` are now the next request's (configure
    /// the reset handle with them, `t.followed_by_ferry` set); false when `outcome` says what it
    /// gave. Throws `http_error` (not transient) for an 11th redirect, one to anything but https
    /// and a target curl cannot parse, each as curl or the https-only rule words it.
    bool next(CURL* c, CURLcode rc, const transfer& t, const std::string& where);

  private:
    const request* first_;
    const http_options* first_options_;
    std::string carrier_;  // what of the first request is a credential (credential_carrier)
    url_origin origin_;    // where its credentials were given
    std::optional<request> next_;
    std::optional<http_options> next_options_;
    long hops_ = 0;
    bool credentials_ = true;  // the hops so far kept them
    curl_off_t elapsed_us_ = 0;
};

}  // namespace ferry::ops::detail
