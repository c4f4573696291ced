// SPDX-License-Identifier: Apache-2.0
/// \file
/// read_url through ferry::ops::open_cache against the in-process server, which counts what it
/// is asked: epoch 2 makes no request, ranges come from the local file, a damaged entry is
/// fetched again, revalidation (304 / 200), LRU eviction within the budget, objects over it,
/// and what reaches the folder: flat hashed names, no credentials.
#include <boost/test/unit_test.hpp>
#include <ferry/cache.hpp>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "cache_support.hpp"

using ferry_test::as_string;
using ferry_test::file_text;
using ferry_test::files_in;
using ferry_test::object_server;
using ferry_test::random_body;
using ferry_test::read;
using ferry_test::temp_folder;

namespace cache_test {

std::string read_range(const std::string& url, const std::shared_ptr<ferry::object_cache>& cache,
                       std::uint64_t offset, std::uint64_t length, bool at_most = false) {
    return as_string(ferry::ops::read_url(
        url, {.range = ferry::byte_range{.offset = offset, .length = length, .at_most = at_most},
              .cache = cache}));
}

/// Four objects of 10000 bytes, /A to /D, on `s`; their bodies by name.
std::map<std::string, std::string> put_abcd(object_server& s) {
    std::map<std::string, std::string> bodies;
    for (const std::string k : {"A", "B", "C", "D"}) {
        bodies[k] = random_body(10000, static_cast<std::uint32_t>(k[0]));
        s.put("/" + k, bodies[k]);
    }
    return bodies;
}

/// A budget with room for three of them (an entry is the object plus a record of ~60 bytes).
constexpr std::uint64_t three_objects = 3 * 10000 + 1000;

}  // namespace cache_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(cache)
using namespace cache_test;

// Epoch 2 over 20 URLs is read from local disk: no GET reaches the server, and every object's
// bytes are the server's.
BOOST_AUTO_TEST_CASE(epoch_two_makes_no_requests) {
    temp_folder dir("ferry-cache-epochs");
    object_server s;
    std::vector<std::string> urls, bodies;
    for (int i = 0; i < 20; ++i) {
        bodies.push_back(random_body(1000 + 997 * static_cast<std::size_t>(i), 100 + i));
        s.put("/o" + std::to_string(i), bodies.back(), "\"e" + std::to_string(i) + "\"");
        urls.push_back(s.url("/o" + std::to_string(i)));
    }
    const auto cache = ferry::ops::open_cache({.dir = dir.path(), .max_bytes = 100 << 20});
    for (int epoch = 0; epoch < 2; ++epoch) {
        for (std::size_t i = 0; i < urls.size(); ++i) {
            BOOST_TEST((read(urls[i], cache) == bodies[i]), "epoch " << epoch << ", object " << i);
        }
        BOOST_TEST(s.gets.load() == 20, "after epoch " << epoch);
    }
    const auto st = cache->stats();
    BOOST_TEST(st.misses == 20U);
    BOOST_TEST(st.hits == 20U);
    BOOST_TEST(st.entries == 20U);
    BOOST_TEST(files_in(dir.path()).size() == 20U);
}

// A range of a cached object is the server's bytes of it, read locally: the miss fetched the
// whole object once (no Range request), every range after it is local; past the end is the same
// permanent error as from the server, and an at_most range is cut at the end.
BOOST_AUTO_TEST_CASE(ranges_come_from_the_local_file) {
    temp_folder dir("ferry-cache-ranges");
    object_server s;
    const std::string body = random_body(100000, 7);
    s.put("/big", body);
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const std::string url = s.url("/big");
    BOOST_TEST((read_range(url, cache, 5000, 100) == body.substr(5000, 100)));
    BOOST_TEST(s.ranges.empty());
    for (const auto& [offset, length] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
             {0, 1}, {99999, 1}, {12345, 0}, {0, 100000}, {50000, 4096}}) {
        BOOST_TEST((read_range(url, cache, offset, length) ==
                    body.substr(offset, length == 0 ? std::string::npos : length)),
                   offset << "+" << length);
    }
    BOOST_TEST((read_range(url, cache, 99000, 4096, true) == body.substr(99000)));
    BOOST_TEST(read_range(url, cache, 100000, 4096, true).empty());
    const auto e = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)read_range(url, cache, 99000, 4096); });
    BOOST_TEST(!e.value_or(ferry::http_error("", 0, "")).transient());
    BOOST_TEST(e.what().find("the resource has 100000 bytes") != std::string::npos, e.what());
    BOOST_TEST(s.gets.load() == 1);
    BOOST_TEST(cache->stats().hits == 7U);  // the error is not a hit
}

