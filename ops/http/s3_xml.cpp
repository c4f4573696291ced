// SPDX-License-Identifier: Apache-2.0
/// \file
/// S3's XML answers read with expat, within explicit limits (see s3_xml.hpp).

#include "s3_xml.hpp"

// Debian's expat_config.h says whether expat was built with XML_DTD, which expat.h needs to
// declare the billion laughs protection; where it is not installed the protection is not set,
// and the DOCTYPE refusal below is what keeps entities out.
#if __has_include(<expat_config.h>)
#include <expat_config.h>
#endif
#include <expat.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ferry/detail/redact.hpp"
#include "ferry/error.hpp"

namespace ferry::ops::detail {

namespace {

/// More elements than any S3 document has (a page of 1000 keys has about 12 000): what a
/// document of small empty elements (`<a/>` is 4 bytes) may make `read_xml` keep.
constexpr std::size_t max_elements = 100'000;

/// The names' separator expat puts between a namespace URI and a local name.
constexpr char ns_separator = '\x01';

/// What the handlers build while expat reads.
struct reader {
    XML_Parser parser = nullptr;
    xml_document doc;
    std::string path;                      ///< the open elements' local names, '/'-separated
    std::vector<std::size_t> path_starts;  ///< where each open element's name starts in `path`
    std::string text;                      ///< the innermost open element's character data
    bool has_child = false;                ///< whether the innermost open element has a child

