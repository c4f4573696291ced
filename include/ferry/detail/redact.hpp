// SPDX-License-Identifier: Apache-2.0
/// \file
/// Credentials out of every text ferry shows (error messages, `failure::input`, log lines, the
/// quarantine file, the cache's records): presigned URLs' credential parameters, the password of
/// a `user:password@`, credential headers echoed in text; written plainly or as a text's reader
/// decodes them (%XX, `&amp;`, `\u0026`). Core, so that the engine's names of inputs,
/// `read_url`'s messages and the cache's key share one reading and one list
/// (ops/core/redact.cpp, redact_decode.cpp, credential_names.cpp).
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/export.hpp"

namespace ferry::detail {

/// What `rewrite_query` does with a query item: keeps it, replaces its value by `REDACTED`, or
/// leaves it out.
enum class query_item : std::uint8_t { keep, redact, drop };

/// `s` with each `%XX` escape decoded (a `%` not followed by two hex digits is kept).
[[nodiscard]] FERRY_API std::string percent_decode(std::string_view s);

/// `text` as its readers read it: `%XX` escapes, HTML/XML character references (`&amp;`,
/// `&#38;`, `&#x26;`, `&equals;`, ...) and JSON/JavaScript escapes (`\u0026`, `\x26`, `\/`,
/// `\n`, ...) decoded where they stand for an ASCII character, again until nothing changes (at
/// most four rounds: `%2526` and `&amp;amp;` are `&`). The one decoder redaction and the cache's
/// key share; others are kept as they are.
[[nodiscard]] FERRY_API std::string unescape(std::string_view text);

/// A query parameter's name as the list compares it: `unescape`d, in lower case
/// (`X%2DAmz%2DSignature` and `X&#45;Amz-Signature` are `x-amz-signature`).
/// \code
///   ferry::detail::parameter_name("X%2DAmz%2DSignature");   // "x-amz-signature"
/// \endcode
[[nodiscard]] FERRY_API std::string parameter_name(std::string_view raw_name);

/// `url` with each query item kept, its value replaced by `REDACTED`, or left out, as `what`
/// says of its name (as `parameter_name` reads it). Items are split where the server splits
/// them, at `&`; the fragment is kept as it is.
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
        const query_item w = what(parameter_name(item.substr(0, eq)));
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

/// Whether a query parameter (its name as `parameter_name` gives it) is a credential by name:
/// the one list ferry keeps (ops/core/credential_names.cpp). AWS SigV4 and SigV2
/// (`x-amz-signature`, `x-amz-credential`, `x-amz-security-token`, `signature`,
/// `awsaccesskeyid`), Google Cloud Storage (`x-goog-signature`, `x-goog-credential`,
/// `x-goog-security-token`), Azure SAS (`sig`), OAuth and API tokens and keys (`access_token`,
/// `id_token`, `refresh_token`, `token`, `auth_token`, `session_token`, `security_token`,
/// `x-auth-token`, `api_key`, `apikey`, `api-key`, `x-api-key`, `client_secret`, `secret`,
/// `secret_key`, `private_key`), passwords (`password`, `passwd`). Messages redact their values;
/// the cache's key leaves them out (the same object under every credential).
[[nodiscard]] FERRY_API bool credential_parameter(std::string_view lower_name) noexcept;

/// Whether a name (a query parameter's, a JSON key's, a header's; decoded, any case) says it
/// carries a credential: a `credential_parameter`; a name holding `secret`, `password` or
/// `passwd`; a name whose last word is `token`, `key`, `apikey`, `secret`, `password`, `pwd`,
/// `signature`, `sig`, `credential(s)`, `auth`, `authorization`, `cookie`, `session` or `jwt`
/// (`auth_token`, `x-api-key`, `accessToken`, `continuation-token`), one of whose words is
/// `signature`, `credential(s)` or `apikey`, or one ending in `token`, `apikey`, `accesskey`,
/// `secretkey` or `privatekey` (`ACCESSTOKEN`). Words are split at `-`, `_`, `.`, `[`, `]` and
/// where a lower-case letter meets an upper-case one. Wider than the list on
/// purpose: messages redact these values too (a value too many hidden costs nothing), while the
/// cache's key keeps such a parameter with a digest of its value in place of the value (a `key=`
/// or a page token may pick the object: leaving it out would serve one object for another).
[[nodiscard]] FERRY_API bool credential_name(std::string_view name) noexcept;

/// `url` with its credentials replaced by `REDACTED`, read as `redact_text` reads text, and as
/// a URL: a user part without a password (a token, `https://TOKEN@host/`, also `TOKEN@host/x`
/// without a scheme) is hidden whole. Anything else is returned as it is.
/// \code
///   ferry::detail::redact_url("https://h/o?a=1&X-Amz-Signature=S");   //
///   "...&X-Amz-Signature=REDACTED" ferry::detail::redact_url("alice:pw@h:8080/x"); //
///   "alice:REDACTED@h:8080/x"
/// \endcode
[[nodiscard]] FERRY_API std::string redact_url(std::string_view url);

/// `text` with control characters (bytes below 0x20, and 0x7f) written as escapes (`\n`, `\r`,
/// `\t`, `\x1b`, ...): a text from storage (a tar member name, a server's message) cannot start
/// a new log line or colour a terminal. Other bytes, UTF-8 included, are kept.
[[nodiscard]] FERRY_API std::string escape_controls(std::string_view text);

/// `text` safe to show: credentials replaced by `REDACTED`, then `escape_controls`. Read through
/// `unescape`'s decoding, so that a credential is found whatever form its text takes:
/// - `name=value` where `credential_name(name)`, anywhere (a query, a fragment's
///   `#access_token=`, a form body), `=` and the separator before the name written plainly or
///   encoded (`%3D`, `&#61;`, `\u003d`; `&amp;`, `&#38;`, `\u0026`, `%26`). The value ends where
///   its reader ends it: at white space, a quote, `<`, `>`, `&` or `#`, but not at a `%XX`
///   escape, which a URL's reader takes as the value's own byte (so `sig=a%26b` hides `a%26b`);
/// - a credential header echoed in text, `Authorization: Basic ...`, `Cookie: ...`,
///   `X-Amz-Security-Token: ...` (a header-style name, words split at `-`, `_`, `.`, so that
///   S3's codes `NoSuchKey:`, `SignatureDoesNotMatch:`, `ExpiredToken:` stay readable), or a JSON
///   key `"password": "..."`: the value to the end of its line, or of its quotes, the
///   authentication scheme word (`Basic`, `Bearer`, ...) kept;
/// - the password of a user part in every URL form curl reads: `scheme://user:pw@host`,
///   `scheme:/user:pw@`, `scheme:user:pw@`, `//user:pw@`, `user:pw@host:port/path`; and a token
///   as the whole user part after `//` or a network scheme (`https://TOKEN@host`).
/// Where ferry records, logs or throws a message it did not build itself, it passes it through
/// this first (`ferry::describe`, the failure log, the quarantine file, an HTTP error's body).
[[nodiscard]] FERRY_API std::string redact_text(std::string_view text);

/// Whether `text` can hold what `redact_text` and `redact_url` replace (an `=`, a `:`, an `@`,
/// or an escape that can stand for one): the cheap test first.
[[nodiscard]] inline bool may_hold_credentials(std::string_view text) noexcept {
    return text.find_first_of("=:@%&\\") != std::string_view::npos;
}

}  // namespace ferry::detail