// An entry whose size is not its record's (truncated by hand) is a miss: it is fetched again,
// the answer is whole, and the entry is whole again.
BOOST_AUTO_TEST_CASE(a_truncated_entry_is_fetched_again) {
    temp_folder dir("ferry-cache-truncated");
    object_server s;
    const std::string body = random_body(30000, 8);
    s.put("/t", body);
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const std::string url = s.url("/t");
    BOOST_TEST(read(url, cache) == body);
    const auto entry = cache->entry_path(url);
    BOOST_TEST_REQUIRE(std::filesystem::exists(entry));
    std::filesystem::resize_file(entry, 20000);
    BOOST_TEST(read(url, cache) == body);
    BOOST_TEST(s.gets.load() == 2);
    BOOST_TEST(read(url, cache) == body);
    BOOST_TEST(s.gets.load() == 2);
    BOOST_TEST(std::filesystem::file_size(entry) > body.size());
    BOOST_TEST(cache->stats().misses == 2U);
}

// With revalidate, each hit asks If-None-Match with the entry's ETag: the same ETag is a 304 and
// the local bytes (no body sent); a new ETag brings the new bytes, which replace the entry.
BOOST_AUTO_TEST_CASE(revalidate_uses_the_etag) {
    temp_folder dir("ferry-cache-revalidate");
    object_server s;
    const std::string v1 = random_body(20000, 9);
    const std::string v2 = random_body(25000, 10);
    s.put("/r", v1, "\"v1\"");
    const auto cache = ferry::ops::open_cache({.dir = dir.path(), .revalidate = true});
    const std::string url = s.url("/r");
    BOOST_TEST(read(url, cache) == v1);
    BOOST_TEST(read(url, cache) == v1);
    BOOST_TEST(s.not_modified.load() == 1);
    BOOST_TEST(s.sent.load() == v1.size());
    BOOST_TEST(cache->stats().revalidated == 1U);
    s.put("/r", v2, "\"v2\"");
    BOOST_TEST(read(url, cache) == v2);
    BOOST_TEST(s.sent.load() == v1.size() + v2.size());
    BOOST_TEST(read(url, cache) == v2);
    BOOST_TEST(s.not_modified.load() == 2);
    const std::vector<std::string> asked{"\"v1\"", "\"v1\"", "\"v2\""};
    BOOST_TEST(s.conditions == asked, boost::test_tools::per_element());
    // Without revalidate the replaced entry is what is read, with no request.
    const auto plain = ferry::ops::open_cache({.dir = dir.path()});
    BOOST_TEST(read(url, plain) == v2);
    BOOST_TEST(s.gets.load() == 4);
}

// Within a budget of three objects, a fourth evicts the least recently used one — by use, not
// by fill: A, B, C filled, A read again, D filled: B goes, A, C and D stay.
BOOST_AUTO_TEST_CASE(lru_evicts_the_least_recently_used) {
    temp_folder dir("ferry-cache-lru");
    object_server s;
    std::map<std::string, std::string> bodies = put_abcd(s);
    const auto cache = ferry::ops::open_cache({.dir = dir.path(), .max_bytes = three_objects});
    for (const std::string k : {"A", "B", "C", "A", "D"}) {
        BOOST_TEST(read(s.url("/" + k), cache) == bodies[k], k);
    }
    BOOST_TEST(s.gets.load() == 4);
    for (const std::string k : {"A", "C", "D"}) {
        BOOST_TEST(std::filesystem::exists(cache->entry_path(s.url("/" + k))), k << " was evicted");
    }
    BOOST_TEST(!std::filesystem::exists(cache->entry_path(s.url("/B"))));
    auto st = cache->stats();
    BOOST_TEST(st.evictions == 1U);
    BOOST_TEST(st.entries == 3U);
    // B again: fetched (and now C, the least recently used, goes).
    BOOST_TEST(read(s.url("/B"), cache) == bodies["B"]);
    BOOST_TEST(s.gets.load() == 5);
    BOOST_TEST(!std::filesystem::exists(cache->entry_path(s.url("/C"))));
    BOOST_TEST(cache->stats().evictions == 2U);
}

