// SPDX-License-Identifier: Apache-2.0
/// \file
/// read_url's byte ranges: from a server that honours Range (206), one that ignores it (200, the
/// whole body), and file:// URLs, the bytes returned are exactly the range's; a range past the
/// resource's end, a cut 206 and a 206 of other bytes are http_errors that say so.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <charconv>
#include <cstdint>
#include <ferry/http.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "../support/temp_folder.hpp"

using ferry_test::as_string;
using ferry_test::contains;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using ferry_test::random_body;
using ferry_test::ranged;

namespace range_test {

ferry::bytes read(const std::string& url, std::uint64_t offset, std::uint64_t length) {
    return ferry::ops::read_url(url,
                                {.range = ferry::byte_range{.offset = offset, .length = length}});
}

}  // namespace range_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(range)
using namespace range_test;

// The range's bytes exactly, whether the server sends just them (206) or the whole body (200),
// and the request carries the Range header the range asks for.
BOOST_AUTO_TEST_CASE(returns_the_range_from_206_and_from_200) {
    const std::string body = random_body(100000, 11);
    std::mutex m;
    std::vector<std::string> asked;
    http_server honours([&](const http_request& r) {
        const std::lock_guard lock(m);
        asked.push_back(r.header("range"));
        return ranged(body, r);
    });
    http_server ignores([&](const http_request&) { return http_response{.body = body}; });
    struct case_ {
        std::uint64_t offset, length;
    };
    for (const auto c : {case_{0, 4096}, case_{12345, 1}, case_{99999, 1}, case_{50000, 0},
                         case_{0, 100000}, case_{0, 0}}) {
        const std::string want =
            body.substr(c.offset, c.length == 0 ? std::string::npos : c.length);
        BOOST_TEST((as_string(read(honours.url("/o"), c.offset, c.length)) == want),
                   "206, " << c.offset << "+" << c.length);
        BOOST_TEST((as_string(read(ignores.url("/o"), c.offset, c.length)) == want),
                   "200, " << c.offset << "+" << c.length);
    }
    const std::vector<std::string> expected{"bytes=0-4095",      "bytes=12345-12345",
                                            "bytes=99999-99999", "bytes=50000-",
                                            "bytes=0-99999",     "bytes=0-"};
    BOOST_TEST(asked == expected, boost::test_tools::per_element());
}

// A range that does not lie within the resource fails for good (asking again will not help):
// 416 from a server that honours ranges, "the resource has N bytes" from one that does not or
// that clamps the range to its end.
BOOST_AUTO_TEST_CASE(a_range_past_the_end_is_a_permanent_error) {
    const std::string body = random_body(1000, 12);
    http_server honours([&](const http_request& r) { return ranged(body, r); });
    http_server ignores([&](const http_request&) { return http_response{.body = body}; });
    const auto e416 = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)read(honours.url("/o"), 5000, 10); });
    BOOST_REQUIRE(e416.has_value());
    BOOST_TEST(e416->status() == 416);
    BOOST_TEST(!e416->transient());
    const auto clamped = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)read(honours.url("/o"), 900, 200); });
    BOOST_REQUIRE(clamped.has_value());
    BOOST_TEST(!clamped->transient());
    BOOST_TEST(contains(clamped->what(), "range 900-1099: the resource has 1000 bytes"),
               clamped->what());
    const auto whole = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)read(ignores.url("/o"), 900, 200); });
    BOOST_REQUIRE(whole.has_value());
    BOOST_TEST(whole->status() == 200);
    BOOST_TEST(!whole->transient());
    BOOST_TEST(contains(whole->what(), "the resource has 1000 bytes"), whole->what());
}

// A 206 cut short is a truncated body (transient: the next try may get it all); a 206 of other
// bytes than asked, or without a Content-Range, is refused.
BOOST_AUTO_TEST_CASE(a_bad_206_is_refused) {
    const std::string body = random_body(10000, 13);
    http_server server([&](const http_request& r) {
        if (r.target == "/cut") {
            auto resp = ranged(body, r);
            resp.send_only = 100;
            resp.after = http_response::then::close;
            return resp;
        }
        if (r.target == "/shifted") {
            return http_response{.status = 206,
                                 .body = body.substr(10, 100),
                                 .headers = {{"Content-Range", "bytes 10-109/10000"}}};
        }
        return http_response{.status = 206, .body = body.substr(0, 100)};  // no Content-Range
    });
    const auto cut = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)read(server.url("/cut"), 0, 1000); });
    BOOST_REQUIRE(cut.has_value());
    BOOST_TEST(cut->transient());
    BOOST_TEST(contains(cut->what(), "truncated body"), cut->what());
    const auto shifted = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)read(server.url("/shifted"), 0, 100); });
    BOOST_REQUIRE(shifted.has_value());
    BOOST_TEST(contains(shifted->what(), "range 0-99: the server sent bytes 10-109"),
               shifted->what());
    const auto bare = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)read(server.url("/bare"), 0, 100); });
    BOOST_REQUIRE(bare.has_value());
    BOOST_TEST(contains(bare->what(), "206 Partial Content without a valid Content-Range"),
               bare->what());
}

