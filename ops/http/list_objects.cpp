// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::sources::list_objects`: S3's ListObjectsV2, page after page, as `s3://` URLs, from a
/// store that is not trusted further than it must be (see list_objects in ferry/http.hpp), and
/// the page-by-page walk it runs (list_pages.hpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ferry/http.hpp"
#include "list_pages.hpp"
#include "request.hpp"
#include "s3_text.hpp"
#include "s3_xml.hpp"

namespace ferry::ops::detail {

namespace {

/// What a listing has taken so far, against its bounds.
class listing_tally {
  public:
    listing_tally(const sources::list_options& options, std::string_view shown)
        : options_(options), shown_(shown) {}

    /// The message's start for page `page`.
    [[nodiscard]] std::string where(std::uint64_t page) const {
        return "list_objects: '" + std::string(shown_) + "' (page " + std::to_string(page) + ")";
    }

    /// A page listed `n` keys.
    void count_keys(std::size_t n, std::uint64_t page) {
        keys_ += n;
        if (keys_ > options_.max_keys) {
            throw io_error(
                where(page) + ": the store listed more than " + std::to_string(options_.max_keys) +
                    " keys (list_options::max_keys = " + std::to_string(options_.max_keys) +
                    "; raise it for a larger listing)",
                false);
        }
    }

    /// The listing now holds `n` bytes more (a URL, a token).
    void count_bytes(std::size_t n, std::uint64_t page) {
        bytes_ += n;
        if (bytes_ > options_.max_bytes) {
            throw io_error(
                where(page) + ": the listing's URLs and continuation tokens pass " +
                    std::to_string(options_.max_bytes) + " bytes (list_options::max_bytes = " +
                    std::to_string(options_.max_bytes) + "; raise it for a larger listing)",
                false);
        }
    }

    /// Page `page` said the listing goes on: is there room for a page more?
    void next_page(std::uint64_t page) const {
        if (page >= options_.max_pages) {
            throw io_error(
                where(page) + ": the listing goes on past " + std::to_string(options_.max_pages) +
                    " pages (list_options::max_pages = " + std::to_string(options_.max_pages) +
                    "; raise it for a larger listing: a store that gives a fresh "
                    "continuation token with every page never ends)",
                false);
        }
    }

  private:
    const sources::list_options& options_;
    std::string_view shown_;
    std::uint64_t keys_ = 0;
    std::uint64_t bytes_ = 0;
};

}  // namespace

std::vector<std::string> list_pages(const s3_location& loc, std::string_view shown,
                                    const sources::list_options& options,
                                    const page_fetcher& fetch_page) {
    listing_tally tally(options, shown);
    const std::string url_start = "s3://" + loc.bucket + "/";
    std::vector<std::string> out;
    std::string token;
    // Every continuation token given so far, and the page that gave it.
    std::unordered_map<std::string, std::uint64_t> tokens;
    for (std::uint64_t page = 1;; ++page) {
        // The query's parameters in SigV4's canonical order (sorted by name), values encoded
        // as it wants them, so the signature is right whatever the signer sorts.
        std::string query;
        if (!token.empty()) query += "continuation-token=" + uri_encode(token, true) + "&";
        query += "list-type=2&max-keys=" + std::to_string(options.page_size);
        query += "&prefix=" + uri_encode(loc.key, true);
        const std::string where = tally.where(page);
        const bytes body = fetch_page(query, page);
        auto listed = read_listing_page(
            std::string_view(reinterpret_cast<const char*>(body.data()), body.size()), where);
        tally.count_keys(listed.keys.size(), page);
        for (auto& key : listed.keys) {
            // S3 lists only keys that start with the prefix: one that does not is a store
            // (or something posing as one) that cannot be trusted with the rest.
            if (!key.starts_with(loc.key)) {
                throw io_error(where + ": the store listed the key '" + shown_text(key, 1024) +
                                   "', which is not under the prefix '" +
                                   shown_text(loc.key, 1024) + "'",
                               false);
            }
            // Zero-byte "folder" markers are not objects a loader reads.
            if (!key.empty() && key.back() == '/') continue;
            tally.count_bytes(url_start.size() + key.size(), page);
            out.push_back(url_start + key);
        }
        if (!listed.truncated) break;
        if (listed.next_token.empty()) {
            throw io_error(
                where + ": the store said the listing goes on but gave no continuation token",
                false);
        }
        if (listed.next_token.size() > max_continuation_token_bytes) {
            throw io_error(where + ": the store gave a continuation token of " +
                               std::to_string(listed.next_token.size()) + " bytes, more than the " +
                               std::to_string(max_continuation_token_bytes) +
                               " a listing takes: '" + shown_text(listed.next_token, 160) + "'",
                           false);
        }
        // A token given before would list the same pages again, forever.
        if (const auto [it, fresh] = tokens.emplace(listed.next_token, page); !fresh) {
            throw io_error(where + ": the store gave the continuation token '" +
                               shown_text(listed.next_token, 160) + "' that page " +
                               std::to_string(it->second) +
                               " gave: listing on would repeat the same pages forever",
                           false);
        }
        tally.count_bytes(listed.next_token.size(), page);
        tally.next_page(page);
        token = std::move(listed.next_token);
    }
    return out;
}

}  // namespace ferry::ops::detail

namespace ferry::sources {

std::vector<std::string> list_objects(std::string_view url, const list_options& options) {
    const std::string shown = ops::detail::shown_text(ops::detail::redact_url(url), 1024);
    if (!url.starts_with("s3://")) {
        throw invalid_argument("list_objects: '" + shown +
                               "': only s3://bucket/prefix URLs can be listed");
    }
    if (options.page_size == 0 || options.page_size > 1000) {
        throw invalid_argument("list_objects: page_size must be 1 to 1000 (S3's limit)");
    }
    for (const auto& [name, value] :
         {std::pair{"max_keys", options.max_keys}, std::pair{"max_pages", options.max_pages},
          std::pair{"max_bytes", options.max_bytes}}) {
        if (value == 0) {
            throw invalid_argument(std::string("list_objects: list_options::") + name +
                                   " must be at least 1 (the most a listing may take)");
        }
    }
    const auto loc = ops::detail::s3_locate(url, false, "list_objects");
    // A page is read whole before it is parsed: no more of it than read_xml takes.
    http_options http = options.http;
    if (http.max_bytes == 0 || http.max_bytes > ops::detail::xml_max_bytes) {
        http.max_bytes = ops::detail::xml_max_bytes;
    }
    return ops::detail::list_pages(
        loc, shown, options, [&](const std::string& query, std::uint64_t page) {
            // Named as the listing's messages name it: redacted, escaped, cut short.
            return ops::detail::fetch(
                ops::detail::s3_request(loc, loc.base + "/?" + query,
                                        shown + " (page " + std::to_string(page) + ")"),
                http);
        });
}

}  // namespace ferry::sources