// 600 fills of 1000-byte objects under a budget of 50 of them: the folder stays within the
// budget, the most recently used entries stay (among them one read again after every 20 fills,
// which an eviction from the remembered order must notice), and the folder is read through at
// opening and about once per 64 fills after, not at every fill.
BOOST_AUTO_TEST_CASE(fills_evict_in_lru_order_without_listing_the_folder_each_time) {
    temp_folder dir("ferry-cache-many");
    object_server s;
    constexpr int count = 600;
    std::vector<std::string> bodies;
    for (int i = 0; i < count; ++i) {
        bodies.push_back(random_body(1000, 1000U + static_cast<std::uint32_t>(i)));
        s.put("/m" + std::to_string(i), bodies.back());
    }
    constexpr std::uint64_t budget = 50 * 1100;
    const auto cache = ferry::ops::open_cache({.dir = dir.path(), .max_bytes = budget});
    for (int i = 0; i < count; ++i) {
        BOOST_TEST_REQUIRE(read(s.url("/m" + std::to_string(i)), cache) == bodies[i], i);
        if (i % 20 == 19) BOOST_TEST_REQUIRE(read(s.url("/m0"), cache) == bodies[0]);
    }
    BOOST_TEST(s.gets.load() == count);  // /m0 was never evicted, so never fetched again
    const auto st = cache->stats();
    BOOST_TEST(st.listings >= 1U + count / 64);
    BOOST_TEST(st.listings <= 2U + count / 64);
    std::uint64_t bytes = 0;
    std::size_t entries = 0;
    for (const auto& name : files_in(dir.path())) {
        bytes += std::filesystem::file_size(dir.path() / name);
        ++entries;
    }
    BOOST_TEST(bytes <= budget);
    BOOST_TEST(entries == st.entries);
    BOOST_TEST(st.evictions == count - entries);
    BOOST_TEST(entries >= 45U);  // the budget is used, not emptied
    for (int i = count - 40; i < count; ++i) {
        BOOST_TEST(std::filesystem::exists(cache->entry_path(s.url("/m" + std::to_string(i)))), i);
    }
    BOOST_TEST(std::filesystem::exists(cache->entry_path(s.url("/m0"))));
}

// In a pipeline, each fetch stage's stats show what the cache did for its calls (hits, misses,
// evictions), and the printed stats name them on the stage's line.
BOOST_AUTO_TEST_CASE(a_stage_reports_its_cache_hits_misses_and_evictions) {
    temp_folder dir("ferry-cache-stats");
    object_server s;
    std::map<std::string, std::string> bodies = put_abcd(s);
    const auto cache = ferry::ops::open_cache({.dir = dir.path(), .max_bytes = three_objects});
    const std::vector<std::string> urls{s.url("/A"), s.url("/B"), s.url("/C"), s.url("/A"),
                                        s.url("/D")};
    auto p = ferry::from(urls)
                 .map([&](const std::string& url) { return read(url, cache); },
                      {.name = "fetch", .executor = ferry::io})
                 .build();
    std::vector<std::string> got;
    for (const std::string& body : p) got.push_back(body);
    BOOST_TEST((got == std::vector<std::string>{bodies["A"], bodies["B"], bodies["C"], bodies["A"],
                                                bodies["D"]}));
    const auto st = p.stats();
    const auto& fetch = st.stages.at(1);
    BOOST_TEST(fetch.name == "fetch");
    using counts = std::vector<std::pair<std::string, std::uint64_t>>;
    BOOST_TEST(
        (fetch.counters == counts{{"cache misses", 4}, {"cache hits", 1}, {"cache evictions", 1}}));
    std::ostringstream text;
    text << st;
    BOOST_TEST(text.str().find("stage 'fetch': cache misses 4, cache hits 1, cache evictions 1") !=
                   std::string::npos,
               text.str());
}

