// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::sources::list_objects`: S3's ListObjectsV2, page after page, as `s3://` URLs.

#include <string>
#include <vector>

#include "ferry/http.hpp"
#include "request.hpp"
#include "s3_text.hpp"

namespace ferry::sources {

std::vector<std::string> list_objects(std::string_view url, const list_options& options) {
    if (!url.starts_with("s3://")) {
        throw invalid_argument("list_objects: '" + std::string(url) +
                               "': only s3://bucket/prefix URLs can be listed");
    }
    if (options.page_size == 0 || options.page_size > 1000) {
        throw invalid_argument("list_objects: page_size must be 1 to 1000 (S3's limit)");
    }
    const auto loc = ops::detail::s3_locate(url, false);
    std::vector<std::string> out;
    std::string token;
    for (int page = 0;; ++page) {
        // The query's parameters in SigV4's canonical order (sorted by name), values encoded
        // as it wants them, so the signature is right whatever the signer sorts.
        std::string query;
        if (!token.empty()) {
            query += "continuation-token=" + ops::detail::uri_encode(token, true) + "&";
        }
        query += "list-type=2&max-keys=" + std::to_string(options.page_size);
        query += "&prefix=" + ops::detail::uri_encode(loc.key, true);
        const std::string display = std::string(url) + " (page " + std::to_string(page + 1) + ")";
        const auto body = ops::detail::fetch(
            ops::detail::s3_request(loc, loc.base + "/?" + query, display), options.http);
        const std::string_view xml(reinterpret_cast<const char*>(body.data()), body.size());
        for (auto& key : ops::detail::xml_texts(xml, "Contents", "Key")) {
            // Zero-byte "folder" markers are not objects a loader reads.
            if (!key.empty() && key.back() == '/') continue;
            out.push_back("s3://" + loc.bucket + "/" + key);
        }
        if (ops::detail::xml_text(xml, "IsTruncated") != "true") break;
        token = ops::detail::xml_text(xml, "NextContinuationToken");
        if (token.empty()) {
            throw io_error("list_objects: '" + std::string(url) +
                           "': the store said the listing goes on but gave no continuation token");
        }
    }
    return out;
}

}  // namespace ferry::sources
