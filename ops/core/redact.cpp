// SPDX-License-Identifier: Apache-2.0
/// \file
/// Credentials out of URLs and free text, control characters out of messages
/// (ferry/detail/redact.hpp).

#include "ferry/detail/redact.hpp"
#include "ferry/detail/url_parts.hpp"

#include <array>

namespace ferry::detail {
namespace {

/// The one list of query parameters whose values are credentials (lower case).
constexpr std::array<std::string_view, 17> credential_names{"x-amz-signature",
                                                            "x-amz-credential",
                                                            "x-amz-security-token",
                                                            "signature",
                                                            "awsaccesskeyid",
                                                            "x-goog-signature",
                                                            "x-goog-credential",
                                                            "x-goog-security-token",
                                                            "sig",
                                                            "access_token",
                                                            "id_token",
                                                            "refresh_token",
                                                            "token",
                                                            "api_key",
                                                            "apikey",
                                                            "client_secret",
                                                            "password"};

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// A query name as a server reads it: `%XX` decoded, in lower case (`X%2DAmz%2DSignature`).
std::string decoded_lower(std::string_view name) {
    std::string out = percent_decode(name);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// Where a word of free text ends: white space, a quote, an angle bracket or a control byte.
bool word_break(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f || c == '\'' || c == '"' || c == '`' || c == '<' || c == '>';
}

}  // namespace

std::string percent_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
            hex_value(s[i + 2]) >= 0) {
            out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

bool credential_parameter(std::string_view name) noexcept {
    for (const auto n : credential_names) {
        if (n == name) return true;
    }
    return false;
}

std::string redact_url(std::string_view url) {
    std::string out = rewrite_query(url, [](const std::string& name) {
        const bool secret =
            credential_parameter(name) ||
            (name.find('%') != std::string::npos && credential_parameter(decoded_lower(name)));
        return secret ? query_item::redact : query_item::keep;
    });
    // The user part of the authority: scheme://user:password@host/... keeps the user and hides
    // the password; scheme://token@host/... (no colon) is all secret.
    if (const auto user = user_part(out); user && user->size > 0) {
        const auto at = user->offset + user->size;
        const auto colon = out.find(':', user->offset);
        if (colon < at) {
            out.replace(colon + 1, at - colon - 1, "REDACTED");
        } else {
            out.replace(user->offset, user->size, "REDACTED");
        }
    }
    return out;
}

std::optional<url_span> user_part(std::string_view url) noexcept {
    const auto scheme = url.find("://");
    if (scheme == std::string_view::npos) return std::nullopt;
    const auto start = scheme + 3;
    const auto end = url.find_first_of("/?#", start);
    const auto at = url.substr(start, end == std::string_view::npos ? end : end - start).rfind('@');
    if (at == std::string_view::npos) return std::nullopt;
    return url_span{start, at};
}

std::string escape_controls(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u != 0x7f) {
            out += c;
            continue;
        }
        switch (c) {
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default: {
                constexpr char digits[] = "0123456789abcdef";
                out += "\\x";
                out += digits[u >> 4];
                out += digits[u & 15];
            }
        }
    }
    return out;
}

std::string redact_text(std::string_view text) {
    if (!may_hold_credentials(text)) return escape_controls(text);
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        if (word_break(text[i])) {
            out += text[i++];
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && !word_break(text[end])) ++end;
        const std::string_view word = text.substr(i, end - i);
        if (may_hold_credentials(word)) {
            out += redact_url(word);
        } else {
            out += word;
        }
        i = end;
    }
    return escape_controls(out);
}

}  // namespace ferry::detail