// A 206 with more bytes than the range asked for is refused (the server did not do what was
// asked), for a fixed and an at_most range; a Content-Range with control characters is shown
// escaped in the message, so it cannot forge a log line or colour a terminal.
BOOST_AUTO_TEST_CASE(a_206_longer_than_the_range_is_refused) {
    const std::string body = random_body(10000, 16);
    http_server server([&](const http_request& r) {
        if (r.target == "/forged") {
            return http_response{.status = 206,
                                 .body = body.substr(0, 100),
                                 .headers = {{"Content-Range", "bytes 0-99\x1b[31m/x"}}};
        }
        return http_response{.status = 206,
                             .body = body.substr(0, 1000),
                             .headers = {{"Content-Range", "bytes 0-999/10000"}}};
    });
    for (const bool at_most : {false, true}) {
        const auto e = ferry_test::expect_throw<ferry::http_error>([&] {
            (void)ferry::ops::read_url(
                server.url("/longer"),
                {.range = ferry::byte_range{.offset = 0, .length = 100, .at_most = at_most}});
        });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(!e->transient());
        BOOST_TEST(e->status() == 206);
        BOOST_TEST(contains(e->what(),
                            "range 0-99: the server sent bytes 0-999 (1000 bytes), more "
                            "than the 100 asked for"),
                   e->what());
    }
    const auto forged = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)read(server.url("/forged"), 0, 100); });
    BOOST_REQUIRE(forged.has_value());
    BOOST_TEST(std::string(forged->what()).find('\x1b') == std::string::npos, forged->what());
    BOOST_TEST(contains(forged->what(), "without a valid Content-Range ('bytes 0-99\\x1b[31m/x')"),
               forged->what());
}

// at_most: the chunks of a resource of unknown size, from a server that honours ranges, one that
// ignores them and a file:// URL: the last chunk is short, a chunk past the end is empty.
BOOST_AUTO_TEST_CASE(at_most_reads_chunks_to_the_end) {
    const std::string body = random_body(10000, 15);
    http_server honours([&](const http_request& r) { return ranged(body, r); });
    http_server ignores([&](const http_request&) { return http_response{.body = body}; });
    const ferry_test::temp_folder dir("ferry-http-chunks");
    const auto path = dir / "body.bin";
    std::ofstream(path, std::ios::binary) << body;
    for (const std::string& url :
         {honours.url("/o"), ignores.url("/o"), "file://" + path.string()}) {
        std::string got;
        for (std::uint64_t at = 0;; at += 3000) {
            const auto chunk = ferry::ops::read_url(
                url, {.range = ferry::byte_range{.offset = at, .length = 3000, .at_most = true}});
            BOOST_TEST(chunk.size() <= 3000U);
            if (chunk.empty()) break;
            got += as_string(chunk);
        }
        BOOST_TEST((got == body), url);
        BOOST_TEST(
            ferry::ops::read_url(
                url, {.range = ferry::byte_range{.offset = 20000, .length = 10, .at_most = true}})
                .empty(),
            url);
    }
    std::filesystem::remove(path);
}

// file:// URLs read just the range; a range past the file's end is a permanent error.
BOOST_AUTO_TEST_CASE(file_urls_read_just_the_range) {
    const ferry_test::temp_folder dir("ferry-http-range");
    const auto path = dir / "file.bin";
    const std::string contents = random_body(70000, 14);
    std::ofstream(path, std::ios::binary) << contents;
    const std::string url = "file://" + path.string();
    BOOST_TEST((as_string(read(url, 100, 5000)) == contents.substr(100, 5000)));
    BOOST_TEST((as_string(read(url, 69000, 0)) == contents.substr(69000)));
    const auto past =
        ferry_test::expect_throw<ferry::http_error>([&] { (void)read(url, 69000, 5000); });
    std::filesystem::remove(path);
    BOOST_REQUIRE(past.has_value());
    BOOST_TEST(!past->transient());
    BOOST_TEST(contains(past->what(), "the resource has 70000 bytes"), past->what());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
