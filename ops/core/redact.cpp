// SPDX-License-Identifier: Apache-2.0
/// \file
/// Credentials out of URLs and free text, control characters out of messages
/// (ferry/detail/redact.hpp): where a text's credentials lie, found in the text as its readers
/// read it (redact_decode.cpp) by the one list of names (credential_names.cpp), and replaced in
/// the text as it was written.
///
/// Where a credential ends is decided on the safe side: only what a reader takes as structure
/// ends a value (a plain or entity- or backslash-escaped `&`, white space, a quote), never a
/// `%XX` escape, which a URL's reader takes as the value's own byte. Names are found through
/// every escape, so a URL nested in another's query (`next=https%3A...%26sig%3D...`) is read too.

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include "ferry/detail/redact.hpp"
#include "ferry/detail/url_parts.hpp"
#include "redact_units.hpp"

namespace ferry::detail {
namespace {

/// Units `[first, second)` of a decoded text to replace by `REDACTED`.
using redact_span = std::pair<std::size_t, std::size_t>;

/// Where a word of text ends for its reader: white space, a control byte, a quote, an angle
/// bracket, written as such (data never ends one).
bool redact_break(const text_unit& u) noexcept {
    if (u.data) return false;
    const auto c = static_cast<unsigned char>(u.c);
    return c <= 0x20 || c == 0x7f || u.c == '\'' || u.c == '"' || u.c == '`' || u.c == '<' ||
           u.c == '>';
}

bool redact_space(const text_unit& u) noexcept {
    return !u.data && (u.c == ' ' || u.c == '\t');
}

bool redact_quote(const text_unit& u) noexcept {
    return !u.data && (u.c == '"' || u.c == '\'');
}

bool redact_name_char(char c) noexcept {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
           c == '[' || c == ']';
}

/// The first unit of the name that ends at `end` (`end` itself when there is none).
std::size_t redact_name_start(const std::vector<text_unit>& u, std::size_t end) {
    std::size_t s = end;
    while (s > 0 && redact_name_char(u[s - 1].c)) --s;
    return s;
}

/// Past an authentication scheme and the spaces after it (`Basic `), where one stands at `at`
/// before its credential; else `at`.
std::size_t past_auth_scheme(const std::vector<text_unit>& u, std::size_t at) {
    std::size_t w = at;
    while (w < u.size() && !u[w].data &&
           (std::isalnum(static_cast<unsigned char>(u[w].c)) != 0 || u[w].c == '-')) {
        ++w;
    }
    if (w == at || w >= u.size() || !redact_space(u[w]) || !auth_scheme(units_text(u, at, w))) {
        return at;
    }
    while (w < u.size() && redact_space(u[w])) ++w;
    return w < u.size() && !redact_break(u[w]) ? w : at;
}

/// `name=value` where the name says credential (`credential_name`), in a query, a fragment, a
/// form or a sentence: the value, up to what its reader ends it at.
void find_parameter_values(const std::vector<text_unit>& u, std::vector<redact_span>& spans) {
    for (std::size_t i = 0; i < u.size(); ++i) {
        if (u[i].c != '=') continue;
        const std::size_t s = redact_name_start(u, i);
        if (s == i || !credential_name(units_text(u, s, i))) continue;
        const std::size_t v = past_auth_scheme(u, i + 1);
        std::size_t e = v;
        while (e < u.size() && !redact_break(u[e]) &&
               (u[e].data || (u[e].c != '&' && u[e].c != '#'))) {
            ++e;
        }
        if (e > v) spans.emplace_back(v, e);
    }
}

/// `Name: value` (a header echoed in text) or `"name": value` (JSON) where the name says
/// credential: the value to the end of its line, or of its quotes.
void find_header_values(const std::vector<text_unit>& u, std::vector<redact_span>& spans) {
    for (std::size_t i = 0; i < u.size(); ++i) {
        if (u[i].c != ':') continue;
        std::size_t end = i;
        const bool quoted = end > 0 && redact_quote(u[end - 1]);
        if (quoted) --end;
        const std::size_t s = redact_name_start(u, end);
        if (s == end) continue;
        const std::string name = units_text(u, s, end);
        if (quoted) {
            if (s == 0 || u[s - 1].c != u[end].c || u[s - 1].data || !credential_name(name)) {
                continue;
            }
        } else {
            // A header starts a line or follows a separator; `a=b:` or `/x:` is not one.
            const bool starts = s == 0 || redact_break(u[s - 1]) ||
                                std::string_view("{,;(|").find(u[s - 1].c) != std::string::npos;
            if (!starts || !credential_header_name(name)) continue;
        }
        std::size_t v = i + 1;
        while (v < u.size() && redact_space(u[v])) ++v;
        // `key:secret@host` is a user part (found below), not a header.
        if (!quoted && v == i + 1 && !credential_header_known(name)) continue;
        char open = 0;
        if (v < u.size() && redact_quote(u[v])) open = u[v++].c;
        v = past_auth_scheme(u, v);
        std::size_t e = v;
        for (; e < u.size(); ++e) {
            if (u[e].data) continue;
            const auto c = static_cast<unsigned char>(u[e].c);
            if (c < 0x20 || c == 0x7f || c == '<' || c == '>') break;
            if (open != 0 && u[e].c == open) break;
            if (open == 0 && quoted && (c == ',' || c == '}' || c == ' ')) break;
        }
        if (e > v) spans.emplace_back(v, e);
    }
}

/// Where a URL's authority ends for a reader, and where a word of text does.
bool redact_region_end(const text_unit& u) noexcept {
    return redact_break(u) || (!u.data && (u.c == '/' || u.c == '?' || u.c == '#'));
}

/// The user part in `u[s, e)`, a stretch between slashes, `?`, `#` and word ends: up to its last
/// `@`, after a scheme written into it (`http:u:pw@h`). A password is what follows the first
/// colon; a user part without one (a token) is hidden whole where it is a URL's, after `//`, a
/// network scheme, or at the start of what `redact_url` was given.
void find_user_part(const std::vector<text_unit>& u, std::size_t s, std::size_t e, bool whole_url,
                    std::vector<redact_span>& spans) {
    std::size_t at = e;
    for (std::size_t k = e; k > s; --k) {
        if (u[k - 1].c == '@') {
            at = k - 1;
            break;
        }
    }
    if (at == e || at == s) return;
    bool url = (whole_url && s == 0) ||
               (s >= 2 && u[s - 1].c == '/' && (u[s - 2].c == '/' || u[s - 2].c == ':'));
    std::size_t from = s;
    std::size_t k = s;
    while (k < at && (std::isalnum(static_cast<unsigned char>(u[k].c)) != 0 || u[k].c == '+' ||
                      u[k].c == '-' || u[k].c == '.')) {
        ++k;
    }
    if (k > s && k < at && u[k].c == ':' && std::isalpha(static_cast<unsigned char>(u[s].c))) {
        const std::string scheme = units_text(u, s, k);
        if (network_scheme(scheme)) {
            from = k + 1;
            url = true;
        } else if (std::equal(scheme.begin(), scheme.end(), std::string_view("mailto").begin(),
                              std::string_view("mailto").end(), [](char a, char b) {
                                  return std::tolower(static_cast<unsigned char>(a)) == b;
                              })) {
            from = k + 1;
            url = false;
        }
    }
    std::size_t colon = from;
    while (colon < at && u[colon].c != ':') ++colon;
    if (colon < at) {
        if (colon + 1 < at) spans.emplace_back(colon + 1, at);
    } else if (url && from < at) {
        spans.emplace_back(from, at);
    }
}

void find_user_parts(const std::vector<text_unit>& u, bool whole_url,
                     std::vector<redact_span>& spans) {
    for (std::size_t s = 0; s <= u.size();) {
        std::size_t e = s;
        while (e < u.size() && !redact_region_end(u[e])) ++e;
        find_user_part(u, s, e, whole_url, spans);
        s = e + 1;
    }
}

/// `text` with the bytes of each span (merged where they touch) replaced by `REDACTED`.
std::string replace_spans(std::string_view text, const std::vector<text_unit>& u,
                          const std::vector<redact_span>& spans) {
    std::vector<std::pair<std::size_t, std::size_t>> bytes;
    bytes.reserve(spans.size());
    for (const auto& [first, last] : spans) bytes.emplace_back(u[first].begin, u[last - 1].end);
    std::sort(bytes.begin(), bytes.end());
    std::string out;
    out.reserve(text.size());
    std::size_t at = 0;
    for (std::size_t i = 0; i < bytes.size();) {
        auto [begin, end] = bytes[i++];
        while (i < bytes.size() && bytes[i].first <= end) end = std::max(end, bytes[i++].second);
        out += text.substr(at, begin - at);
        out += "REDACTED";
        at = end;
    }
    out += text.substr(at);
    return out;
}

/// `text` with every credential `redact_text` documents replaced; `whole_url`: `text` is one
/// URL, whose user part at its start is a URL's even without a scheme.
std::string redact_credentials(std::string_view text, bool whole_url) {
    const std::vector<text_unit> units = read_units(text);
    std::vector<redact_span> spans;
    find_parameter_values(units, spans);
    find_header_values(units, spans);
    find_user_parts(units, whole_url, spans);
    if (spans.empty()) return std::string(text);
    return replace_spans(text, units, spans);
}

}  // namespace

std::string redact_url(std::string_view url) {
    if (!may_hold_credentials(url)) return std::string(url);
    return redact_credentials(url, true);
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
    return escape_controls(redact_credentials(text, false));
}

}  // namespace ferry::detail
