// SPDX-License-Identifier: Apache-2.0
/// \file
/// The redirects ferry follows itself (redirects.hpp).

#include "redirects.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "ferry/detail/redact.hpp"

namespace ferry::ops::detail {
namespace {

/// Where `location` leads from `base`, resolved as curl resolves a redirect it follows (spaces
/// and other characters a URL cannot hold percent-encoded); nullopt with curl's reason in `why`
/// when it cannot be parsed.
std::optional<std::string> resolve_location(const std::string& base, const std::string& location,
                                            std::string& why) {
    CURLU* const u = curl_url();
    if (u == nullptr) {
        why = "out of memory";
        return std::nullopt;
    }
    std::optional<std::string> out;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, base.c_str(), 0);
    if (uc == CURLUE_OK) {
        uc = curl_url_set(u, CURLUPART_URL, location.c_str(), CURLU_URLENCODE | CURLU_ALLOW_SPACE);
    }
    char* text = nullptr;
    if (uc == CURLUE_OK) uc = curl_url_get(u, CURLUPART_URL, &text, 0);
    if (uc == CURLUE_OK && text != nullptr) {
        out = text;
    } else {
        why = curl_url_strerror(uc);
    }
    curl_free(text);
    curl_url_cleanup(u);
    return out;
}

}  // namespace

redirect_chain::redirect_chain(const request& r, const http_options& options)
    : first_(&r), first_options_(&options) {
    // A signed S3 request is not redirected at all (configure); one without a credential is
    // followed by curl, which has nothing to leak.
    if (!options.follow_redirects || !r.sigv4.empty()) return;
    carrier_ = credential_carrier(r, options);
    if (!carrier_.empty()) origin_ = origin_of(r.url);
}

bool redirect_chain::next(CURL* c, CURLcode rc, const transfer& t, const std::string& where) {
    if (!followed_here() || t.exception) return false;
    const long status = response_status(c);
    if (status < 300 || status >= 400 || status == 304 || t.location.empty()) return false;
    // The redirect's own body is not the resource: a long one is cut short (transfer::append).
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && t.error_status)) return false;
    const std::string& url = first_->display;
    const int st = static_cast<int>(status);
    if (hops_ == max_redirects) {
        throw http_error(
            url, st, where + "Maximum (" + std::to_string(max_redirects) + ") redirects followed",
            false);
    }
    std::string why;
    const auto target = resolve_location(last_url(c), t.location, why);
    if (!target) {
        throw http_error(url, st,
                         where + "The redirect target URL could not be parsed: " +
                             ferry::detail::escape_controls(why),
                         false);
    }
    if (!has_scheme(*target, "https")) {
        throw http_error(url, st,
                         where + status_text(status, t.status_line) + ": redirected to '" +
                             shown_url(redirect_target(c, t.location)) +
                             "': not followed: the request carries credentials (" + carrier_ +
                             (has_scheme(*target, "http") ? "), which never go to plain http"
                                                          : "), which go to https only"),
                         false);
    }
    ++hops_;
    credentials_ =
        credentials_ && credentials_may_go(origin_, *target, first_options_->credential_hosts);
    // The user part is the first request's where the credentials go, else none: one the
    // redirect names is not the caller's to send.
    auto next_url = with_user_part_of(*target, credentials_ ? first_->url : std::string());
    if (!next_url) {
        throw http_error(url, st,
                         where + status_text(status, t.status_line) + ": redirected to '" +
                             shown_url(redirect_target(c, t.location)) +
                             "': not followed: its user part cannot be rewritten",
                         false);
    }
    request r = *first_;
    r.url = std::move(*next_url);
    http_options o = *first_options_;
    if (!credentials_) {
        r.headers = without_credential_headers(r.headers);
        o.headers = without_credential_headers(o.headers);
    }
    // curl's total limit covers every redirect it follows: so does this one.
    curl_off_t took_us = 0;
    curl_easy_getinfo(c, CURLINFO_TOTAL_TIME_T, &took_us);
    elapsed_us_ += took_us;
    if (o.timeout.count() > 0) {
        const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::microseconds(elapsed_us_));
        o.timeout = std::max(o.timeout - spent, std::chrono::milliseconds(1));
    }
    next_ = std::move(r);
    next_options_ = std::move(o);
    return true;
}

}  // namespace ferry::ops::detail
