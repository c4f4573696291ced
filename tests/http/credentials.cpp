// SPDX-License-Identifier: Apache-2.0
/// \file
/// Credentials stay with the origin they were meant for: a signed S3 request is not redirected to
/// another origin, a request that carries a credential is not redirected to plain http (two
/// servers on 127.0.0.1, two ports: two origins; the second records what reached it), and no URL
/// credential reaches a message, `url()` or `http_hosts()`.
#include <boost/test/unit_test.hpp>
#include <ferry/http.hpp>
#include <ferry/http_client.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "s3_support.hpp"

using ferry_test::as_string;
using ferry_test::contains;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::key_id;
using ferry_test::recording_server;
using ferry_test::scoped_env;
using ferry_test::secret;

namespace credentials_test {

constexpr const char* token = "SESSIONTOKEN123";

/// "127.0.0.1:PORT" of a server: how messages name its origin.
std::string origin_of(const recording_server& s) {
    return "127.0.0.1:" + std::to_string(s.server.port());
}

}  // namespace credentials_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(credentials)
using namespace credentials_test;

// A signed S3 request answered with a 302 to another origin is not followed: the other server
// never sees the session token (or anything), and the s3_error says where S3 pointed and what
// to do; a 307 naming the bucket's region says which region to set.
BOOST_AUTO_TEST_CASE(a_signed_s3_request_is_not_redirected_to_another_origin) {
    recording_server other([](const http_request&) { return http_response{.body = "stolen"}; });
    const std::string elsewhere = other.server.url("/b/k?X-Amz-Signature=LOCATIONSIG");
    recording_server store([&](const http_request& r) {
        if (r.target == "/b/regional") {
            return http_response{
                .status = 307,
                .headers = {{"Location", elsewhere}, {"x-amz-bucket-region", "eu-west-1"}}};
        }
        return http_response{.status = 302, .headers = {{"Location", elsewhere}}};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", store.server.url("")},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret},
                          {"AWS_SESSION_TOKEN", token}});
    const auto e =
        ferry_test::expect_throw<ferry::s3_error>([&] { (void)ferry::ops::read_url("s3://b/k"); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(other.requests().empty());
    BOOST_TEST(e->status() == 302);
    BOOST_TEST(!e->transient());
    const std::string what = e->what();
    BOOST_TEST(contains(what, "read_url: 's3://b/k': HTTP 302 Found: redirected to 'http://" +
                                  origin_of(other) + "/b/k?X-Amz-Signature=REDACTED'"),
               what);
    BOOST_TEST(contains(what, "a signed S3 request is not redirected to another origin"), what);
    BOOST_TEST(!contains(what, "LOCATIONSIG"));

    const auto regional = ferry_test::expect_throw<ferry::s3_error>(
        [&] { (void)ferry::ops::read_url("s3://b/regional"); });
    BOOST_REQUIRE(regional.has_value());
    BOOST_TEST(other.requests().empty());
    BOOST_TEST(contains(regional->what(), "the bucket is in region 'eu-west-1'"), regional->what());
    BOOST_TEST(contains(regional->what(), "set AWS_REGION=eu-west-1"), regional->what());

    // http_client runs the same transfer: the same refusal, word for word.
    ferry::ops::http_client client;
    const auto by_client =
        ferry_test::expect_throw<ferry::s3_error>([&] { (void)client.fetch("s3://b/k").get(); });
    BOOST_TEST(by_client.what() == what);
    BOOST_TEST(other.requests().empty());
}

// A request that carries a credential (an Authorization or API-key header, a user:password@) is
// not redirected to plain http: the second server sees nothing and the error says why; without
// credentials the same redirect is followed.
BOOST_AUTO_TEST_CASE(a_request_with_credentials_is_not_redirected_to_plain_http) {
    recording_server other([](const http_request& r) {
        return http_response{.body = "from other: " + r.header("x-api-key")};
    });
    recording_server first([&](const http_request&) {
        return http_response{.status = 302, .headers = {{"Location", other.server.url("/x")}}};
    });
    const std::string url = first.server.url("/x");
    BOOST_TEST(as_string(ferry::ops::read_url(url)) == "from other: ");
    BOOST_TEST(other.requests().size() == 1U);

    const ferry::http_options with_key{.headers = {"X-Api-Key: APIKEY42"}};
    const auto e = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)ferry::ops::read_url(url, with_key); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(other.requests().size() == 1U);  // no second request reached it
    BOOST_TEST(e->status() == 302);
    BOOST_TEST(!e->transient());
    BOOST_TEST(contains(e->what(), "read_url: '" + url + "': HTTP 302 Found: redirected to '" +
                                       other.server.url("/x") +
                                       "': not followed: the request carries credentials "
                                       "(X-Api-Key), which never go to plain http"),
               e->what());
    BOOST_TEST(!contains(e->what(), "APIKEY42"));

    const auto bearer = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)ferry::ops::read_url(url, {.headers = {"authorization: Bearer BEARER42"}}); });
    BOOST_TEST(contains(bearer.what(), "carries credentials (authorization)"), bearer.what());
    std::string with_password = url;
    with_password.insert(with_password.find("://") + 3, "user:PASSWORD42@");
    const auto password = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)ferry::ops::read_url(with_password); });
    BOOST_TEST(contains(password.what(), "carries credentials (user:password@)"), password.what());
    BOOST_TEST(!contains(password.what(), "PASSWORD42"));
    ferry::ops::http_client client;
    const auto by_client = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)client.fetch(url, with_key).get(); });
    BOOST_TEST(by_client.what() == e.what());
    BOOST_TEST(other.requests().size() == 1U);
}

