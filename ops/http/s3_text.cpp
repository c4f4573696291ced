// SPDX-License-Identifier: Apache-2.0
/// \file
/// URI encoding for SigV4 and the little XML reading S3's answers need (see s3_text.hpp).

#include "s3_text.hpp"

#include <cctype>
#include <charconv>
#include <cstdint>

namespace ferry::ops::detail {

using ferry::detail::credential_parameter;
using ferry::detail::query_item;
using ferry::detail::rewrite_query;

std::string uri_encode(std::string_view s, bool encode_slash) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
                                c == '~';
        if (unreserved || (c == '/' && !encode_slash)) {
            out += ch;
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 0x0F];
        }
    }
    return out;
}

std::string unsigned_url(std::string_view url) {
    // user:password@ in the authority is a credential too.
    std::string_view rest = url;
    std::string head;
    if (const auto scheme = url.find("://"); scheme != std::string_view::npos) {
        const auto authority_end = url.find_first_of("/?#", scheme + 3);
        const auto at = url.substr(0, authority_end).rfind('@');
        if (at != std::string_view::npos && at > scheme) {
            head = std::string(url.substr(0, scheme + 3));
            rest = url.substr(at + 1);
        }
    }
    std::string out =
        head + rewrite_query(rest.substr(0, rest.find('#')), [](const std::string& n) {
            const bool presigning = credential_parameter(n) || n == "x-amz-date" ||
                                    n == "x-amz-expires" || n == "expires" ||
                                    n == "x-amz-algorithm" || n == "x-amz-signedheaders";
            return presigning ? query_item::drop : query_item::keep;
        });
    if (out.ends_with('?')) out.pop_back();
    return out;
}

namespace {

/// `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` and numeric references; anything else stays as is.
std::string decode_entities(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '&') {
            out += s[i];
            continue;
        }
        const auto semi = s.find(';', i);
        if (semi == std::string_view::npos) {
            out += s[i];
            continue;
        }
        const std::string_view name = s.substr(i + 1, semi - i - 1);
        std::uint32_t code = 0;
        bool known = true;
        if (name == "amp") {
            code = '&';
        } else if (name == "lt") {
            code = '<';
        } else if (name == "gt") {
            code = '>';
        } else if (name == "quot") {
            code = '"';
        } else if (name == "apos") {
            code = '\'';
        } else if (name.size() > 1 && name[0] == '#') {
            const bool is_hex = name[1] == 'x' || name[1] == 'X';
            const auto digits = name.substr(is_hex ? 2 : 1);
            const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), code,
                                                 is_hex ? 16 : 10);
            known = ec == std::errc{} && p == digits.data() + digits.size() && code < 0x110000;
        } else {
            known = false;
        }
        if (!known) {
            out += s[i];
            continue;
        }
        // UTF-8 of the code point.
        if (code < 0x80) {
            out += static_cast<char>(code);
        } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
        } else if (code < 0x10000) {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (code >> 18));
            out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
        }
        i = semi;
    }
    return out;
}

/// The inside of the next `<tag>...</tag>` at or after `from` (moved past it), or npos.
std::string_view next_element(std::string_view xml, std::string_view tag, std::size_t& from) {
    const std::string open = "<" + std::string(tag) + ">";
    const std::string close = "</" + std::string(tag) + ">";
    const auto start = xml.find(open, from);
    if (start == std::string_view::npos) {
        from = std::string_view::npos;
        return {};
    }
    const auto inner = start + open.size();
    const auto end = xml.find(close, inner);
    if (end == std::string_view::npos) {
        from = std::string_view::npos;
        return {};
    }
    from = end + close.size();
    return xml.substr(inner, end - inner);
}

}  // namespace

std::string xml_text(std::string_view xml, std::string_view tag) {
    std::size_t from = 0;
    const auto inner = next_element(xml, tag, from);
    return from == std::string_view::npos ? std::string() : decode_entities(inner);
}

std::vector<std::string> xml_texts(std::string_view xml, std::string_view within,
                                   std::string_view tag) {
    std::vector<std::string> out;
    std::size_t from = 0;
    for (;;) {
        const auto block = next_element(xml, within, from);
        if (from == std::string_view::npos) break;
        std::size_t in = 0;
        const auto inner = next_element(block, tag, in);
        if (in != std::string_view::npos) out.push_back(decode_entities(inner));
    }
    return out;
}

}  // namespace ferry::ops::detail