    void refuse(std::string why) {
        if (doc.error.empty()) doc.error = std::move(why);
        XML_StopParser(parser, XML_FALSE);
    }
};

std::string_view local_name(const XML_Char* name) {
    const std::string_view n(name);
    const auto sep = n.rfind(ns_separator);
    return sep == std::string_view::npos ? n : n.substr(sep + 1);
}

void XMLCALL on_start(void* data, const XML_Char* name, const XML_Char** /*attributes*/) {
    auto& r = *static_cast<reader*>(data);
    // expat may still call a handler or two after a refusal stopped it.
    if (!r.doc.error.empty()) return;
    if (r.path_starts.size() >= xml_max_depth) {
        r.refuse("nested deeper than " + std::to_string(xml_max_depth) + " elements");
        return;
    }
    const auto local = local_name(name);
    if (r.path_starts.empty()) r.doc.root = std::string(local);
    r.path_starts.push_back(r.path.size() + (r.path.empty() ? 0 : 1));
    if (!r.path.empty()) r.path += '/';
    r.path += local;
    r.text.clear();
    r.has_child = false;
}

void XMLCALL on_end(void* data, const XML_Char* /*name*/) {
    auto& r = *static_cast<reader*>(data);
    if (!r.doc.error.empty()) return;
    if (!r.has_child) {
        if (r.doc.elements.size() >= max_elements) {
            r.refuse("more than " + std::to_string(max_elements) + " elements");
            return;
        }
        r.doc.elements.push_back({r.path, std::move(r.text)});
    }
    r.text.clear();
    const std::size_t start = r.path_starts.back();
    r.path_starts.pop_back();
    r.path.resize(start == 0 ? 0 : start - 1);
    // The parent has a child: this one.
    r.has_child = true;
}

void XMLCALL on_text(void* data, const XML_Char* s, int len) {
    static_cast<reader*>(data)->text.append(s, static_cast<std::size_t>(len));
}

void XMLCALL on_doctype(void* data, const XML_Char* /*name*/, const XML_Char* /*sysid*/,
                        const XML_Char* /*pubid*/, int /*has_internal_subset*/) {
    // The DOCTYPE is where entities are declared (a billion laughs, an external file): S3 never
    // sends one.
    static_cast<reader*>(data)->refuse("a DOCTYPE");
}

void XMLCALL on_entity(void* data, const XML_Char* /*name*/, int /*parameter*/,
                       const XML_Char* /*value*/, int /*length*/, const XML_Char* /*base*/,
                       const XML_Char* /*sysid*/, const XML_Char* /*pubid*/,
                       const XML_Char* /*notation*/) {
    static_cast<reader*>(data)->refuse("an entity declaration");
}

struct parser_free {
    void operator()(XML_Parser p) const { XML_ParserFree(p); }
};

}  // namespace

std::string xml_document::text(std::string_view path) const {
    for (const auto& e : elements) {
        if (e.path == path) return e.text;
    }
    return {};
}

std::vector<std::string> xml_document::texts(std::string_view path) const {
    std::vector<std::string> out;
    for (const auto& e : elements) {
        if (e.path == path) out.push_back(e.text);
    }
    return out;
}

xml_document read_xml(std::string_view xml) {
    if (xml.size() > xml_max_bytes) {
        xml_document refused;
        refused.error = "larger than " + std::to_string(xml_max_bytes) + " bytes";
        return refused;
    }
    const std::unique_ptr<std::remove_pointer_t<XML_Parser>, parser_free> parser(
        XML_ParserCreateNS(nullptr, ns_separator));
    if (!parser) throw error(errc::internal, "read_xml: expat could not create a parser");
    reader r;
    r.parser = parser.get();
    XML_SetUserData(parser.get(), &r);
    XML_SetElementHandler(parser.get(), &on_start, &on_end);
    XML_SetCharacterDataHandler(parser.get(), &on_text);
    XML_SetStartDoctypeDeclHandler(parser.get(), &on_doctype);
    XML_SetEntityDeclHandler(parser.get(), &on_entity);
    // Never read an external DTD or parameter entities (expat's default, said here).
    XML_SetParamEntityParsing(parser.get(), XML_PARAM_ENTITY_PARSING_NEVER);
#if defined(XML_DTD) && \
    (XML_MAJOR_VERSION > 2 || (XML_MAJOR_VERSION == 2 && XML_MINOR_VERSION >= 4))
    // A second wall behind the DOCTYPE refusal: no expansion may grow the input more than 2x,
    // checked from the first 64 KiB of output on.
    XML_SetBillionLaughsAttackProtectionMaximumAmplification(parser.get(), 2.0F);
    XML_SetBillionLaughsAttackProtectionActivationThreshold(parser.get(), 64U << 10);
#endif
    const auto status = XML_Parse(parser.get(), xml.data(), static_cast<int>(xml.size()), XML_TRUE);
    if (status != XML_STATUS_OK) {
        if (r.doc.error.empty()) {
            r.doc.error = std::string("not well-formed XML: ") +
                          XML_ErrorString(XML_GetErrorCode(parser.get())) + " at line " +
                          std::to_string(XML_GetCurrentLineNumber(parser.get())) + ", column " +
                          std::to_string(XML_GetCurrentColumnNumber(parser.get()));
        }
        xml_document refused;
        refused.error = std::move(r.doc.error);
        return refused;
    }
    return std::move(r.doc);
}

std::string xml_text(std::string_view xml, std::string_view tag) {
    const xml_document doc = read_xml(xml);
    for (const auto& e : doc.elements) {
        const auto slash = e.path.rfind('/');
        const std::string_view name = slash == std::string::npos
                                          ? std::string_view(e.path)
                                          : std::string_view(e.path).substr(slash + 1);
        if (name == tag) return e.text;
    }
    return {};
}

std::string shown_text(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) return ferry::detail::redact_text(text);
    std::size_t n = max_bytes;
    // Back to the start of a UTF-8 character (past its continuation bytes).
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    return ferry::detail::redact_text(text.substr(0, n)) + "...";
}

listing_page read_listing_page(std::string_view xml, std::string_view where) {
    xml_document doc = read_xml(xml);
    if (!doc.error.empty() || doc.root != "ListBucketResult") {
        const std::string what =
            doc.error.empty() ? "a <" + shown_text(doc.root, 64) + "> document" : doc.error;
        throw io_error(std::string(where) + ": the store's answer is not a ListBucketResult (" +
                           what + ", " + std::to_string(xml.size()) + " bytes): '" +
                           shown_text(xml, 160) + "'",
                       false);
    }
    listing_page page;
    for (auto& e : doc.elements) {
        if (e.path == "ListBucketResult/Contents/Key") {
            page.keys.push_back(std::move(e.text));
        } else if (e.path == "ListBucketResult/IsTruncated") {
            page.truncated = e.text == "true";
        } else if (e.path == "ListBucketResult/NextContinuationToken") {
            page.next_token = std::move(e.text);
        }
    }
    return page;
}

}  // namespace ferry::ops::detail
