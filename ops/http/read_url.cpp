// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::ops::read_url on libcurl: a request built from the URL and options, run to its end on
/// the calling thread's reused handles (curl_session.hpp) within its host's limit
/// (host_limits.hpp), its redirects followed by curl or, for a request with credentials, by
/// ferry (redirects.hpp), its body collected (or streamed to a cache file) and its failure named
/// (transfer.hpp).
#include <curl/curl.h>

#include <strings.h>

#include <optional>
#include <string>

#include "cached_fetch.hpp"
#include "curl_session.hpp"
#include "ferry/detail/redact.hpp"
#include "ferry/http.hpp"
#include "ferry/this_call.hpp"
#include "host_limits.hpp"
#include "redirects.hpp"
#include "request.hpp"
#include "s3_text.hpp"
#include "transfer.hpp"

namespace ferry::ops::detail {

request make_request(std::string_view url) {
    // Named as messages name it: credentials REDACTED, control characters (a NUL) escaped.
    std::string display = ferry::detail::escape_controls(redact_url(url));
    if (url.find('\0') != std::string_view::npos) {
        throw http_error(display, 0, "read_url: '" + display + "': URL contains a NUL character",
                         false);
    }
    if (url.starts_with("s3://")) return s3_object_request(url);
    // Only the schemes read_url reads, each with its `//`: curl would read a URL without a scheme
    // (`user:password@host/x`) or without the slashes (`http:host/x`) as http, and send its
    // credentials in the clear.
    const auto colon = url.find(':');
    const std::string_view scheme = url.substr(0, colon == std::string_view::npos ? 0 : colon);
    const auto is = [&](std::string_view name) {
        return scheme.size() == name.size() &&
               strncasecmp(scheme.data(), name.data(), name.size()) == 0;
    };
    const bool slashes = !scheme.empty() && url.substr(colon + 1, 2) == "//";
    if (!slashes || !(is("http") || is("https") || is("file"))) {
        const bool named = is("http") || is("https") || is("file") || is("s3");
        std::string why = "the URL has no scheme";
        if (slashes) {
            why = "the scheme '" + ferry::detail::escape_controls(scheme) + "' is not supported";
        } else if (named) {
            why = "the scheme '" + std::string(scheme) + ":' is not followed by '//'";
        }
        std::string what = "read_url: '" + display + "': " + why +
                           ": read_url reads http://, https://, file:// and s3:// URLs";
        if (!slashes && !named) {
            what += " (without one, curl would guess http and send any credentials in the clear)";
        }
        throw http_error(display, 0, what, false);
    }
    request r;
    r.url = std::string(url);
    r.display = std::move(display);
    return r;
}

bytes read_url_fn::operator()(std::string_view url, const http_options& options) const {
    const request r = make_request(url);
    // file:// is local already; every other scheme goes through the cache when there is one.
    if (options.cache != nullptr && strncasecmp(r.url.c_str(), "file:", 5) != 0) {
        return cached_fetch(*options.cache, r, options);
    }
    return fetch(r, options);
}

bytes fetch(const request& r, const http_options& options, body_sink* sink) {
    const std::string where = where_of(r);
    thread_local thread_handle handle;
    CURL* const c = handle.easy();
    CURLM* const m = handle.multi();
    redirect_chain chain(r, options);
    // One place among the host's requests for the call, every redirect ferry follows included.
    std::optional<host_slot> slot;
    for (;;) {  // once, and again for each redirect the chain follows
        transfer t;
        t.sink = sink;
        t.followed_by_ferry = chain.followed_here();
        // Declared after everything the handle will point into, so that it runs before they go.
        const reset_after reset(c);
        configure(c, chain.hop(), chain.hop_options(), t, where);
        set(c, CURLOPT_XFERINFOFUNCTION, &on_progress);
        set(c, CURLOPT_NOPROGRESS, 0L);

        if (!slot) slot.emplace(options.adaptive ? host_of(r.url) : std::string(), where);
        const CURLcode rc = perform(m, c, where);
        if (rc == CURLE_ABORTED_BY_CALLBACK && !t.exception) {
            throw error(errc::cancelled, where + "cancelled: the pipeline is stopping");
        }
        if (chain.next(c, rc, t, where)) continue;
        const long status = response_status(c);
        slot->answered(status);
        if (status == 429 || status == 503) this_call::count("throttled");
        return outcome(c, rc, chain.hop(), chain.hop_options(), t, where);
    }
}

}  // namespace ferry::ops::detail
