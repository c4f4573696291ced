// SPDX-License-Identifier: Apache-2.0
/// \file
/// list_objects against a store that misbehaves, on the in-process server: keys with dot
/// segments, continuation tokens that come back, pages that are not listings (a captive
/// portal), keys outside the prefix, XML read as XML (CDATA, comments, namespaces) within
/// limits (no DOCTYPE or entities, bounded depth and size), a store that never ends a listing
/// against each of list_options' bounds, and a failing page's URL redacted and escaped.
#include <boost/test/unit_test.hpp>
#include <cstddef>
#include <ferry/http.hpp>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "s3_support.hpp"
#include "sigv4_support.hpp"

using ferry_test::as_string;
using ferry_test::check_signature;
using ferry_test::contains;
using ferry_test::expect_throw;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::key_id;
using ferry_test::recording_server;
using ferry_test::scoped_env;
using ferry_test::secret;

namespace list_objects_test {

/// A ListObjectsV2 page as S3 writes it, with `keys` (written as given: escape them yourself).
std::string listing(const std::vector<std::string>& keys, const std::string& next_token = {}) {
    std::string body =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>";
    for (const auto& k : keys) body += "<Contents><Key>" + k + "</Key><Size>1</Size></Contents>";
    body += next_token.empty() ? "<IsTruncated>false</IsTruncated>"
                               : "<IsTruncated>true</IsTruncated><NextContinuationToken>" +
                                     next_token + "</NextContinuationToken>";
    return body + "</ListBucketResult>";
}

/// Whether `s` holds a control character (a byte below 0x20, or 0x7f).
bool has_control(const std::string& s) {
    for (const char c : s) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
    }
    return false;
}

/// What list_objects throws for a server that answers every listing request with `body` (200).
ferry_test::thrown<ferry::io_error> listing_error(const std::string& url, std::string body) {
    recording_server rec(
        [body = std::move(body)](const http_request&) { return http_response{.body = body}; });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")}});
    return expect_throw<ferry::io_error>([&] { (void)ferry::sources::list_objects(url); }, url);
}

/// A store that never ends a listing: every page holds `keys_per_page` keys and a fresh
/// continuation token (`T<request>`, padded with 'x' to `token_bytes` bytes). It ends the listing
/// at page 50, so a listing that does not stop at its bound fails here instead of hanging.
struct endless_store {
    recording_server rec;
    explicit endless_store(std::size_t keys_per_page, std::size_t token_bytes = 0)
        : rec([keys_per_page, token_bytes](const http_request& r) {
              std::vector<std::string> keys;
              for (std::size_t i = 0; i < keys_per_page; ++i) {
                  keys.push_back("k/" + std::to_string(r.index) + "-" + std::to_string(i));
              }
              if (r.index >= 49) return http_response{.body = listing(keys)};
              std::string token = "T" + std::to_string(r.index);
              if (token.size() < token_bytes) token.resize(token_bytes, 'x');
              return http_response{.body = listing(keys, token)};
          }) {}
};

/// What list_objects("s3://bkt/k/", options) throws against `store`.
ferry_test::thrown<ferry::io_error> endless_error(endless_store& store,
                                                  const ferry::sources::list_options& options) {
    const scoped_env env({{"AWS_ENDPOINT_URL", store.rec.server.url("")}});
    return expect_throw<ferry::io_error>(
        [&] { (void)ferry::sources::list_objects("s3://bkt/k/", options); });
}

}  // namespace list_objects_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(list_objects)
using namespace list_objects_test;

// A listed key's `.` and `..` segments are the key's own bytes: reading it asks the store for
// that key in the listed bucket, signed as sent, not for what removing dot segments makes of it
// (`../other-bucket/secret.bin` was another bucket's object, read with the user's keys).
BOOST_AUTO_TEST_CASE(dot_segments_in_listed_keys_stay_in_the_key) {
    recording_server rec([](const http_request& r) {
        if (r.target.starts_with("/bkt/?")) {
            return http_response{
                .body = listing({"../other-bucket/secret.bin", "a/./b//c", "x/..", "./y"})};
        }
        return http_response{.body = "object at " + r.target};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret}});
    const auto urls = ferry::sources::list_objects("s3://bkt/");
    const std::vector<std::string> expected_urls{"s3://bkt/../other-bucket/secret.bin",
                                                 "s3://bkt/a/./b//c", "s3://bkt/x/..",
                                                 "s3://bkt/./y"};
    BOOST_TEST(urls == expected_urls, boost::test_tools::per_element());
    const std::vector<std::string> expected_paths{"/bkt/%2E%2E/other-bucket/secret.bin",
                                                  "/bkt/a/%2E/b//c", "/bkt/x/%2E%2E", "/bkt/%2E/y"};
    for (std::size_t i = 0; i < urls.size() && i < expected_paths.size(); ++i) {
        BOOST_TEST(as_string(ferry::ops::read_url(urls[i])) == "object at " + expected_paths[i]);
        const auto seen = rec.requests();
        BOOST_TEST(check_signature(seen.back(), key_id, secret, "us-east-1") == "ok");
    }
}

