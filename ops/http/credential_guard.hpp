// SPDX-License-Identifier: Apache-2.0
/// \file
/// Where a request's credentials may go (credential_guard.cpp): what in a request is a
/// credential, where a redirect leads and how a message shows it, and the once-per-process
/// warning when TLS certificates go unverified.
#pragma once

#include <curl/curl.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/http.hpp"
#include "request.hpp"

namespace ferry::ops::detail {

/// Whether a request header (its name in lower case) carries a credential: `Authorization`,
/// `Proxy-Authorization`, `Cookie`, and any whose name holds `auth`, `token`, `key`, `secret`,
/// `session`, `cookie`, `password`, `signature` or `credential` (`x-amz-security-token`,
/// `X-Api-Key`). The one rule redirects and the cache's key both use.
bool credential_header(std::string_view lower_name);

/// What in `r` (with `options`' headers) is a credential, named for a message: `"user:password@"`
/// or `"user@"` (in the URL), the first credential header's name as given (`Authorization`,
/// `Proxy-Authorization`, `Cookie`, and any whose name holds `token`, `secret`, `password`,
/// `key`, `auth`, `session`, `signature` or `credential`, such as `x-amz-security-token` or
/// `X-Api-Key`), `"a SigV4 signature"`; empty when nothing is. Such a request's redirects are
/// followed by ferry (redirects.hpp), to https only, its credentials kept with their origin:
/// curl drops `Authorization` and `Cookie` on a change of host, not the others.
std::string credential_carrier(const request& r, const http_options& options);

/// Where a URL's credentials were given: its scheme and host in lower case and its port (the
/// scheme's default where it names none). Empty for what curl cannot parse, which is no origin.
struct url_origin {
    std::string scheme;
    std::string host;
    std::string port;
    bool operator==(const url_origin&) const = default;
};

/// The origin of `url` (an absolute URL).
url_origin origin_of(std::string_view url);

/// Whether a redirect may take the credentials given for `from` to the absolute URL `to`: it is
/// the same origin, or its host is one of `hosts` (`http_options::credential_hosts`: host names
/// compared without regard to case, any port).
bool credentials_may_go(const url_origin& from, std::string_view to,
                        const std::vector<std::string>& hosts);

/// `headers` ("Name: value" each) without the credential headers (`credential_header`).
std::vector<std::string> without_credential_headers(const std::vector<std::string>& headers);

/// The absolute URL `url` with the user part of `from` instead of its own (none where `from`
/// has none, or is empty); nullopt when curl cannot parse or write it.
std::optional<std::string> with_user_part_of(const std::string& url, const std::string& from);

/// The URL `c` requested last.
std::string last_url(CURL* c);

/// Where a redirect's `location` (relative or not) leads from the URL `c` requested last,
/// without a user part; `location` itself when curl cannot resolve it.
std::string redirect_target(CURL* c, const std::string& location);

/// A URL as messages show it: credentials REDACTED, control characters escaped.
std::string shown_url(std::string_view url);

/// Whether `url` starts with `scheme` and "://", without regard to case.
bool has_scheme(std::string_view url, std::string_view scheme);

/// Says once per process, on stderr, that TLS certificates are not verified, naming the host of
/// `url` (the first one it was off for). Thread-safe.
void warn_unverified_tls(std::string_view url);

}  // namespace ferry::ops::detail
