// SPDX-License-Identifier: Apache-2.0
/// \file
/// The one decoder redaction and the cache's key share: a text as its readers read it (`%XX`,
/// HTML/XML character references, JSON/JavaScript escapes), kept unit by unit with the bytes
/// each decoded character stands for (redact_units.hpp, ferry/detail/redact.hpp).

#include <array>
#include <cctype>
#include <optional>

#include "ferry/detail/redact.hpp"
#include "redact_units.hpp"

namespace ferry::detail {
namespace {

/// Rounds of decoding: `%2526` takes two, `&amp;#x25;26` three; a text encoded more often than
/// four times is read as no reader reads it, and left there.
constexpr int decode_rounds = 4;

int decode_hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// HTML5's named character references for the ASCII characters URLs, headers and JSON are
/// built of (case ignored: `&AMP;` is HTML5's too).
struct named_reference {
    std::string_view name;
    char c;
};
constexpr std::array<named_reference, 30> named_references{{
    {"amp", '&'},    {"lt", '<'},     {"gt", '>'},     {"quot", '"'},     {"apos", '\''},
    {"equals", '='}, {"quest", '?'},  {"num", '#'},    {"colon", ':'},    {"commat", '@'},
    {"sol", '/'},    {"bsol", '\\'},  {"percnt", '%'}, {"period", '.'},   {"lowbar", '_'},
    {"plus", '+'},   {"semi", ';'},   {"comma", ','},  {"excl", '!'},     {"dollar", '$'},
    {"lpar", '('},   {"rpar", ')'},   {"lsqb", '['},   {"rsqb", ']'},     {"lcub", '{'},
    {"rcub", '}'},   {"verbar", '|'}, {"grave", '`'},  {"newline", '\n'}, {"tab", '\t'},
}};

/// One escape read as its character: how many units it spans, and whether it is data.
struct decoded_escape {
    char c = 0;
    std::size_t length = 0;
    bool data = false;
};

/// `units[i, i + n)`'s value as hex (or decimal) digits, or -1.
long decode_number(const std::vector<text_unit>& units, std::size_t i, std::size_t n, int base) {
    if (i + n > units.size()) return -1;
    long value = 0;
    for (std::size_t k = i; k < i + n; ++k) {
        const int d = decode_hex_digit(units[k].c);
        if (d < 0 || d >= base) return -1;
        value = value * base + d;
    }
    return value;
}

/// Whether any of `units[i, i + n)` is data: an escape built of data is data.
bool decode_any_data(const std::vector<text_unit>& units, std::size_t i, std::size_t n) {
    for (std::size_t k = i; k < i + n; ++k) {
        if (units[k].data) return true;
    }
    return false;
}

/// `&#38;`, `&#x26;` (the `;` optional, as browsers read them), `&amp;`.
std::optional<decoded_escape> decode_reference(const std::vector<text_unit>& u, std::size_t i) {
    std::size_t k = i + 1;
    if (k < u.size() && u[k].c == '#') {
        ++k;
        const bool hex = k < u.size() && (u[k].c == 'x' || u[k].c == 'X');
        if (hex) ++k;
        const int base = hex ? 16 : 10;
        const std::size_t digits_at = k;
        long value = 0;
        while (k < u.size() && k - digits_at < 8) {
            const int d = decode_hex_digit(u[k].c);
            if (d < 0 || d >= base) break;
            value = value * base + d;
            ++k;
        }
        if (k == digits_at || value <= 0 || value >= 0x80) return std::nullopt;
        if (k < u.size() && u[k].c == ';') ++k;
        return decoded_escape{static_cast<char>(value), k - i, decode_any_data(u, i, k - i)};
    }
    std::string name;
    while (k < u.size() && name.size() < 8 && std::isalpha(static_cast<unsigned char>(u[k].c))) {
        name += static_cast<char>(std::tolower(static_cast<unsigned char>(u[k].c)));
        ++k;
    }
    if (name.empty() || k >= u.size() || u[k].c != ';') return std::nullopt;
    for (const auto& r : named_references) {
        if (r.name == name) return decoded_escape{r.c, k + 1 - i, decode_any_data(u, i, k + 1 - i)};
    }
    return std::nullopt;
}

/// `\u0026`, `\x26`, `\n`, `\/`, `\"`: JSON's and JavaScript's escapes of ASCII characters. An
/// escaped quote or backslash is data: it stays inside its string.
std::optional<decoded_escape> decode_backslash(const std::vector<text_unit>& u, std::size_t i) {
    if (i + 1 >= u.size()) return std::nullopt;
    const bool data = u[i].data || u[i + 1].data;
    switch (u[i + 1].c) {
        case 'u': {
            const long v = decode_number(u, i + 2, 4, 16);
            if (v <= 0 || v >= 0x80) return std::nullopt;
            return decoded_escape{static_cast<char>(v), 6, decode_any_data(u, i, 6)};
        }
        case 'x': {
            const long v = decode_number(u, i + 2, 2, 16);
            if (v <= 0 || v >= 0x80) return std::nullopt;
            return decoded_escape{static_cast<char>(v), 4, decode_any_data(u, i, 4)};
        }
        case 'n':
            return decoded_escape{'\n', 2, data};
        case 'r':
            return decoded_escape{'\r', 2, data};
        case 't':
            return decoded_escape{'\t', 2, data};
        case '/':
            return decoded_escape{'/', 2, data};
        case '\\':
        case '"':
        case '\'':
            return decoded_escape{u[i + 1].c, 2, true};
        default:
            return std::nullopt;
    }
}

std::optional<decoded_escape> decode_escape_at(const std::vector<text_unit>& u, std::size_t i) {
    switch (u[i].c) {
        case '%': {
            const long v = decode_number(u, i + 1, 2, 16);
            if (v < 0) return std::nullopt;
            return decoded_escape{static_cast<char>(v), 3, true};
        }
        case '&':
            return decode_reference(u, i);
        case '\\':
            return decode_backslash(u, i);
        default:
            return std::nullopt;
    }
}

/// The escape at `units[i]`, if one starts there (the test inline: most characters start none).
std::optional<decoded_escape> decode_escape_if_any(const std::vector<text_unit>& units,
                                                   std::size_t i) {
    const char c = units[i].c;
    if (c != '%' && c != '&' && c != '\\') return std::nullopt;
    return decode_escape_at(units, i);
}

/// One round of decoding; false when nothing was decoded (and nothing was copied).
bool decode_round(std::vector<text_unit>& units) {
    std::size_t first = 0;
    std::optional<decoded_escape> e;
    while (first < units.size() && !(e = decode_escape_if_any(units, first))) ++first;
    if (!e) return false;
    std::vector<text_unit> out;
    out.reserve(units.size());
    out.insert(out.end(), units.begin(), units.begin() + static_cast<std::ptrdiff_t>(first));
    for (std::size_t i = first; i < units.size();) {
        if (e) {
            out.push_back({units[i].begin, units[i + e->length - 1].end, e->c, e->data});
            i += e->length;
        } else {
            out.push_back(units[i++]);
        }
        e = i < units.size() ? decode_escape_if_any(units, i) : std::nullopt;
    }
    units = std::move(out);
    return true;
}

}  // namespace

std::vector<text_unit> read_units(std::string_view text) {
    std::vector<text_unit> units(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) units[i] = {i, i + 1, text[i], false};
    if (text.find_first_of("%&\\") == std::string_view::npos) return units;
    for (int round = 0; round < decode_rounds && decode_round(units); ++round) {
    }
    return units;
}

std::string units_text(const std::vector<text_unit>& units, std::size_t from, std::size_t to) {
    std::string out;
    out.reserve(to - from);
    for (std::size_t i = from; i < to; ++i) out += units[i].c;
    return out;
}

std::string unescape(std::string_view text) {
    const auto units = read_units(text);
    return units_text(units, 0, units.size());
}

std::string parameter_name(std::string_view raw_name) {
    std::string out = unescape(raw_name);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string percent_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && decode_hex_digit(s[i + 1]) >= 0 &&
            decode_hex_digit(s[i + 2]) >= 0) {
            out += static_cast<char>(decode_hex_digit(s[i + 1]) * 16 + decode_hex_digit(s[i + 2]));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

}  // namespace ferry::detail
