// SPDX-License-Identifier: Apache-2.0
/// \file
/// The cache's key for a read (see cache_key.hpp): who a read's credentials say is asking.
#include "cache_key.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string_view>
#include <vector>

#include "credential_guard.hpp"
#include "ferry/detail/redact.hpp"
#include "ferry/detail/url_parts.hpp"
#include "s3_text.hpp"
#include "sha256.hpp"

namespace ferry::ops::detail {

using ferry::detail::percent_decode;

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// Standard base64 (padding optional); nullopt when `s` is not base64.
std::optional<std::string> base64_decode(std::string_view s) {
    std::string out;
    std::uint32_t bits = 0;
    int count = 0;
    for (const char c : s) {
        int v = -1;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        if (c >= '0' && c <= '9') v = c - '0' + 52;
        if (c == '+') v = 62;
        if (c == '/') v = 63;
        if (c == '=') break;
        if (v < 0) return std::nullopt;
        bits = (bits << 6) | static_cast<std::uint32_t>(v);
        count += 6;
        if (count >= 8) {
            count -= 8;
            out += static_cast<char>((bits >> count) & 0xFF);
        }
    }
    return out;
}

/// Who a read's credentials say is asking: the identities they name, and whether one of them
/// names nobody.
struct identity {
    std::vector<std::string> names;
    bool unknown = false;
};

/// `user:password@` names its user; a user part alone (`https://TOKEN@host/`) is a token.
void from_user_part(std::string_view url, identity& id) {
    const auto user = ferry::detail::user_part(url);
    if (!user) return;
    const std::string_view user_info = url.substr(user->offset, user->size);
    const auto colon = user_info.find(':');
    if (colon == std::string_view::npos || colon == 0) {
        id.unknown = true;
        return;
    }
    id.names.push_back("user " + percent_decode(user_info.substr(0, colon)));
}

/// Presigned URLs name their key id (`X-Amz-Credential=<id>/<date>/...`, `AWSAccessKeyId`,
/// `X-Goog-Credential`); their signatures and tokens belong to it. Any other credential
/// parameter (`sig`, `token`, ...), or a signature without its key id, names nobody.
void from_query(std::string_view url, identity& id) {
    const auto q = url.find('?');
    if (q == std::string_view::npos) return;
    const auto hash = url.find('#', q);
    const std::string_view query =
        url.substr(q + 1, hash == std::string_view::npos ? std::string_view::npos : hash - q - 1);
    bool key_id = false;
    bool signed_part = false;
    std::size_t at = 0;
    while (at <= query.size()) {
        auto amp = query.find('&', at);
        if (amp == std::string_view::npos) amp = query.size();
        const std::string_view item = query.substr(at, amp - at);
        at = amp + 1;
        const auto eq = item.find('=');
        const std::string name = ferry::detail::parameter_name(item.substr(0, eq));
        if (!ferry::detail::credential_parameter(name)) continue;
        const std::string value =
            eq == std::string_view::npos ? std::string() : percent_decode(item.substr(eq + 1));
        const std::string first = value.substr(0, value.find('/'));
        if ((name == "x-amz-credential" || name == "awsaccesskeyid") && !first.empty()) {
            id.names.push_back("aws " + first);
            key_id = true;
        } else if (name == "x-goog-credential" && !first.empty()) {
            id.names.push_back("goog " + first);
            key_id = true;
        } else if (name.starts_with("x-amz-") || name.starts_with("x-goog-") ||
                   name == "signature") {
            signed_part = true;
        } else {
            id.unknown = true;
        }
    }
    if (signed_part && !key_id) id.unknown = true;
}

/// `sha256-` and the first 32 hex digits of `text`'s SHA-256: what stands in the key for a value
/// that may hold a secret.
std::string key_digest(std::string_view text) {
    return "sha256-" + sha256_hex(text).substr(0, 32);
}

/// `unsigned_url(url)` (credential parameters of the list and presigning left out) with each
/// query item that may still hold a secret kept apart by a digest: a parameter whose name only
/// looks like a credential's (`key=`, `continuation-token=`: `credential_name`, not
/// `credential_parameter`), whose value holds one (a URL nested in a parameter, its signature
/// `%26`-joined), or written so that no server reads it as the list's (`amp;X-Amz-Signature=`).
/// Such a parameter may pick the object, so it is not left out (that would serve one object for
/// another); its value (or the whole item, where its name holds the secret) becomes
/// `key_digest`'s text: equal values share an entry, no value reaches the record.
std::string keyed_url(std::string_view url) {
    std::string key = unsigned_url(url);
    const auto q = key.find('?');
    if (q == std::string::npos) return key;
    const std::string query = key.substr(q + 1);
    key.resize(q + 1);
    std::size_t at = 0;
    while (at <= query.size()) {
        auto amp = query.find('&', at);
        if (amp == std::string::npos) amp = query.size();
        const std::string_view item = std::string_view(query).substr(at, amp - at);
        at = amp + 1;
        if (key.back() != '?') key += '&';
        const auto eq = item.find('=');
        const std::string_view name = item.substr(0, eq);
        const auto holds = [](std::string_view text) {
            return ferry::detail::redact_text(text) != ferry::detail::escape_controls(text);
        };
        if (holds(name)) {
            key += key_digest(item);
        } else if (eq != std::string_view::npos &&
                   (ferry::detail::credential_name(ferry::detail::unescape(name)) || holds(item))) {
            key += std::string(name) + "=" + key_digest(item.substr(eq + 1));
        } else {
            key += item;
        }
    }
    return key;
}

/// `Authorization: Basic` names its user, `Authorization: AWS4-HMAC-SHA256 Credential=<id>/...`
/// its key id; every other credential header names nobody.
void from_header(std::string_view header, identity& id) {
    const auto colon = header.find(':');
    if (colon == std::string_view::npos) return;
    const std::string name = lower(trim(header.substr(0, colon)));
    const std::string_view value = trim(header.substr(colon + 1));
    if (value.empty() || !credential_header(name)) return;
    if (name == "authorization") {
        const std::string scheme = lower(value.substr(0, value.find(' ')));
        const std::string_view rest = trim(value.substr(std::min(value.size(), scheme.size())));
        if (scheme == "basic") {
            const auto text = base64_decode(rest);
            const auto c = text ? text->find(':') : std::string::npos;
            if (c != std::string::npos && c > 0) {
                id.names.push_back("user " + text->substr(0, c));
                return;
            }
        } else if (scheme == "aws4-hmac-sha256") {
            const auto p = rest.find("Credential=");
            if (p != std::string_view::npos) {
                const std::string_view v = rest.substr(p + 11);
                const std::string_view key = v.substr(0, v.find_first_of("/, "));
                if (!key.empty()) {
                    id.names.push_back("aws " + std::string(key));
                    return;
                }
            }
        }
    }
    id.unknown = true;
}

}  // namespace

std::optional<std::string> cache_key(const request& r, const http_options& options,
                                     const cache_options& cache) {
    std::string key = keyed_url(r.url);
    // The key is the last field of an entry's record; the URL in it holds no line break.
    if (key.find_first_of(std::string("\r\n\0", 3)) != std::string::npos) return std::nullopt;
    identity id;
    from_user_part(r.url, id);
    from_query(r.url, id);
    if (!r.sigv4.empty()) {
        // Its own headers (the session token) belong to the key id it is signed with.
        id.names.push_back("aws " + r.user);
    } else {
        for (const auto& h : r.headers) from_header(h, id);
    }
    for (const auto& h : options.headers) from_header(h, id);
    if (id.names.empty() && !id.unknown) return key;
    if (id.unknown && !cache.cache_unidentified) return std::nullopt;
    std::sort(id.names.begin(), id.names.end());
    id.names.erase(std::unique(id.names.begin(), id.names.end()), id.names.end());
    std::string who = "ferry-cache identity";
    for (const auto& n : id.names) who += "\n" + n;
    return key + "\ncredential " + (id.unknown ? "unidentified " : "") + sha256_hex(who);
}

}  // namespace ferry::ops::detail
