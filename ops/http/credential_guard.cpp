// SPDX-License-Identifier: Apache-2.0
/// \file
/// Where a request's credentials may go (credential_guard.hpp).

#include "credential_guard.hpp"

#include <strings.h>

#include <atomic>
#include <cctype>
#include <cstdio>

#include "ferry/detail/redact.hpp"
#include "ferry/detail/url_parts.hpp"
#include "host_limits.hpp"

namespace ferry::ops::detail {
namespace {

using ferry::detail::escape_controls;

}  // namespace

bool credential_header(std::string_view name) {
    for (const std::string_view word : {"auth", "token", "key", "secret", "session", "cookie",
                                        "password", "signature", "credential"}) {
        if (name.find(word) != std::string_view::npos) return true;
    }
    return false;
}

std::string credential_carrier(const request& r, const http_options& options) {
    if (const auto user = ferry::detail::user_part(r.url)) {
        return r.url.find(':', user->offset) < user->offset + user->size ? "user:password@"
                                                                         : "user@";
    }
    for (const auto* list : {&options.headers, &r.headers}) {
        for (const std::string& h : *list) {
            const std::string given = h.substr(0, h.find(':'));
            std::string name = given;
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (credential_header(name)) return escape_controls(given);
        }
    }
    return r.sigv4.empty() ? std::string() : std::string("a SigV4 signature");
}

std::string last_url(CURL* c) {
    char* url = nullptr;
    curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &url);
    return url != nullptr ? url : "";
}

std::string redirect_target(CURL* c, const std::string& location) {
    CURLU* const u = curl_url();
    if (u == nullptr) return location;
    std::string out = location;
    char* text = nullptr;
    const std::string base = last_url(c);
    if (curl_url_set(u, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_URL, location.c_str(), 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_USER, nullptr, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_PASSWORD, nullptr, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_URL, &text, 0) == CURLUE_OK) {
        out = text;
    }
    curl_free(text);
    curl_url_cleanup(u);
    return out;
}

std::string shown_url(std::string_view url) {
    return escape_controls(ferry::detail::redact_url(url));
}

bool has_scheme(std::string_view url, std::string_view scheme) {
    return url.size() > scheme.size() + 3 &&
           strncasecmp(url.data(), scheme.data(), scheme.size()) == 0 &&
           url.substr(scheme.size(), 3) == "://";
}

void warn_unverified_tls(std::string_view url) {
    static std::atomic<bool> said{false};
    if (said.load(std::memory_order_relaxed) || said.exchange(true)) return;
    const std::string line =
        "ferry: warning: TLS certificates are not verified (http_options::verify_tls = false), "
        "first for " +
        escape_controls(host_of(url)) +
        "; anyone on the network path can read and change what ferry fetches (said once per "
        "process)\n";
    std::fputs(line.c_str(), stderr);
}

}  // namespace ferry::ops::detail
