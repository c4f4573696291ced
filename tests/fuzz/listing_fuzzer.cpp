// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for S3 listings as ferry reads them: S3's XML (ops/http/s3_xml.hpp, expat),
/// bucket names (ops/http/s3_text.hpp) and the page-by-page walk of a listing
/// (ops/http/list_pages.hpp). Any bytes, as a ListObjectsV2 answer, must give a page or a
/// `ferry::io_error` whose message is bounded and holds no control character (what came back is
/// shown escaped and cut short); read as an error document they give a code or nothing. A page
/// agrees with `read_xml`'s view of the same bytes. The input's first line, after `s3://`, is a
/// URL whose bucket `s3_locate` accepts exactly when an independent check of S3's naming rules
/// does, and an accepted one stays in its host; the rest, split at form feeds, is a store's
/// pages, listed within small bounds: the listing keeps them or ends in an `io_error`. Any other
/// exception, a crash, a leak, an out-of-bounds access or an allocation past libFuzzer's limit
/// counts as a failure. expat itself is not instrumented; ferry's handlers are.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../../ops/http/list_pages.hpp"
#include "../../ops/http/s3_text.hpp"
#include "../../ops/http/s3_xml.hpp"
#include "ferry/error.hpp"

namespace {

bool has_control(std::string_view s) {
    for (const char c : s) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
    }
    return false;
}

/// S3's rules for a general purpose bucket's name, written apart from ferry's check.
bool s3_allows(std::string_view name) {
    if (name.size() < 3 || name.size() > 63) return false;
    if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") !=
        std::string_view::npos) {
        return false;
    }
    const std::string_view ends = "abcdefghijklmnopqrstuvwxyz0123456789";
    if (ends.find(name.front()) == std::string_view::npos) return false;
    if (ends.find(name.back()) == std::string_view::npos) return false;
    if (name.find("..") != std::string_view::npos) return false;
    // An IP address's form: digits and three dots, none of them at an end or side by side
    // (both refused above already).
    const bool ip = name.find_first_not_of("0123456789.") == std::string_view::npos &&
                    std::count(name.begin(), name.end(), '.') == 3;
    return !ip;
}

/// The bounds the fuzzed listings keep: small, so that inputs reach them.
ferry::sources::list_options fuzz_bounds() {
    ferry::sources::list_options o;
    o.page_size = 1000;
    o.max_keys = 64;
    o.max_pages = 8;
    o.max_bytes = 4096;
    return o;
}

/// The first line as an `s3://` URL: `s3_locate` accepts it exactly when S3's rules allow its
/// bucket, and an accepted bucket cannot pick the host. Returns the location, or nothing.
std::optional<ferry::ops::detail::s3_location> locate(std::string_view line) {
    using namespace ferry::ops::detail;
    const std::string url = "s3://" + std::string(line);
    const std::string_view bucket = line.substr(0, line.find('/'));
    try {
        s3_location loc = s3_locate(url, false, "listing");
        if (!s3_allows(bucket) || loc.bucket != bucket) std::abort();
        // No endpoint (LLVMFuzzerInitialize): an AWS host, whatever the bucket.
        const std::string_view base = loc.base;
        if (!base.starts_with("https://")) std::abort();
        const std::string_view host = base.substr(8, base.find('/', 8) - 8);
        if (!host.ends_with(".s3.us-east-1.amazonaws.com") &&
            host != "s3.us-east-1.amazonaws.com") {
            std::abort();
        }
        if (host.find_first_of(":@#?%\\") != std::string_view::npos) std::abort();
        return loc;
    } catch (const ferry::invalid_argument& e) {
        const std::string_view what = e.what();
        if (s3_allows(bucket) || has_control(what) || what.size() > 4 * url.size() + 1024) {
            std::abort();
        }
        return std::nullopt;
    }
}

/// The rest of the input, split at form feeds, as a store's pages, listed within
/// `fuzz_bounds`: the listing keeps its bounds and its prefix, or ends in an io_error.
void list(const ferry::ops::detail::s3_location& loc, std::string_view rest) {
    using namespace ferry::ops::detail;
    std::vector<std::string_view> pages;
    for (std::size_t start = 0; start <= rest.size();) {
        const auto end = std::min(rest.find('\f', start), rest.size());
        pages.push_back(rest.substr(start, end - start));
        start = end + 1;
    }
    const auto bounds = fuzz_bounds();
    std::uint64_t fetched = 0;
    const page_fetcher fetch_page = [&](const std::string& /*query*/, std::uint64_t page) {
        if (page != ++fetched || page > bounds.max_pages) std::abort();
        // Past the pages given: the end of a listing.
        const std::string_view body = page <= pages.size()
                                          ? pages[page - 1]
                                          : "<ListBucketResult><IsTruncated>false</IsTruncated>"
                                            "</ListBucketResult>";
        return ferry::bytes::from_string(body);
    };
    try {
        const std::string start = "s3://" + loc.bucket + "/" + loc.key;
        // As list_objects shows its URL.
        const auto urls = list_pages(loc, shown_text(redact_url(start), 1024), bounds, fetch_page);
        std::uint64_t bytes = 0;
        if (urls.size() > bounds.max_keys) std::abort();
        for (const auto& u : urls) {
            if (!u.starts_with(start) || u.ends_with('/')) std::abort();
            bytes += u.size();
        }
        if (bytes > bounds.max_bytes) std::abort();
    } catch (const ferry::io_error& e) {
        const std::string_view what = e.what();
        // The URL and a key (1024 bytes each) and a token (160), each escaped at most 4x.
        if (what.size() > 16384 || has_control(what) || e.transient()) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    // s3_locate reads the store and region from the environment: the fuzzer's are AWS's.
    for (const char* name :
         {"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"}) {
        ::unsetenv(name);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ferry::ops::detail;
    const std::string_view xml(reinterpret_cast<const char*>(data), size);
    const xml_document doc = read_xml(xml);
    try {
        const listing_page page = read_listing_page(xml, "listing");
        // Accepted: exactly what read_xml says is a ListBucketResult, with its keys in order.
        if (!doc.error.empty() || doc.root != "ListBucketResult") std::abort();
        if (page.keys != doc.texts("ListBucketResult/Contents/Key")) std::abort();
        if (page.truncated != (doc.text("ListBucketResult/IsTruncated") == "true")) std::abort();
    } catch (const ferry::io_error& e) {
        const std::string_view what = e.what();
        // The root's name (64 bytes) and the body (160), each escaped at most 4x, and words.
        if (what.size() > 2048 || has_control(what) || e.transient()) std::abort();
        if (doc.error.empty() && doc.root == "ListBucketResult") std::abort();
    }
    (void)xml_text(xml, "Code");

    const auto newline = std::min(xml.find('\n'), xml.size());
    const auto loc = locate(xml.substr(0, newline));
    const std::string_view rest = newline < xml.size() ? xml.substr(newline + 1) : "";
    if (loc) {
        list(*loc, rest);
    } else {
        list(s3_locate("s3://fuzz-bucket/", false, "listing"), rest);
    }
    return 0;
}
