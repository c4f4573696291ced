// SPDX-License-Identifier: Apache-2.0
/// \file
/// The cache and credentials: an entry fetched with a credential is served only to reads with
/// the same identity (the user of `user:password@` or of HTTP Basic, the S3 access key id,
/// a presigned URL's credential), reads with a credential of unknown identity (a bearer token)
/// bypass the cache unless the user opts in, and nothing secret reaches the folder. The server
/// answers each read with the credential it saw, so a read served someone else's entry shows.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <ferry/cache.hpp>
#include <ferry/http.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cache_support.hpp"
#include "s3_support.hpp"

using ferry_test::as_string;
using ferry_test::file_text;
using ferry_test::files_in;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using ferry_test::scoped_env;
using ferry_test::temp_folder;

namespace cache_credentials_test {

/// Answers every GET with the `Authorization` header it came with (and its path), counting them.
struct credential_echo {
    std::atomic<int> gets{0};
    http_server server{[this](const http_request& r) {
        ++gets;
        return http_response{.body = "for [" + r.header("authorization") + "] " +
                                     r.target.substr(0, r.target.find('?'))};
    }};
    /// `http://<user_part>127.0.0.1:<port><path>`.
    [[nodiscard]] std::string url(const std::string& path,
                                  const std::string& user_part = {}) const {
        return "http://" + user_part + "127.0.0.1:" + std::to_string(server.port()) + path;
    }
};

std::string read_cached(const std::string& url, const std::shared_ptr<ferry::object_cache>& cache,
                        std::vector<std::string> headers = {}) {
    return as_string(ferry::ops::read_url(url, {.headers = std::move(headers), .cache = cache}));
}

/// What the cache itself wrote to `dir`: every file's name, every entry's record (the text after
/// the object's bytes: key, size, ETag) and the lock file. The objects' bytes, which here echo
/// the credentials the server saw, are left out.
std::string records_in(const std::filesystem::path& dir) {
    std::string all;
    for (const auto& name : files_in(dir)) {
        const std::string text = file_text(dir / name);
        all += name;
        if (text.size() < 16) continue;
        std::uint64_t length = 0;
        for (int i = 7; i >= 0; --i) {
            length = (length << 8) | static_cast<unsigned char>(text[text.size() - 16 + i]);
        }
        if (length <= text.size() - 16) all += text.substr(text.size() - 16 - length, length);
    }
    return all + file_text(dir / ".lock");
}

}  // namespace cache_credentials_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(cache)
using namespace cache_credentials_test;

// `user:password@` keys the entry by its user: alice's entry is not served to an anonymous read
// nor to bob, it is to alice with another password and to alice by HTTP Basic (the same
// credential curl sends), and neither the user nor a password reaches the folder.
BOOST_AUTO_TEST_CASE(an_entry_fetched_as_a_user_is_served_to_that_user_only) {
    temp_folder dir("ferry-cache-users");
    credential_echo s;
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const std::string alice = read_cached(s.url("/private", "alice:hunter2@"), cache);
    BOOST_TEST(alice == "for [Basic YWxpY2U6aHVudGVyMg==] /private");
    BOOST_TEST(read_cached(s.url("/private"), cache) == "for [] /private");
    BOOST_TEST(read_cached(s.url("/private", "bob:hunter2@"), cache) ==
               "for [Basic Ym9iOmh1bnRlcjI=] /private");
    BOOST_TEST(s.gets.load() == 3);
    BOOST_TEST(read_cached(s.url("/private", "alice:other@"), cache) == alice);
    BOOST_TEST(read_cached(s.url("/private"), cache,
                           {"Authorization: Basic YWxpY2U6aHVudGVyMg=="}) == alice);
    BOOST_TEST(read_cached(s.url("/private"), cache) == "for [] /private");
    BOOST_TEST(s.gets.load() == 3);
    BOOST_TEST(cache->entry_path(s.url("/private", "alice:x@")) !=
               cache->entry_path(s.url("/private")));
    BOOST_TEST(files_in(dir.path()).size() == 3U);
    const std::string all = records_in(dir.path());
    for (const std::string secret : {"alice", "bob", "hunter2", "YWxpY2U6aHVudGVyMg"}) {
        BOOST_TEST(all.find(secret) == std::string::npos, secret << " reached the folder");
    }
}

