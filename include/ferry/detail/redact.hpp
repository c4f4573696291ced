// SPDX-License-Identifier: Apache-2.0
/// \file
/// Credentials out of URLs before a URL is shown anywhere (error messages, `failure::input`, log
/// lines, the quarantine file): presigned URLs' credential query parameters and the password of a
/// `user:password@`. Core, so that the engine's names of inputs and `read_url`'s messages share
/// one rule (ops/core/redact.cpp).
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/export.hpp"

namespace ferry::detail {

enum class query_item : std::uint8_t { keep, redact, drop };

/// `url` with each query item kept, its value replaced by `REDACTED`, or left out, as `what`
/// says of its name (lower case).
template <typename F>
std::string rewrite_query(std::string_view url, F what) {
    const auto q = url.find('?');
    if (q == std::string_view::npos) return std::string(url);
    const auto hash = url.find('#', q);
    const std::string_view query =
        url.substr(q + 1, hash == std::string_view::npos ? std::string_view::npos : hash - q - 1);
    std::string out(url.substr(0, q + 1));
    std::size_t at = 0;
    while (at <= query.size()) {
        auto amp = query.find('&', at);
        if (amp == std::string_view::npos) amp = query.size();
        const std::string_view item = query.substr(at, amp - at);
        const auto eq = item.find('=');
        std::string name(item.substr(0, eq));
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const query_item w = what(name);
        if (w != query_item::drop) {
            if (out.back() != '?') out += '&';
            if (w == query_item::redact && eq != std::string_view::npos) {
                out += std::string(item.substr(0, eq + 1)) + "REDACTED";
            } else {
                out += item;
            }
        }
        at = amp + 1;
    }
    if (hash != std::string_view::npos) out += url.substr(hash);
    return out;
}

/// `s` with each `%XX` escape decoded (a `%` not followed by two hex digits is kept).
[[nodiscard]] FERRY_API std::string percent_decode(std::string_view s);

/// Whether a query parameter (its name in lower case, percent-decoded) carries a credential.
/// The one list ferry keeps (ops/core/redact.cpp), used for messages and for the cache's key:
/// AWS SigV4 and SigV2 (`x-amz-signature`, `x-amz-credential`, `x-amz-security-token`,
/// `signature`, `awsaccesskeyid`), Google Cloud Storage (`x-goog-signature`,
/// `x-goog-credential`, `x-goog-security-token`), Azure SAS (`sig`), OAuth and API tokens
/// (`access_token`, `id_token`, `refresh_token`, `token`, `api_key`, `apikey`,
/// `client_secret`, `password`).
[[nodiscard]] FERRY_API bool credential_parameter(std::string_view lower_name) noexcept;

/// `url` with its credentials replaced by `REDACTED`: the values of the credential query
/// parameters (names compared without case and percent-decoded), the password of a
/// `user:password@` in the authority (`https://user:REDACTED@host/...`) and the whole user part
/// when it has no password, as a token does (`https://REDACTED@host/...`). Anything else is
/// returned as it is.
[[nodiscard]] FERRY_API std::string redact_url(std::string_view url);

/// `text` with control characters (bytes below 0x20, and 0x7f) written as escapes (`\n`, `\r`,
/// `\t`, `\x1b`, ...): a text from storage (a tar member name, a server's message) cannot start
/// a new log line or colour a terminal. Other bytes, UTF-8 included, are kept.
[[nodiscard]] FERRY_API std::string escape_controls(std::string_view text);

/// `text` safe to show: every URL-like word in it (delimited by white space, quotes or angle
/// brackets, holding a `?` or an `@`) passed through `redact_url`, then `escape_controls`.
/// Where ferry records, logs or throws a message it did not build itself, it passes it through
/// this first (`ferry::describe`, the failure log, the quarantine file).
[[nodiscard]] FERRY_API std::string redact_text(std::string_view text);

/// Whether `text` can hold what `redact_url` replaces (a query or an `@`): the cheap test first.
[[nodiscard]] inline bool may_hold_credentials(std::string_view text) noexcept {
    return text.find('?') != std::string_view::npos || text.find('@') != std::string_view::npos;
}

}  // namespace ferry::detail