// An object larger than the budget is answered but not kept: a whole read from the network, a
// ranged one by a ranged request, one of unannounced size too, and nothing stays in the folder.
BOOST_AUTO_TEST_CASE(an_object_over_the_budget_is_served_not_kept) {
    temp_folder dir("ferry-cache-too-big");
    object_server s;
    const std::string body = random_body(50000, 12);
    s.put("/huge", body);
    const auto cache = ferry::ops::open_cache({.dir = dir.path(), .max_bytes = 20000});
    BOOST_TEST(read(s.url("/huge"), cache) == body);
    BOOST_TEST(read_range(s.url("/huge"), cache, 40000, 100) == body.substr(40000, 100));
    BOOST_TEST(files_in(dir.path()).empty());
    BOOST_TEST(cache->stats().not_kept == 2U);
    BOOST_TEST(s.ranges == std::vector<std::string>{"bytes=40000-40099"},
               boost::test_tools::per_element());
    // Without a Content-Length, the fill stops where the budget is passed.
    ferry_test::http_server unsized([&](const ferry_test::http_request&) {
        return ferry_test::http_response{.body = body, .content_length = -2};
    });
    BOOST_TEST(read(unsized.url("/u"), cache) == body);
    BOOST_TEST(files_in(dir.path()).empty());
    BOOST_TEST(cache->stats().not_kept == 3U);
}

// Names come from a hash, never from the URL's path: ../ and absolute-looking paths make flat
// files of 64 hex digits inside the folder, and nothing beside it.
BOOST_AUTO_TEST_CASE(entry_names_are_flat_hashes) {
    temp_folder root("ferry-cache-names");
    const auto dir = root / "cache";
    ferry_test::http_server echo([](const ferry_test::http_request& r) {
        return ferry_test::http_response{.body = "body of " + r.target};
    });
    const std::vector<std::string> paths{"/../../escape",    "/a/../../../b", "//etc/passwd",
                                         "/%2e%2e/%2e%2e/x", "/..%2F..%2Fy",  "/dir/sub/file.jpg",
                                         "/x?p=../../../z"};
    const auto cache = ferry::ops::open_cache({.dir = dir});
    for (const auto& p : paths) {
        BOOST_TEST(read(echo.url(p), cache).starts_with("body of /"), p);
    }
    const auto names = files_in(dir);
    BOOST_TEST(names.size() == paths.size());
    for (const auto& n : names) {
        BOOST_TEST(n.size() == 64U, n);
        BOOST_TEST(n.find_first_not_of("0123456789abcdef") == std::string::npos, n);
        BOOST_TEST(std::filesystem::is_regular_file(dir / n), n);
    }
    BOOST_TEST(files_in(root.path()).size() == names.size() + 2U,  // cache/ and cache/.lock
               "something was written beside the cache folder");
}

// A presigned URL's signature, credential and token reach no file name and no file content,
// and two presignings of one object by one access key id hit one entry.
BOOST_AUTO_TEST_CASE(presigned_urls_share_an_entry_and_leave_no_secret) {
    temp_folder dir("ferry-cache-presigned");
    object_server s;
    const std::string body = random_body(5000, 13);
    s.put("/bucket/key.jpg", body);
    const auto presigned = [&](const std::string& sig, const std::string& date) {
        return s.url(
            "/bucket/key.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDSECRET%2F" +
            date + "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=" + date +
            "T000000Z&X-Amz-Expires=3600&X-Amz-Security-Token=TOKENSECRET" + sig +
            "&X-Amz-SignedHeaders=host&X-Amz-Signature=" + sig + "&versionId=7");
    };
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    BOOST_TEST(read(presigned("deadbeefsig1", "20260101"), cache) == body);
    BOOST_TEST(read(presigned("cafef00dsig2", "20260102"), cache) == body);
    BOOST_TEST(s.gets.load() == 1);
    const auto names = files_in(dir.path());
    BOOST_TEST_REQUIRE(names.size() == 1U);
    const std::string all = names[0] + file_text(dir / names[0]) + file_text(dir / ".lock");
    for (const std::string secret :
         {"deadbeefsig1", "cafef00dsig2", "AKIDSECRET", "TOKENSECRET", "Signature", "Credential"}) {
        BOOST_TEST(all.find(secret) == std::string::npos, secret << " reached the folder");
    }
    // What is kept: the object's own URL, other query parameters included.
    BOOST_TEST(all.find(s.url("/bucket/key.jpg?versionId=7")) != std::string::npos);
    // Google Cloud Storage's V4 presigning the same way: one service account, two signings of
    // one object, one entry.
    const auto gcs = [&](const std::string& sig, const std::string& date) {
        return s.url(
            "/bucket/key.jpg?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p."
            "iam.gserviceaccount.com%2F" +
            date + "%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=" + date +
            "T000000Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature=" + sig);
    };
    BOOST_TEST(read(gcs("abc123", "20260101"), cache) == body);
    BOOST_TEST(read(gcs("def456", "20260102"), cache) == body);
    BOOST_TEST(s.gets.load() ==
               2);  // the first GCS read is another identity's miss, the second a hit
    // user:password@ is a credential too: its entry is not the anonymous one.
    const std::string with_user =
        "http://user:hunter2@127.0.0.1:" + std::to_string(s.server.port()) + "/bucket/key.jpg";
    BOOST_TEST(cache->entry_path(with_user) != cache->entry_path(s.url("/bucket/key.jpg")));
}