// A store that hands out a continuation token it gave before would be listed forever: the
// token's second coming is an io_error (not transient) naming the page, after as many requests
// as pages. The server ends the listing after 20 pages, so a loop fails here instead of hanging.
BOOST_AUTO_TEST_CASE(a_repeated_continuation_token_is_an_error) {
    for (const std::vector<std::string>& tokens :
         {std::vector<std::string>{"T1", "T1"}, std::vector<std::string>{"T1", "T2", "T1"}}) {
        recording_server rec([&tokens](const http_request& r) {
            if (r.index >= 20) return http_response{.body = listing({"k/end"})};
            const std::string& token = tokens[std::min<std::size_t>(r.index, tokens.size() - 1)];
            return http_response{.body = listing({"k/" + std::to_string(r.index)}, token)};
        });
        const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")}});
        const auto e = expect_throw<ferry::io_error>(
            [] { (void)ferry::sources::list_objects("s3://bkt/k/"); }, tokens.back());
        BOOST_TEST(contains(e.what(), "list_objects: 's3://bkt/k/'"), e.what());
        BOOST_TEST(contains(e.what(), "continuation token 'T1'"), e.what());
        BOOST_TEST(contains(e.what(), "page " + std::to_string(tokens.size())), e.what());
        BOOST_TEST(!(e.has_value() && e->transient()));
        BOOST_TEST(rec.requests().size() == tokens.size());
    }
}

// A 200 that is not a ListBucketResult (a captive portal's login page, another document) is an
// error that says what came back, escaped, redacted and cut short, not an empty listing.
BOOST_AUTO_TEST_CASE(a_page_that_is_not_a_listing_is_an_error_naming_it) {
    std::string portal =
        "<!DOCTYPE html>\n<html><head><title>Hotel Wi-Fi: log in</title></head><body>\x1b[31m"
        "<a href=\"https://portal.example/go?token=SECRET123\">";
    for (int i = 0; i < 2000; ++i) portal += "lorem ipsum ";
    portal += "</body></html>";
    const auto html = listing_error("s3://bkt/train/", portal);
    BOOST_TEST(contains(html.what(), "list_objects: 's3://bkt/train/'"), html.what());
    BOOST_TEST(contains(html.what(), "not a ListBucketResult"), html.what());
    BOOST_TEST(contains(html.what(), "<!DOCTYPE html>\\n<html><head><title>Hotel Wi-Fi: log in"),
               html.what());
    BOOST_TEST(!has_control(html.what()), html.what());
    BOOST_TEST(contains(html.what(), "token=REDACTED"), html.what());
    BOOST_TEST(!contains(html.what(), "SECRET123"), html.what());
    BOOST_TEST(html.what().size() < 600U, html.what());

    const auto other = listing_error(
        "s3://bkt/",
        "<?xml version=\"1.0\"?><ListAllMyBucketsResult><Buckets/></ListAllMyBucketsResult>");
    BOOST_TEST(contains(other.what(), "not a ListBucketResult"), other.what());
    BOOST_TEST(contains(other.what(), "<ListAllMyBucketsResult>"), other.what());

    const auto empty = listing_error("s3://bkt/", "");
    BOOST_TEST(contains(empty.what(), "not a ListBucketResult"), empty.what());
}

// S3 lists only keys that start with the prefix asked for: a key outside it is a store that
// cannot be trusted, and an error naming the key, not an object to read.
BOOST_AUTO_TEST_CASE(keys_outside_the_prefix_are_refused) {
    const auto e = listing_error("s3://bkt/train/", listing({"train/0.tar", "../secret/key"}));
    BOOST_TEST(contains(e.what(), "list_objects: 's3://bkt/train/' (page 1)"), e.what());
    BOOST_TEST(contains(e.what(), "the key '../secret/key'"), e.what());
    BOOST_TEST(contains(e.what(), "prefix 'train/'"), e.what());
}

