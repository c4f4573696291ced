// SPDX-License-Identifier: Apache-2.0
/// \file
/// Where a request's credentials may go (credential_guard.hpp).

#include "credential_guard.hpp"

#include <strings.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <optional>

#include "ferry/detail/redact.hpp"
#include "ferry/detail/url_parts.hpp"
#include "host_limits.hpp"

namespace ferry::ops::detail {
namespace {

using ferry::detail::escape_controls;

/// A URL parsed by curl, freed however the caller ends.
struct parsed_url {
    CURLU* u = curl_url();
    parsed_url() = default;
    parsed_url(const parsed_url&) = delete;
    parsed_url& operator=(const parsed_url&) = delete;
    ~parsed_url() { curl_url_cleanup(u); }

    /// Parses `url`; false when curl cannot (or could not make the handle).
    bool parse(const std::string& url) {
        return u != nullptr && curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK;
    }
    /// A part of the URL as it stands in it (not decoded); empty where it has none.
    std::string part(CURLUPart which, unsigned flags = 0) const {
        char* text = nullptr;
        std::string out;
        if (curl_url_get(u, which, &text, flags) == CURLUE_OK && text != nullptr) out = text;
        curl_free(text);
        return out;
    }
};

std::string lower_case(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

/// A host name without the brackets of an IPv6 address, for comparing names as users write them.
std::string_view unbracketed(std::string_view host) {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    return host;
}

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

url_origin origin_of(std::string_view url) {
    parsed_url p;
    if (!p.parse(std::string(url))) return {};
    return {lower_case(p.part(CURLUPART_SCHEME)), lower_case(p.part(CURLUPART_HOST)),
            p.part(CURLUPART_PORT, CURLU_DEFAULT_PORT)};
}

bool credentials_may_go(const url_origin& from, std::string_view to,
                        const std::vector<std::string>& hosts) {
    const url_origin target = origin_of(to);
    if (target.host.empty()) return false;
    if (target == from) return true;
    const std::string_view host = unbracketed(target.host);
    for (const std::string& named : hosts) {
        const std::string_view n = unbracketed(named);
        if (n.size() == host.size() && strncasecmp(n.data(), host.data(), n.size()) == 0) {
            return true;
        }
    }
    return false;
}

std::vector<std::string> without_credential_headers(const std::vector<std::string>& headers) {
    std::vector<std::string> kept;
    for (const std::string& h : headers) {
        // "Name: value", or curl's "Name;" (an empty value): the name ends at either.
        if (!credential_header(lower_case(h.substr(0, h.find_first_of(":;"))))) kept.push_back(h);
    }
    return kept;
}

std::optional<std::string> with_user_part_of(const std::string& url, const std::string& from) {
    parsed_url target;
    if (!target.parse(url)) return std::nullopt;
    parsed_url source;
    const bool has_source = !from.empty() && source.parse(from);
    // NULL where `from` has none: curl then removes the part from `url`.
    char* user = nullptr;
    char* password = nullptr;
    if (has_source) {
        curl_url_get(source.u, CURLUPART_USER, &user, 0);
        curl_url_get(source.u, CURLUPART_PASSWORD, &password, 0);
    }
    const bool set = curl_url_set(target.u, CURLUPART_USER, user, 0) == CURLUE_OK &&
                     curl_url_set(target.u, CURLUPART_PASSWORD, password, 0) == CURLUE_OK;
    curl_free(user);
    curl_free(password);
    if (!set) return std::nullopt;
    std::string out = target.part(CURLUPART_URL);
    if (out.empty()) return std::nullopt;
    return out;
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
