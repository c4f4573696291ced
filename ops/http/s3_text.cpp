// SPDX-License-Identifier: Apache-2.0
/// \file
/// S3's bucket naming rules, URI encoding for SigV4, and the cache's unsigned URLs (see
/// s3_text.hpp).

#include "s3_text.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "ferry/detail/url_parts.hpp"

namespace ferry::ops::detail {

using ferry::detail::credential_parameter;
using ferry::detail::query_item;
using ferry::detail::rewrite_query;

namespace {

/// `path`'s `.` and `..` segments as `%2E` and `%2E%2E`. In a key they are the key's own bytes,
/// but URL parsers (curl's included) remove them as dot segments: `a/./b` would read `a/b`, and
/// `../other-bucket/x` another bucket's object with the user's credentials. Encoded, they reach
/// the store as they are, and curl signs the path it sends.
void encode_dot_segments(std::string& path) {
    std::string out;
    std::size_t start = 0;
    for (;;) {
        const auto end = std::min(path.find('/', start), path.size());
        const std::string_view segment = std::string_view(path).substr(start, end - start);
        if (segment == ".") {
            out += "%2E";
        } else if (segment == "..") {
            out += "%2E%2E";
        } else {
            out += segment;
        }
        if (end == path.size()) break;
        out += '/';
        start = end + 1;
    }
    path = std::move(out);
}

bool bucket_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

bool bucket_edge_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/// `c` as a rule names it: `'c'` when printable ASCII, else `byte 0xHH`.
std::string bucket_char_named(unsigned char c) {
    if (c > 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    char out[16];
    std::snprintf(out, sizeof out, "byte 0x%02X", static_cast<unsigned>(c));
    return out;
}

/// Four labels of digits, as an IPv4 address is written (`192.168.5.4`, `10.0.0.01`).
bool ip_formatted(std::string_view name) {
    int labels = 0;
    std::size_t start = 0;
    for (;;) {
        const auto end = std::min(name.find('.', start), name.size());
        const std::string_view label = name.substr(start, end - start);
        if (label.empty() ||
            !std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            return false;
        }
        ++labels;
        if (end == name.size()) return labels == 4;
        start = end + 1;
    }
}

}  // namespace

std::string s3_bucket_name_error(std::string_view bucket) {
    for (const char ch : bucket) {
        const auto c = static_cast<unsigned char>(ch);
        if (!bucket_char(c)) {
            return "it holds " + bucket_char_named(c) +
                   ", which is not a lower-case letter, a digit, '.' or '-'";
        }
    }
    if (!bucket.empty() && !bucket_edge_char(bucket.front())) {
        return std::string("it begins with '") + bucket.front() + "'";
    }
    if (!bucket.empty() && !bucket_edge_char(bucket.back())) {
        return std::string("it ends with '") + bucket.back() + "'";
    }
    if (bucket.find("..") != std::string_view::npos) return "it holds '..'";
    if (ip_formatted(bucket)) return "it is formatted as an IP address";
    if (bucket.size() < 3 || bucket.size() > 63) {
        return "it is " + std::to_string(bucket.size()) +
               (bucket.size() == 1 ? " character" : " characters") + " long, not 3 to 63";
    }
    return {};
}

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
    if (!encode_slash) encode_dot_segments(out);
    return out;
}

std::string unsigned_url(std::string_view url) {
    // user:password@ in the authority is a credential too.
    std::string_view rest = url;
    std::string head;
    if (const auto user = ferry::detail::user_part(url)) {
        head = std::string(url.substr(0, user->offset));
        rest = url.substr(user->offset + user->size + 1);
    }
    std::string out =
        head + rewrite_query(rest.substr(0, rest.find('#')), [](const std::string& n) {
            // What AWS's and Google Cloud Storage's presigning add besides the credential.
            const bool presigning = credential_parameter(n) || n == "x-amz-date" ||
                                    n == "x-amz-expires" || n == "expires" ||
                                    n == "x-amz-algorithm" || n == "x-amz-signedheaders" ||
                                    n == "x-goog-date" || n == "x-goog-expires" ||
                                    n == "x-goog-algorithm" || n == "x-goog-signedheaders";
            return presigning ? query_item::drop : query_item::keep;
        });
    if (out.ends_with('?')) out.pop_back();
    return out;
}

}  // namespace ferry::ops::detail
