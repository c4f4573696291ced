// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::sources::list_objects`: S3's ListObjectsV2, page after page, as `s3://` URLs, from a
/// store that is not trusted further than it must be (see list_objects in ferry/http.hpp).

#include <string>
#include <unordered_map>
#include <vector>

#include "ferry/http.hpp"
#include "request.hpp"
#include "s3_text.hpp"
#include "s3_xml.hpp"

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
    const auto loc = ops::detail::s3_locate(url, false, "list_objects");
    // A page is read whole before it is parsed: no more of it than read_xml takes.
    http_options http = options.http;
    if (http.max_bytes == 0 || http.max_bytes > ops::detail::xml_max_bytes) {
        http.max_bytes = ops::detail::xml_max_bytes;
    }
    std::vector<std::string> out;
    std::string token;
    // Every continuation token given so far, and the page that gave it.
    std::unordered_map<std::string, int> tokens;
    for (int page = 1;; ++page) {
        // The query's parameters in SigV4's canonical order (sorted by name), values encoded
        // as it wants them, so the signature is right whatever the signer sorts.
        std::string query;
        if (!token.empty()) {
            query += "continuation-token=" + ops::detail::uri_encode(token, true) + "&";
        }
        query += "list-type=2&max-keys=" + std::to_string(options.page_size);
        query += "&prefix=" + ops::detail::uri_encode(loc.key, true);
        const std::string where =
            "list_objects: '" + shown + "' (page " + std::to_string(page) + ")";
        const auto body = ops::detail::fetch(
            ops::detail::s3_request(loc, loc.base + "/?" + query,
                                    std::string(url) + " (page " + std::to_string(page) + ")"),
            http);
        auto listed = ops::detail::read_listing_page(
            std::string_view(reinterpret_cast<const char*>(body.data()), body.size()), where);
        for (auto& key : listed.keys) {
            // S3 lists only keys that start with the prefix: one that does not is a store
            // (or something posing as one) that cannot be trusted with the rest.
            if (!key.starts_with(loc.key)) {
                throw io_error(where + ": the store listed the key '" +
                                   ops::detail::shown_text(key, 1024) +
                                   "', which is not under the prefix '" +
                                   ops::detail::shown_text(loc.key, 1024) + "'",
                               false);
            }
            // Zero-byte "folder" markers are not objects a loader reads.
            if (!key.empty() && key.back() == '/') continue;
            out.push_back("s3://" + loc.bucket + "/" + key);
        }
        if (!listed.truncated) break;
        if (listed.next_token.empty()) {
            throw io_error(
                where + ": the store said the listing goes on but gave no continuation token",
                false);
        }
        // A token given before would list the same pages again, forever.
        if (const auto [it, fresh] = tokens.emplace(listed.next_token, page); !fresh) {
            throw io_error(where + ": the store gave the continuation token '" +
                               ops::detail::shown_text(listed.next_token, 160) + "' that page " +
                               std::to_string(it->second) +
                               " gave: listing on would repeat the same pages forever",
                           false);
        }
        token = std::move(listed.next_token);
    }
    return out;
}

}  // namespace ferry::sources