// XML 1.0 cannot carry control characters, not even as character references: a listing that
// holds one (to forge a log line or colour a terminal) is refused, and the message shows it
// escaped.
BOOST_AUTO_TEST_CASE(control_characters_in_a_listing_are_refused) {
    for (const std::string key : {"train/\x1b[2J.tar", "train/&#x1b;[2J.tar"}) {
        const auto e = listing_error("s3://bkt/train/", listing({key}));
        BOOST_TEST(contains(e.what(), "not well-formed XML"), e.what());
        BOOST_TEST(!has_control(e.what()), e.what());
    }
}

// Keys are read as XML defines them: CDATA kept verbatim, comments skipped, character
// references decoded, S3's namespace and the document's formatting ignored.
BOOST_AUTO_TEST_CASE(listing_xml_is_read_as_xml_defines_it) {
    recording_server rec([](const http_request&) {
        return http_response{
            .body =
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<!-- <ListBucketResult><Contents><Key>commented</Key></Contents> -->\n"
                "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
                "  <Contents>\n    <!-- <Key>not this</Key> -->\n"
                "    <Key><![CDATA[a&amp;b <c>]]></Key>\n  </Contents>\n"
                "  <Contents><Key>caf&#xE9; &#38; &lt;tea&gt;</Key></Contents>\n"
                "  <IsTruncated>false</IsTruncated>\n</ListBucketResult>\n"};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")}});
    const auto urls = ferry::sources::list_objects("s3://bkt/");
    const std::vector<std::string> expected{"s3://bkt/a&amp;b <c>", "s3://bkt/caf\xC3\xA9 & <tea>"};
    BOOST_TEST(urls == expected, boost::test_tools::per_element());
}

// A listing with a DOCTYPE (entity expansion: a billion laughs), an undeclared entity, nesting
// deeper than any S3 document or a page over the size cap is refused with a message that says
// which limit, not expanded, recursed into or held in memory.
BOOST_AUTO_TEST_CASE(listing_xml_past_its_limits_is_refused) {
    std::string laughs = "<?xml version=\"1.0\"?><!DOCTYPE ListBucketResult [<!ENTITY l0 \"lol\">";
    for (int i = 1; i < 10; ++i) {
        laughs += "<!ENTITY l" + std::to_string(i) + " \"";
        for (int j = 0; j < 10; ++j) laughs += "&l" + std::to_string(i - 1) + ";";
        laughs += "\">";
    }
    laughs += "]><ListBucketResult><Contents><Key>&l9;</Key></Contents></ListBucketResult>";
    const auto doctype = listing_error("s3://bkt/", laughs);
    BOOST_TEST(contains(doctype.what(), "DOCTYPE"), doctype.what());

    const auto entity = listing_error(
        "s3://bkt/",
        "<ListBucketResult><Contents><Key>&secret;</Key></Contents></ListBucketResult>");
    BOOST_TEST(contains(entity.what(), "not well-formed XML"), entity.what());

    std::string deep = "<ListBucketResult>";
    for (int i = 0; i < 100000; ++i) deep += "<a>";
    const auto depth = listing_error("s3://bkt/", deep);
    BOOST_TEST(contains(depth.what(), "nested deeper than 32 elements"), depth.what());

    std::string big = "<ListBucketResult>";
    big += std::string(std::size_t{17} << 20, ' ');
    big += "</ListBucketResult>";
    const auto size = listing_error("s3://bkt/", big);
    BOOST_TEST(contains(size.what(), "16777216 bytes"), size.what());
}

// A store that hands out a fresh token with every page would be listed until memory runs out:
// max_pages ends it with an io_error (not transient) naming the bound, its value and the option,
// after exactly max_pages requests.
BOOST_AUTO_TEST_CASE(a_listing_past_max_pages_is_an_error_naming_the_bound) {
    endless_store store(1);
    const auto e = endless_error(store, {.max_pages = 4});
    BOOST_TEST(contains(e.what(),
                        "list_objects: 's3://bkt/k/' (page 4): the listing goes on past "
                        "4 pages (list_options::max_pages = 4"),
               e.what());
    BOOST_TEST(!(e.has_value() && e->transient()));
    BOOST_TEST(store.rec.requests().size() == 4U);
}

// max_keys counts every key the store lists; the page that takes the listing past it is an
// io_error naming the bound, and no page is asked for after it.
BOOST_AUTO_TEST_CASE(a_listing_past_max_keys_is_an_error_naming_the_bound) {
    endless_store store(2);
    const auto e = endless_error(store, {.max_keys = 5});
    BOOST_TEST(contains(e.what(),
                        "list_objects: 's3://bkt/k/' (page 3): the store listed more "
                        "than 5 keys (list_options::max_keys = 5"),
               e.what());
    BOOST_TEST(!(e.has_value() && e->transient()));
    BOOST_TEST(store.rec.requests().size() == 3U);
}

// max_bytes bounds what a listing holds whatever the keys' length: the URLs' text and the
// continuation tokens kept. Pages of one key ("s3://bkt/k/<n>-0", 14 bytes) and a 1000-byte
// token pass 3000 bytes at page 3 (3042).
BOOST_AUTO_TEST_CASE(a_listing_past_max_bytes_is_an_error_naming_the_bound) {
    endless_store store(1, 1000);
    const auto e = endless_error(store, {.max_bytes = 3000});
    BOOST_TEST(contains(e.what(),
                        "list_objects: 's3://bkt/k/' (page 3): the listing's URLs and "
                        "continuation tokens pass 3000 bytes (list_options::max_bytes "
                        "= 3000"),
               e.what());
    BOOST_TEST(!(e.has_value() && e->transient()));
    BOOST_TEST(store.rec.requests().size() == 3U);
}

// A continuation token goes back to the store in the next request's URL: one longer than 4096
// bytes is refused, named by its length, not sent; one of 4096 bytes is taken.
BOOST_AUTO_TEST_CASE(a_continuation_token_past_its_bound_is_refused) {
    endless_store store(1, 4097);
    const auto e = endless_error(store, {});
    BOOST_TEST(contains(e.what(),
                        "list_objects: 's3://bkt/k/' (page 1): the store gave a "
                        "continuation token of 4097 bytes, more than the 4096"),
               e.what());
    BOOST_TEST(!(e.has_value() && e->transient()));
    BOOST_TEST(store.rec.requests().size() == 1U);

    endless_store longest(1, 4096);
    const scoped_env env({{"AWS_ENDPOINT_URL", longest.rec.server.url("")}});
    BOOST_TEST(ferry::sources::list_objects("s3://bkt/k/").size() == 50U);
}

// The bounds hold the listing to at most, not under: a listing of exactly max_pages pages,
// max_keys keys and max_bytes bytes is whole. Out of range options are refused before any
// request.
BOOST_AUTO_TEST_CASE(a_listing_within_its_bounds_is_whole) {
    recording_server rec([](const http_request& r) {
        const std::string n = std::to_string(r.index);
        return http_response{.body = r.index >= 2
                                         ? listing({"k/" + n + "a", "k/" + n + "b"})
                                         : listing({"k/" + n + "a", "k/" + n + "b"}, "T" + n)};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")}});
    // Six URLs of 13 bytes ("s3://bkt/k/0a") and two tokens of 2 bytes.
    const auto urls = ferry::sources::list_objects(
        "s3://bkt/k/", {.max_keys = 6, .max_pages = 3, .max_bytes = 6 * 13 + 2 * 2});
    BOOST_TEST(urls.size() == 6U);
    BOOST_TEST(rec.requests().size() == 3U);
    for (const auto& options :
         {ferry::sources::list_options{.max_keys = 0}, ferry::sources::list_options{.max_pages = 0},
          ferry::sources::list_options{.max_bytes = 0}}) {
        const auto e = expect_throw<ferry::invalid_argument>(
            [&] { (void)ferry::sources::list_objects("s3://bkt/k/", options); });
        BOOST_TEST(contains(e.what(), "must be at least 1"), e.what());
    }
    BOOST_TEST(rec.requests().size() == 3U);
}

// The URL a failing page's error names (what() and url()) is the listing's URL as read_url names
// its URL: credentials REDACTED, control characters escaped, and its page.
BOOST_AUTO_TEST_CASE(a_failing_page_names_the_url_redacted_and_escaped) {
    recording_server rec([](const http_request& r) {
        if (r.index == 0) return http_response{.body = listing({}, "T1")};
        return http_response{.status = 500, .body = "overloaded"};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")}});
    const std::string url = "s3://bkt/pre\x1b[2Jfix\n?X-Amz-Security-Token=SECRET1&token=SECRET2";
    const auto e =
        expect_throw<ferry::http_error>([&] { (void)ferry::sources::list_objects(url); });
    const std::string shown =
        "s3://bkt/pre\\x1b[2Jfix\\n?X-Amz-Security-Token=REDACTED&token=REDACTED (page 2)";
    BOOST_TEST(contains(e.what(), "'" + shown + "': HTTP 500"), e.what());
    BOOST_TEST(!has_control(e.what()), e.what());
    BOOST_TEST(!contains(e.what(), "SECRET"), e.what());
    BOOST_TEST((e.has_value() && e->url() == shown), (e.has_value() ? e->url() : ""));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