// max_bytes holds for a ranged read through the cache as it does from the network: a range
// longer than it is the same permanent http_error, on the miss (the whole object goes to disk)
// and on the hit after it; a range within it is answered.
BOOST_AUTO_TEST_CASE(a_cached_range_keeps_to_max_bytes) {
    temp_folder dir("ferry-cache-range-max");
    object_server s;
    const std::string body = random_body(100000, 14);
    s.put("/r", body);
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const auto ranged = [&](std::uint64_t length) {
        return as_string(ferry::ops::read_url(
            s.url("/r"), {.max_bytes = 1000,
                          .range = ferry::byte_range{.offset = 10, .length = length},
                          .cache = cache}));
    };
    for (const char* when : {"miss", "hit"}) {
        const auto e =
            ferry_test::expect_throw<ferry::http_error>([&] { (void)ranged(50000); }, when);
        BOOST_TEST(e.what().find("read_url: '" + s.url("/r") +
                                 "': response body larger than max_bytes (1000 bytes)") !=
                       std::string::npos,
                   when << ": " << e.what());
        BOOST_TEST(!e.value_or(ferry::http_error("", 0, "", true)).transient(), when);
    }
    BOOST_TEST(ranged(1000) == body.substr(10, 1000));
    BOOST_TEST(s.gets.load() == 1);
}

// A ranged fill of a body with no announced length stops at max_object_bytes: the range is
// answered from the network, nothing stays in the folder (no entry, no temporary file), and
// not_kept counts it — a body that never ends cannot fill the disk.
BOOST_AUTO_TEST_CASE(a_ranged_fill_stops_at_max_object_bytes) {
    temp_folder dir("ferry-cache-object-cap");
    const std::string body = random_body(3 << 20, 15);
    ferry_test::http_server unsized([&](const ferry_test::http_request&) {
        return ferry_test::http_response{.body = body, .content_length = -2};
    });
    const auto cache =
        ferry::ops::open_cache({.dir = dir.path(), .max_object_bytes = std::uint64_t{1} << 20});
    BOOST_TEST(read_range(unsized.url("/endless"), cache, 2000000, 100) ==
               body.substr(2000000, 100));
    BOOST_TEST(files_in(dir.path()).empty(), "kept: " << files_in(dir.path()).size());
    BOOST_TEST(cache->stats().not_kept == 1U);
    BOOST_TEST(cache->stats().bytes_stored == 0U);
}

// A folder that cannot be created is an io_error at open_cache naming it and the cause.
BOOST_AUTO_TEST_CASE(an_unusable_folder_fails_at_open) {
    temp_folder dir("ferry-cache-unusable");
    { std::ofstream(dir / "file") << "x"; }
    const auto bad = dir / "file" / "cache";
    const auto e = ferry_test::expect_throw<ferry::io_error>(
        [&] { (void)ferry::ops::open_cache({.dir = bad}); });
    BOOST_TEST(e.what().find("open_cache: '" + bad.string() + "'") != std::string::npos, e.what());
    BOOST_TEST(e.what().find("Not a directory") != std::string::npos, e.what());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
