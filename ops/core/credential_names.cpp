// SPDX-License-Identifier: Apache-2.0
/// \file
/// Which names carry credentials: the one list of query parameters (messages redact them, the
/// cache's key leaves them out), the wider rule of names that say credential, header names in
/// text, authentication schemes and network URL schemes (ferry/detail/redact.hpp,
/// redact_units.hpp).

#include <array>
#include <cctype>
#include <string>

#include "ferry/detail/redact.hpp"
#include "redact_units.hpp"

namespace ferry::detail {
namespace {

/// The one list of query parameters whose values are credentials (lower case).
constexpr std::array<std::string_view, 27> credential_parameters{"x-amz-signature",
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
                                                                 "auth_token",
                                                                 "session_token",
                                                                 "security_token",
                                                                 "x-auth-token",
                                                                 "api_key",
                                                                 "apikey",
                                                                 "api-key",
                                                                 "x-api-key",
                                                                 "client_secret",
                                                                 "secret",
                                                                 "secret_key",
                                                                 "private_key",
                                                                 "password",
                                                                 "passwd"};

/// A name's last word that makes it a credential's (`auth_token`, `x-api-key`, `accessToken`).
constexpr std::array<std::string_view, 16> credential_last_words{
    "token",         "key",       "apikey",  "secret",     "password",    "passwd",
    "pwd",           "signature", "sig",     "credential", "credentials", "auth",
    "authorization", "cookie",    "session", "jwt"};

/// A word that makes a name a credential's wherever it stands (`oauth_signature_method` is
/// redacted too: a value too many hidden in a message costs nothing).
constexpr std::array<std::string_view, 4> credential_any_words{"signature", "credential",
                                                               "credentials", "apikey"};

/// Parts of a name that make it a credential's inside a word (`clientSecret`, `dbpassword`).
constexpr std::array<std::string_view, 3> credential_parts{"secret", "password", "passwd"};

/// Endings that make a name a credential's where its words cannot be told apart
/// (`ACCESSTOKEN`, `xapikey`); not for header names in text, where S3's codes end so
/// (`ExpiredToken:`).
constexpr std::array<std::string_view, 5> credential_endings{"token", "apikey", "accesskey",
                                                             "secretkey", "privatekey"};

/// Headers that carry a credential even when echoed as `Name:value`, without a space.
constexpr std::array<std::string_view, 8> credential_headers{
    "authorization",        "proxy-authorization", "cookie",       "set-cookie",
    "x-amz-security-token", "x-api-key",           "x-auth-token", "x-goog-api-key"};

/// HTTP authentication schemes (RFC 9110's registry, AWS's and Google's signatures, Azure's).
constexpr std::array<std::string_view, 17> auth_schemes{"basic",
                                                        "bearer",
                                                        "digest",
                                                        "negotiate",
                                                        "ntlm",
                                                        "token",
                                                        "hoba",
                                                        "mutual",
                                                        "vapid",
                                                        "scram-sha-1",
                                                        "scram-sha-256",
                                                        "dpop",
                                                        "aws",
                                                        "aws4-hmac-sha256",
                                                        "goog4-rsa-sha256",
                                                        "goog4-hmac-sha256",
                                                        "sharedkey"};

/// URL schemes whose user part is a credential: curl's and the object stores'.
constexpr std::array<std::string_view, 30> network_schemes{
    "http",  "https", "ftp",   "ftps", "sftp",  "scp",  "s3",   "gs",   "az",    "abfs",
    "abfss", "wasb",  "wasbs", "ws",   "wss",   "smb",  "smbs", "ldap", "ldaps", "imap",
    "imaps", "pop3",  "pop3s", "smtp", "smtps", "rtsp", "mqtt", "git",  "ssh",   "file"};

std::string lower_name(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

template <std::size_t N>
bool listed_name(const std::array<std::string_view, N>& list, std::string_view name) noexcept {
    for (const auto n : list) {
        if (n == name) return true;
    }
    return false;
}

/// Whether a word of a name (in lower case) makes it a credential's: `last`, the name's last
/// word; else any word.
bool credential_word(std::string_view word, bool last) noexcept {
    return listed_name(credential_any_words, word) ||
           (last && listed_name(credential_last_words, word));
}

/// `credential_name`'s rule; without `camel`, `credential_header_name`'s: words split at `-`,
/// `_`, `.`, `[`, `]` and white space only, no endings.
bool credential_words(std::string_view name, bool camel) {
    const std::string lower = lower_name(name);
    if (credential_parameter(lower)) return true;
    for (const auto part : credential_parts) {
        if (lower.find(part) != std::string::npos) return true;
    }
    for (const auto ending : credential_endings) {
        if (camel && lower.ends_with(ending)) return true;
    }
    // Words: split at separators, and with `camel` where a lower-case letter or a digit meets
    // an upper-case one (`accessToken`).
    std::string_view last;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= name.size(); ++i) {
        const auto c = i < name.size() ? static_cast<unsigned char>(name[i]) : '-';
        const bool separator =
            c == '-' || c == '_' || c == '.' || c == '[' || c == ']' || std::isspace(c) != 0;
        const bool hump = camel && i > start && std::isupper(c) != 0 &&
                          (std::islower(static_cast<unsigned char>(name[i - 1])) != 0 ||
                           std::isdigit(static_cast<unsigned char>(name[i - 1])) != 0);
        if (!separator && !hump) continue;
        if (i > start) {
            if (!last.empty() && credential_word(last, false)) return true;
            last = std::string_view(lower).substr(start, i - start);
        }
        start = separator ? i + 1 : i;
    }
    return !last.empty() && credential_word(last, true);
}

}  // namespace

bool credential_parameter(std::string_view lower_name) noexcept {
    return listed_name(credential_parameters, lower_name);
}

bool credential_name(std::string_view name) noexcept {
    try {
        return credential_words(name, true);
    } catch (...) {  // bad_alloc: a name that cannot be read is taken for a credential's
        return true;
    }
}

bool credential_header_name(std::string_view name) noexcept {
    try {
        return credential_words(name, false);
    } catch (...) {
        return true;
    }
}

bool credential_header_known(std::string_view name) noexcept {
    try {
        return listed_name(credential_headers, lower_name(name));
    } catch (...) {
        return true;
    }
}

bool auth_scheme(std::string_view word) noexcept {
    try {
        return listed_name(auth_schemes, lower_name(word));
    } catch (...) {
        return false;
    }
}

bool network_scheme(std::string_view scheme) noexcept {
    try {
        return listed_name(network_schemes, lower_name(scheme));
    } catch (...) {
        return false;
    }
}

}  // namespace ferry::detail
