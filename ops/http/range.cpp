// SPDX-License-Identifier: Apache-2.0
/// \file
/// `read_url`'s byte ranges (see range.hpp).

#include "range.hpp"

#include "ferry/detail/redact.hpp"
#include "request.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <ctime>
#include <limits>
#include <utility>

namespace ferry::ops::detail {

namespace {

bool parse_number(std::string_view& s, std::uint64_t& out) {
    const auto* end = s.data() + s.size();
    const auto [p, ec] = std::from_chars(s.data(), end, out);
    if (ec != std::errc{} || p == s.data()) return false;
    s.remove_prefix(static_cast<std::size_t>(p - s.data()));
    return true;
}

std::string describe(const byte_range& r) {
    return "range " + std::to_string(r.offset) + "-" +
           (r.length == 0 ? std::string() : std::to_string(r.offset + r.length - 1));
}

}  // namespace

std::string range_request(const byte_range& r, const std::string& where) {
    constexpr auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (r.offset > limit || r.length > limit - r.offset) {
        throw invalid_argument(where + "byte range offset " + std::to_string(r.offset) +
                               " + length " + std::to_string(r.length) + " is past 2^63");
    }
    return std::to_string(r.offset) + "-" +
           (r.length == 0 ? std::string() : std::to_string(r.offset + r.length - 1));
}

std::optional<content_range> parse_content_range(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() &&
           (v.back() == ' ' || v.back() == '\t' || v.back() == '\r' || v.back() == '\n')) {
        v.remove_suffix(1);
    }
    constexpr std::string_view unit = "bytes ";
    if (!v.starts_with(unit)) return std::nullopt;
    v.remove_prefix(unit.size());
    content_range cr;
    if (!parse_number(v, cr.first) || v.empty() || v.front() != '-') return std::nullopt;
    v.remove_prefix(1);
    if (!parse_number(v, cr.last) || v.empty() || v.front() != '/' || cr.last < cr.first) {
        return std::nullopt;
    }
    v.remove_prefix(1);
    if (v == "*") return cr;
    std::uint64_t total = 0;
    if (!parse_number(v, total) || !v.empty() || total <= cr.last ||
        total > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
    }
    cr.total = static_cast<std::int64_t>(total);
    return cr;
}

bytes take_range(ranged_body in, const byte_range& r, const std::string& url,
                 const std::string& where) {
    const std::string what = where + describe(r) + ": ";
    const auto past_end = [&](std::uint64_t size) {
        // The resource ends before the range does: asking again gives the same answer.
        return http_error(url, in.status,
                          what + "the resource has " + std::to_string(size) + " bytes", false);
    };
    if (in.status == 206) {
        const auto cr = parse_content_range(in.content_range);
        if (!cr) {
            throw http_error(url, in.status,
                             what + "206 Partial Content without a valid Content-Range ('" +
                                 ferry::detail::escape_controls(in.content_range) + "')",
                             false);
        }
        if (cr->first != r.offset) {
            throw http_error(url, in.status,
                             what + "the server sent bytes " + std::to_string(cr->first) + "-" +
                                 std::to_string(cr->last),
                             false);
        }
        const std::uint64_t sent = cr->last - cr->first + 1;
        if (in.got != sent) {
            throw http_error(url, in.status,
                             what + "truncated body: got " + std::to_string(in.got) + " of " +
                                 std::to_string(sent) + " bytes");
        }
        if (r.length != 0 && sent > r.length) {
            // More than asked for: the server did not do what was asked, and will not next time.
            throw http_error(url, in.status,
                             what + "the server sent bytes " + std::to_string(cr->first) + "-" +
                                 std::to_string(cr->last) + " (" + std::to_string(sent) +
                                 " bytes), more than the " + std::to_string(r.length) +
                                 " asked for",
                             false);
        }
        if (r.length != 0 && sent < r.length) {
            if (r.at_most && cr->total >= 0 &&
                cr->last + 1 == static_cast<std::uint64_t>(cr->total)) {
                bytes out = std::move(in.body);
                out.truncate(in.got);
                return out;
            }
            if (cr->total >= 0 && cr->last + 1 == static_cast<std::uint64_t>(cr->total)) {
                throw past_end(static_cast<std::uint64_t>(cr->total));
            }
            throw http_error(url, in.status,
                             what + "the server sent " + std::to_string(sent) + " bytes", false);
        }
        bytes out = std::move(in.body);
        out.truncate(in.got);
        return out;
    }
    if (in.status == 0) {
        // file://: curl read only the range; fewer bytes means the file ended first.
        if (r.length != 0 && in.got < r.length && !r.at_most) throw past_end(r.offset + in.got);
        bytes out = std::move(in.body);
        out.truncate(in.got);
        return out;
    }
    // A 200 (or another 2xx): the server ignored the range and sent the whole resource.
    const std::size_t n = range_within(r, in.got, in.status, url, where);
    bytes out(n);
    if (n != 0) std::memcpy(out.data(), in.body.data() + r.offset, n);
    return out;
}

std::uint64_t range_within(const byte_range& r, std::uint64_t size, int status,
                           const std::string& url, const std::string& where) {
    if (r.at_most && size <= r.offset) return 0;
    if (size < r.offset || (r.length != 0 && size - r.offset < r.length && !r.at_most)) {
        // The resource ends before the range does: asking again gives the same answer.
        throw http_error(
            url, status,
            where + describe(r) + ": the resource has " + std::to_string(size) + " bytes", false);
    }
    return r.length == 0 || size - r.offset < r.length ? size - r.offset : r.length;
}

std::chrono::milliseconds parse_retry_after(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() &&
           (v.back() == ' ' || v.back() == '\t' || v.back() == '\r' || v.back() == '\n')) {
        v.remove_suffix(1);
    }
    if (v.empty()) return std::chrono::milliseconds(0);
    constexpr std::int64_t hour_s = 3600;
    std::int64_t seconds = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
    if (ec == std::errc{} && p == v.data() + v.size()) {
        return std::chrono::seconds(std::clamp<std::int64_t>(seconds, 0, hour_s));
    }
    // An HTTP-date: "Sun, 06 Nov 1994 08:49:37 GMT".
    std::tm tm{};
    const std::string text(v);
    if (::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr) {
        return std::chrono::milliseconds(0);
    }
    const auto at = std::chrono::system_clock::from_time_t(::timegm(&tm));
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        at - std::chrono::system_clock::now());
    return std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(hour_s * 1000));
}

}  // namespace ferry::ops::detail
