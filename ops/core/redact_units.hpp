// SPDX-License-Identifier: Apache-2.0
/// \file
/// A text as its readers read it, one decoded character at a time, each with the bytes of the
/// text it stands for: what redaction finds credentials in (redact.cpp) and what it replaces
/// (the bytes), from the one decoder (redact_decode.cpp). Not API.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::detail {

/// One character of a decoded text.
struct text_unit {
    std::size_t begin = 0;  ///< its first byte in the text
    std::size_t end = 0;    ///< one past its last byte
    char c = 0;             ///< the character a reader reads
    /// A URL's reader takes it as data, never as structure: it came from a `%XX` escape
    /// (`sig=a%26b` is one value), or it is a quote or a backslash escaped inside a string.
    bool data = false;
};

/// `text` decoded as `unescape` decodes it, one unit per decoded character.
[[nodiscard]] std::vector<text_unit> read_units(std::string_view text);

/// The characters of `units[from, to)`.
[[nodiscard]] std::string units_text(const std::vector<text_unit>& units, std::size_t from,
                                     std::size_t to);

/// Whether `name` (a header's, written `Name: value` in text) says it carries a credential:
/// `credential_name`'s rule with words split at `-`, `_` and `.` only, so that S3's codes
/// (`NoSuchKey`, `ExpiredToken`) are no header names here (credential_names.cpp).
[[nodiscard]] bool credential_header_name(std::string_view name) noexcept;

/// Whether `name` is a header that carries a credential even written `Name:value` without a
/// space (`authorization`, `cookie`, `x-amz-security-token`, ...).
[[nodiscard]] bool credential_header_known(std::string_view name) noexcept;

/// Whether `word` (any case) is an HTTP authentication scheme (`Basic`, `Bearer`,
/// `AWS4-HMAC-SHA256`, ...): kept before the credential it introduces.
[[nodiscard]] bool auth_scheme(std::string_view word) noexcept;

/// Whether `scheme` (any case) names a network URL scheme whose user part is a credential
/// (`https`, `s3`, `ftp`, ...), unlike `mailto`.
[[nodiscard]] bool network_scheme(std::string_view scheme) noexcept;

}  // namespace ferry::detail