// A bearer token says nothing of whose it is: such reads bypass the cache (each asks the server,
// each gets its own answer, the folder stays empty, bypassed counts them) unless
// cache_unidentified is set; then token reads share one entry, which anonymous reads never get.
BOOST_AUTO_TEST_CASE(reads_with_a_token_of_unknown_identity_bypass_the_cache) {
    temp_folder dir("ferry-cache-tokens");
    credential_echo s;
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    BOOST_TEST(read_cached(s.url("/t"), cache, {"Authorization: Bearer TOKEN-A"}) ==
               "for [Bearer TOKEN-A] /t");
    BOOST_TEST(read_cached(s.url("/t"), cache, {"Authorization: Bearer TOKEN-B"}) ==
               "for [Bearer TOKEN-B] /t");
    BOOST_TEST(read_cached(s.url("/t"), cache, {"X-Api-Key: KEY-C"}) == "for [] /t");
    BOOST_TEST(read_cached(s.url("/t", "ghp_TOKEND@"), cache) == "for [Basic Z2hwX1RPS0VORDo=] /t");
    BOOST_TEST(read_cached(s.url("/t?access_token=TOKEN-E"), cache) == "for [] /t");
    BOOST_TEST(s.gets.load() == 5);
    BOOST_TEST(cache->stats().bypassed == 5U);
    BOOST_TEST(files_in(dir.path()).empty());

    const auto opted = ferry::ops::open_cache({.dir = dir.path(), .cache_unidentified = true});
    BOOST_TEST(read_cached(s.url("/t"), opted, {"Authorization: Bearer TOKEN-A"}) ==
               "for [Bearer TOKEN-A] /t");
    BOOST_TEST(read_cached(s.url("/t"), opted, {"Authorization: Bearer TOKEN-B"}) ==
               "for [Bearer TOKEN-A] /t");
    BOOST_TEST(read_cached(s.url("/t"), opted) == "for [] /t");
    BOOST_TEST(s.gets.load() == 7);
    const std::string all = records_in(dir.path());
    BOOST_TEST(all.find("TOKEN") == std::string::npos, "a token reached the folder");
}

// S3 reads are keyed by the access key id they are signed with (never the secret): another key
// id fetches again, the same key id with another secret hits, an unsigned read does not get a
// signed read's entry; presigned URLs are keyed by X-Amz-Credential's key id the same way.
BOOST_AUTO_TEST_CASE(s3_entries_are_keyed_by_access_key_id) {
    temp_folder dir("ferry-cache-s3-identity");
    credential_echo s;
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const auto as = [&](const std::optional<std::string>& key, const std::string& secret) {
        const scoped_env env({{"AWS_ENDPOINT_URL", s.server.url("")},
                              {"AWS_ACCESS_KEY_ID", key},
                              {"AWS_SECRET_ACCESS_KEY", secret},
                              {"AWS_SHARED_CREDENTIALS_FILE", (dir / "none").string()}});
        return read_cached("s3://bucket/obj", cache);
    };
    const std::string one = as("AKIDONE", "SECRETONE");
    BOOST_TEST(one.find("Credential=AKIDONE/") != std::string::npos, one);
    BOOST_TEST(as("AKIDTWO", "SECRETTWO").find("Credential=AKIDTWO/") != std::string::npos);
    BOOST_TEST(as(std::nullopt, "") == "for [] /bucket/obj");
    BOOST_TEST(s.gets.load() == 3);
    BOOST_TEST(as("AKIDONE", "ROTATED") == one);
    BOOST_TEST(s.gets.load() == 3);

    const auto presigned = [&](const std::string& key_id, const std::string& sig) {
        return s.url("/bucket/p.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + key_id +
                     "%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z"
                     "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=" +
                     sig);
    };
    (void)read_cached(presigned("AKIDONE", "sig1"), cache);
    (void)read_cached(presigned("AKIDONE", "sig2"), cache);
    BOOST_TEST(s.gets.load() == 4);
    (void)read_cached(presigned("AKIDTWO", "sig3"), cache);
    (void)read_cached(s.url("/bucket/p.jpg"), cache);
    BOOST_TEST(s.gets.load() == 6);
    const std::string all = records_in(dir.path());
    for (const std::string secret : {"AKIDONE", "AKIDTWO", "SECRET", "ROTATED", "sig1"}) {
        BOOST_TEST(all.find(secret) == std::string::npos, secret << " reached the folder");
    }
}

