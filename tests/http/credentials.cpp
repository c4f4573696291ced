// SPDX-License-Identifier: Apache-2.0
/// \file
/// Credentials stay with the origin they were meant for: a signed S3 request is not redirected to
/// another origin, a request that carries a credential is not redirected to plain http (two
/// servers on 127.0.0.1, two ports: two origins; the second records what reached it), and no URL
/// credential reaches a message, `url()` or `http_hosts()`.
#include <boost/test/unit_test.hpp>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <ferry/http_client.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "../support/temp_folder.hpp"
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

/// `text` as XML writes it in an element (S3 escapes `&` in the URLs its errors echo).
std::string xml_escaped(const std::string& text) {
    std::string out;
    for (const char c : text) out += c == '&' ? std::string("&amp;") : std::string(1, c);
    return out;
}

/// The secrets `an_error_body_echoing_credentials_shows_none_of_them` sends and gets echoed.
const std::vector<std::string> echoed_secrets{"AKIDECHO", "SIGECHO", "QUxJQ0U6UFdFQ0hP"};

/// Fails the test for each of `echoed_secrets` that `text` holds.
void expect_no_echoed_secret(const std::string& text, const std::string& where) {
    for (const auto& secret : echoed_secrets) {
        BOOST_TEST(!contains(text, secret), where << " holds " << secret << ": " << text);
    }
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
        if (r.target == "/bkt/regional") {
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
    const auto e = ferry_test::expect_throw<ferry::s3_error>(
        [&] { (void)ferry::ops::read_url("s3://bkt/k"); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(other.requests().empty());
    BOOST_TEST(e->status() == 302);
    BOOST_TEST(!e->transient());
    const std::string what = e->what();
    BOOST_TEST(contains(what, "read_url: 's3://bkt/k': HTTP 302 Found: redirected to 'http://" +
                                  origin_of(other) + "/b/k?X-Amz-Signature=REDACTED'"),
               what);
    BOOST_TEST(contains(what, "a signed S3 request is not redirected to another origin"), what);
    BOOST_TEST(!contains(what, "LOCATIONSIG"));

    const auto regional = ferry_test::expect_throw<ferry::s3_error>(
        [&] { (void)ferry::ops::read_url("s3://bkt/regional"); });
    BOOST_REQUIRE(regional.has_value());
    BOOST_TEST(other.requests().empty());
    BOOST_TEST(contains(regional->what(), "the bucket is in region 'eu-west-1'"), regional->what());
    BOOST_TEST(contains(regional->what(), "set AWS_REGION=eu-west-1"), regional->what());

    // http_client runs the same transfer: the same refusal, word for word.
    ferry::ops::http_client client;
    const auto by_client =
        ferry_test::expect_throw<ferry::s3_error>([&] { (void)client.fetch("s3://bkt/k").get(); });
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

// A 403 whose body echoes the presigned URL (S3-style XML, `&` as `&amp;`) and the request's
// `Authorization: Basic` header: what(), failures(), the log and the quarantine file name the
// status and show the body with every echoed credential REDACTED.
BOOST_AUTO_TEST_CASE(an_error_body_echoing_credentials_shows_none_of_them) {
    recording_server s([](const http_request& r) {
        return http_response{.status = 403,
                             .body = "<Error><Code>AccessDenied</Code><URL>" +
                                     xml_escaped(r.target) + "</URL></Error>\necho: " +
                                     "Authorization: " + r.header("authorization") + "\n"};
    });
    const std::string url =
        s.server.url("/b/o?X-Amz-Credential=AKIDECHO%2F20260101&X-Amz-Signature=SIGECHO");
    const ferry::http_options basic{.headers = {"Authorization: Basic QUxJQ0U6UFdFQ0hP"}};
    const auto e = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)ferry::ops::read_url(url, basic); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(s.requests().size() == 1U);
    BOOST_TEST(e->status() == 403);
    const std::string what = e->what();
    expect_no_echoed_secret(what, "what()");
    BOOST_TEST(contains(what,
                        "HTTP 403 Forbidden: <Error><Code>AccessDenied</Code><URL>/b/o?"
                        "X-Amz-Credential=REDACTED&amp;X-Amz-Signature=REDACTED</URL>"
                        "</Error> echo: Authorization: Basic REDACTED"),
               what);

    const ferry_test::temp_folder dir("ferry-http-echo");
    const std::filesystem::path q = dir / "quarantine.jsonl";
    std::mutex m;
    std::vector<std::string> lines;
    {
        auto p = ferry::from(std::vector<std::string>{url})
                     .map([&](const std::string& u) { return ferry::ops::read_url(u, basic); },
                          {.name = "fetch", .on_error = ferry::skip, .executor = ferry::io})
                     .build({.threads = 1,
                             .logger =
                                 [&](ferry::log_level, std::string_view line) {
                                     const std::lock_guard lock(m);
                                     lines.emplace_back(line);
                                 },
                             .max_epoch_failure_rate = 1,
                             .quarantine = q});
        for (const auto& b : p) BOOST_TEST(b.size() == 0U);
        BOOST_REQUIRE(p.failures().size() == 1U);
        expect_no_echoed_secret(p.failures()[0].message, "failure::message");
        expect_no_echoed_secret(p.failures()[0].input, "failure::input");
        BOOST_TEST(contains(p.failures()[0].message, "Authorization: Basic REDACTED"),
                   p.failures()[0].message);
    }
    BOOST_TEST(!lines.empty());
    for (const auto& l : lines) expect_no_echoed_secret(l, "log line");
    std::ifstream in(q);
    const std::string quarantined{std::istreambuf_iterator<char>(in), {}};
    BOOST_TEST(contains(quarantined, "\"stage\": \"fetch\""), quarantined);
    expect_no_echoed_secret(quarantined, "quarantine file");
}

// A URL without a scheme (curl would guess http and send its user:password in the clear) is
// refused before any request: the error names the schemes read_url accepts and shows the URL
// with its password REDACTED; http_client refuses it the same way.
BOOST_AUTO_TEST_CASE(a_url_without_a_scheme_is_refused_before_any_request) {
    recording_server s([](const http_request&) { return http_response{.body = "sent"}; });
    const std::string url = "alice:PASSWORD123@" + origin_of(s) + "/x";
    const auto e =
        ferry_test::expect_throw<ferry::http_error>([&] { (void)ferry::ops::read_url(url); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(s.requests().empty());
    BOOST_TEST(!e->transient());
    BOOST_TEST(e->status() == 0);
    const std::string shown = "alice:REDACTED@" + origin_of(s) + "/x";
    BOOST_TEST(e->url() == shown);
    BOOST_TEST(std::string(e->what()) ==
                   "read_url: '" + shown +
                       "': the URL has no scheme: read_url reads http://, https://, file:// and "
                       "s3:// URLs (without one, curl would guess http and send any credentials "
                       "in the clear)",
               e->what());
    BOOST_TEST(!contains(e->what(), "PASSWORD123"));
    BOOST_TEST(!contains(e->url(), "PASSWORD123"));

    // Other forms curl reads as http, and schemes curl has but read_url does not use.
    for (const std::string& other :
         {"//alice:PASSWORD123@" + origin_of(s) + "/x", "http:/" + origin_of(s) + "/x",
          "http:alice:PASSWORD123@" + origin_of(s) + "/x", "ftp://" + origin_of(s) + "/x"}) {
        const auto refused =
            ferry_test::expect_throw<ferry::http_error>([&] { (void)ferry::ops::read_url(other); });
        BOOST_REQUIRE(refused.has_value());
        BOOST_TEST(contains(refused->what(), "read_url reads http://, https://, file:// and s3://"),
                   refused->what());
        BOOST_TEST(!contains(refused->what(), "PASSWORD123"), refused->what());
    }
    const std::string ftp = ferry_test::expect_throw<ferry::http_error>([&] {
                                (void)ferry::ops::read_url("ftp://" + origin_of(s) + "/x");
                            }).what();
    BOOST_TEST(contains(ftp, "the scheme 'ftp' is not supported: read_url reads"), ftp);
    const std::string one_slash = ferry_test::expect_throw<ferry::http_error>([&] {
                                      (void)ferry::ops::read_url("http:/" + origin_of(s) + "/x");
                                  }).what();
    BOOST_TEST(contains(one_slash, "the scheme 'http:' is not followed by '//': read_url reads"),
               one_slash);
    ferry::ops::http_client client;
    const auto by_client =
        ferry_test::expect_throw<ferry::http_error>([&] { (void)client.fetch(url).get(); });
    BOOST_TEST(by_client.what() == e.what());
    BOOST_TEST(s.requests().empty());
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
