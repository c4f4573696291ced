// SPDX-License-Identifier: Apache-2.0
/// \file
/// S3's XML answers (ListObjectsV2 pages, error documents) read with expat, within limits set
/// here: a size cap, a depth cap, no DOCTYPE (so no entity but XML's five and character
/// references).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::ops::detail {

/// The most of a document `read_xml` reads: a ListObjectsV2 page of 1000 keys of 1024 bytes,
/// each escaped, with the other fields of its `<Contents>`, is under 8 MiB.
inline constexpr std::size_t xml_max_bytes = std::size_t{16} << 20;
/// The deepest nesting `read_xml` follows: S3's documents nest four deep.
inline constexpr std::size_t xml_max_depth = 32;

/// An element that holds text (no child element), by its path of local names from the root:
/// `ListBucketResult/Contents/Key`.
struct xml_element {
    std::string path;
    std::string text;  ///< character data, entities and CDATA resolved, as UTF-8
};

/// What `read_xml` made of a document.
struct xml_document {
    /// Why it is not a document `read_xml` accepts ("not well-formed XML: ... at line 1, column
    /// 3", "a DOCTYPE", "nested deeper than 32 elements", "larger than 16777216 bytes"); empty
    /// when it is one. Then `root` and `elements` are empty.
    std::string error;
    std::string root;                   ///< the root element's local name
    std::vector<xml_element> elements;  ///< the elements that hold text, in document order

    /// The text of the first element at `path`; empty when there is none.
    [[nodiscard]] std::string text(std::string_view path) const;
    /// The texts of every element at `path`, in order.
    [[nodiscard]] std::vector<std::string> texts(std::string_view path) const;
};

/// Reads `xml` with expat: XML 1.0 in UTF-8 (or the encoding it declares), namespaces dropped
/// from names (`<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` is
/// `ListBucketResult`). Refuses a document larger than `xml_max_bytes`, one nested deeper than
/// `xml_max_depth`, and one with a DOCTYPE (the only place entities can be declared, so only
/// `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` and character references are ever expanded); the
/// refusal is `error`, not an exception.
[[nodiscard]] xml_document read_xml(std::string_view xml);

/// The text of the first element named `tag` (any depth) in `xml`; empty when absent or when
/// `xml` is not a document `read_xml` accepts (an error body may be anything).
[[nodiscard]] std::string xml_text(std::string_view xml, std::string_view tag);

/// One ListObjectsV2 answer.
struct listing_page {
    std::vector<std::string> keys;  ///< every `Contents/Key`, in order
    bool truncated = false;         ///< `IsTruncated` is `true`: more pages follow
    std::string next_token;         ///< `NextContinuationToken`
};

/// Reads a ListObjectsV2 answer. Throws `ferry::io_error` (not transient), its message
/// `where` + ": " + what came back, when `xml` is not a `ListBucketResult` document: a captive
/// portal's HTML page, another S3 document, XML past `read_xml`'s limits. What came back is
/// shown escaped (`\n`, `\x1b`) and cut to its first 160 bytes.
[[nodiscard]] listing_page read_listing_page(std::string_view xml, std::string_view where);

/// `text` as a message may show it: at most `max_bytes` of it (cut at a UTF-8 character's start,
/// `...` added), through `ferry::detail::redact_text` (URL credentials REDACTED, control
/// characters escaped: `\n`, `\x1b`).
[[nodiscard]] std::string shown_text(std::string_view text, std::size_t max_bytes);

}  // namespace ferry::ops::detail
