// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for S3's XML as ferry reads it (ops/http/s3_xml.hpp, expat): any bytes, as
/// a ListObjectsV2 answer, must give a page or a `ferry::io_error` whose message is bounded and
/// holds no control character (what came back is shown escaped and cut short); read as an error
/// document they give a code or nothing. A page agrees with `read_xml`'s view of the same bytes.
/// Any other exception, a crash, a leak, an out-of-bounds access or an allocation past
/// libFuzzer's limit counts as a failure. expat itself is not instrumented; ferry's handlers are.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "../../ops/http/s3_xml.hpp"
#include "ferry/error.hpp"

namespace {

bool has_control(std::string_view s) {
    for (const char c : s) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
    }
    return false;
}

}  // namespace

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
    return 0;
}