// A presigned URL whose parameter names are percent-encoded (`X%2DAmz%2DSignature`, as a server
// decodes them) is the same object under every signature: one entry and one GET, and neither a
// signature nor the key id reaches the folder.
BOOST_AUTO_TEST_CASE(percent_encoded_presigning_is_not_part_of_the_key) {
    temp_folder dir("ferry-cache-encoded-names");
    credential_echo s;
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const auto presigned = [&](const std::string& sig) {
        return s.url(
            "/bucket/e.jpg?X%2DAmz%2DCredential=AKIDENC%2F20260101%2Fus-east-1%2Fs3"
            "%2Faws4_request&X%2DAmz%2DDate=20260101T000000Z&x%2damz%2dsignature=" +
            sig);
    };
    const std::string first = read_cached(presigned("SIGENCONE"), cache);
    BOOST_TEST(first == "for [] /bucket/e.jpg");
    BOOST_TEST(read_cached(presigned("SIGENCTWO"), cache) == first);
    BOOST_TEST(s.gets.load() == 1);
    BOOST_TEST(cache->entry_path(presigned("SIGENCONE")) ==
               cache->entry_path(presigned("SIGENCTHREE")));
    BOOST_TEST(files_in(dir.path()).size() == 1U);
    const std::string all = records_in(dir.path());
    for (const std::string secret : {"SIGENC", "AKIDENC"}) {
        BOOST_TEST(all.find(secret) == std::string::npos, secret << " reached the folder");
    }
}

// A parameter that only looks like a credential (`key=`, `continuation-token=`) may also pick the
// object, and so may a URL nested in a parameter: different values are different entries, the
// same value is one entry, and no value reaches the folder (a digest of it stands in the key).
BOOST_AUTO_TEST_CASE(credential_shaped_parameters_keep_objects_apart_without_their_values) {
    temp_folder dir("ferry-cache-shaped-names");
    credential_echo s;
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const std::vector<std::string> urls{
        s.url("/k?key=KEYVALUEONE"),
        s.url("/k?key=KEYVALUETWO"),
        s.url("/l?continuation-token=PAGETOKENONE"),
        s.url("/l?continuation-token=PAGETOKENTWO"),
        s.url("/n?next=https%3A%2F%2Fh%2Fo%3Fa%3D1%26X-Amz-Signature%3DNESTEDSIGONE"),
        s.url("/n?next=https%3A%2F%2Fh%2Fo%3Fa%3D1%26X-Amz-Signature%3DNESTEDSIGTWO")};
    for (const auto& url : urls) (void)read_cached(url, cache);
    BOOST_TEST(s.gets.load() == 6);
    for (const auto& url : urls) (void)read_cached(url, cache);
    BOOST_TEST(s.gets.load() == 6);
    BOOST_TEST(files_in(dir.path()).size() == 6U);
    const std::string all = records_in(dir.path());
    for (const std::string secret : {"KEYVALUE", "PAGETOKEN", "NESTEDSIG"}) {
        BOOST_TEST(all.find(secret) == std::string::npos, secret << " reached the folder");
    }
    BOOST_TEST(all.find("/k?key=") != std::string::npos, all);
}

// An entry written by a ferry that did not key by identity (record format 1) may hold an object
// fetched with someone's credentials: it is not served, but fetched again.
BOOST_AUTO_TEST_CASE(an_entry_of_the_old_format_is_not_served) {
    temp_folder dir("ferry-cache-old-format");
    credential_echo s;
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const std::string url = s.url("/old");
    const std::string object = "alice's private bytes";
    const std::string record = "ferry-cache 1\n" + std::to_string(object.size()) + "\n\n" + url;
    std::string footer(8, '\0');
    for (std::size_t i = 0; i < 8; ++i)
        footer[i] = static_cast<char>((record.size() >> (8 * i)) & 0xFF);
    {
        std::ofstream out(cache->entry_path(url), std::ios::binary);
        out << object << record << footer << "FRYCACH1";
    }
    BOOST_TEST(read_cached(url, cache) == "for [] /old");
    BOOST_TEST(s.gets.load() == 1);
    BOOST_TEST(cache->stats().invalid_entries == 1U);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