// A URL with a NUL byte is refused without showing its credentials: what() and url() redact the
// signature and show the NUL as an escape, not as the raw byte.
BOOST_AUTO_TEST_CASE(a_url_with_a_nul_shows_no_credentials) {
    using namespace std::string_literals;
    const std::string url = "https://h/x.jpg?X-Amz-Signature=SIG123\0tail&a=1"s;
    const auto e =
        ferry_test::expect_throw<ferry::http_error>([&] { (void)ferry::ops::read_url(url); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(!e->transient());
    BOOST_TEST(!contains(e->what(), "SIG123"), e->what());
    BOOST_TEST(!contains(e->url(), "SIG123"), e->url());
    BOOST_TEST(e->url().find('\0') == std::string::npos);
    BOOST_TEST(std::string_view(e->what()).find('\0') == std::string_view::npos);
    BOOST_TEST(contains(e->what(), "X-Amz-Signature=REDACTED"), e->what());
    BOOST_TEST(contains(e->what(), "URL contains a NUL character"), e->what());
    // The same URL through http_client fails its item the same way.
    ferry::ops::http_client client;
    const auto by_client =
        ferry_test::expect_throw<ferry::http_error>([&] { (void)client.fetch(url).get(); });
    BOOST_TEST(by_client.what() == e.what());
}

// http_hosts() names hosts as scheme://host:port: a user:password@ or a token in the user part
// of the URL is not part of it.
BOOST_AUTO_TEST_CASE(http_hosts_name_no_user_or_password) {
    recording_server s([](const http_request&) { return http_response{.body = "ok"}; });
    std::string with_password = s.server.url("/a");
    with_password.insert(with_password.find("://") + 3, "user:PASSWORD42@");
    std::string with_token = s.server.url("/b");
    with_token.insert(with_token.find("://") + 3, "ghp_TOKEN42@");
    BOOST_TEST(as_string(ferry::ops::read_url(with_password)) == "ok");
    BOOST_TEST(as_string(ferry::ops::read_url(with_token)) == "ok");
    bool listed = false;
    for (const auto& h : ferry::ops::http_hosts()) {
        BOOST_TEST(!contains(h.host, "PASSWORD42"), h.host);
        BOOST_TEST(!contains(h.host, "TOKEN42"), h.host);
        BOOST_TEST(!contains(h.host, "@"), h.host);
        listed = listed || h.host == s.server.url("");
    }
    BOOST_TEST(listed);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
