// SPDX-License-Identifier: Apache-2.0
/// \file
/// S3 errors that say what to do, against the in-process server: a wrong region names the region
/// to set, a skewed clock says by how much (and is not retried), credentials asked for but not
/// found and bucket names S3 does not allow are errors before any request, and texts from the
/// store cannot forge log lines.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ctime>
#include <ferry/http.hpp>
#include <ferry/http_client.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
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

namespace s3_errors_test {

std::string error_doc(const std::string& code, const std::string& message,
                      const std::string& more = "") {
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>" +
           message + "</Message>" + more + "<RequestId>4442587FB7D0A2F9</RequestId></Error>";
}

/// `t` as an HTTP-date ("Sat, 05 Dec 2026 06:00:00 GMT").
std::string http_date(std::time_t t) {
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char out[64];
    std::strftime(out, sizeof out, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return out;
}

/// The rules every refusal of a bucket name ends with.
constexpr const char* bucket_rules =
    "(S3's rules: 3 to 63 characters of a-z, 0-9, '.' and '-', beginning and ending with a "
    "letter or a digit, no '..', not an IP address)";

}  // namespace s3_errors_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(s3_errors)
using namespace s3_errors_test;

// A 301 PermanentRedirect without a Location (a bucket in another region) is an s3_error that
// names the region x-amz-bucket-region gives and the setting to change, signed or not.
BOOST_AUTO_TEST_CASE(a_wrong_region_says_which_region_to_set) {
    recording_server store([](const http_request&) {
        return http_response{
            .status = 301,
            .body =
                error_doc("PermanentRedirect",
                          "The bucket you are attempting to access must be addressed using "
                          "the specified endpoint.",
                          "<Endpoint>b.s3.eu-west-1.amazonaws.com</Endpoint><Bucket>b</Bucket>"),
            .headers = {{"x-amz-bucket-region", "eu-west-1"}}};
    });
    for (const bool signed_request : {true, false}) {
        std::vector<std::pair<std::string, std::optional<std::string>>> vars{
            {"AWS_ENDPOINT_URL", store.server.url("")}, {"AWS_REGION", "us-west-2"}};
        if (signed_request) {
            vars.emplace_back("AWS_ACCESS_KEY_ID", key_id);
            vars.emplace_back("AWS_SECRET_ACCESS_KEY", secret);
        }
        const scoped_env env(vars);
        const auto e = ferry_test::expect_throw<ferry::s3_error>(
            [&] { (void)ferry::ops::read_url("s3://bkt/k"); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(e->code() == "PermanentRedirect");
        BOOST_TEST(e->status() == 301);
        BOOST_TEST(!e->transient());
        BOOST_TEST(
            contains(e->what(),
                     "read_url: 's3://bkt/k': HTTP 301 Moved Permanently: PermanentRedirect: "
                     "The bucket you are attempting"),
            e->what());
        BOOST_TEST(contains(e->what(),
                            "the bucket is in region 'eu-west-1', not 'us-west-2': set "
                            "AWS_REGION=eu-west-1"),
                   e->what());
    }
}

// RequestTimeTooSkewed is not transient (the clock stays wrong) and says by how much the clock is
// off: from S3's <RequestTime> and <ServerTime>, else from the Date header against this clock.
BOOST_AUTO_TEST_CASE(a_skewed_clock_is_not_transient_and_says_by_how_much) {
    recording_server store([](const http_request& r) {
        const std::string message =
            "The difference between the request time and the current "
            "time is too large.";
        if (r.target == "/bkt/times") {
            return http_response{
                .status = 403,
                .body = error_doc("RequestTimeTooSkewed", message,
                                  "<RequestTime>20261205T060000Z</RequestTime><ServerTime>2026-12-"
                                  "05T06:20:00Z</ServerTime><MaxAllowedSkewMilliseconds>900000</"
                                  "MaxAllowedSkewMilliseconds>")};
        }
        // Only the Date header: the store's clock an hour behind this one.
        return http_response{.status = 403,
                             .body = error_doc("RequestTimeTooSkewed", message),
                             .headers = {{"Date", http_date(std::time(nullptr) - 3600)}}};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", store.server.url("")},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret}});
    const auto times = ferry_test::expect_throw<ferry::s3_error>(
        [&] { (void)ferry::ops::read_url("s3://bkt/times"); });
    BOOST_REQUIRE(times.has_value());
    BOOST_TEST(times->code() == "RequestTimeTooSkewed");
    BOOST_TEST(!times->transient());
    BOOST_TEST(contains(times->what(), "this machine's clock is 1200 s behind the store's"),
               times->what());
    BOOST_TEST(contains(times->what(), "set the clock right"), times->what());

    const auto dated = ferry_test::expect_throw<ferry::s3_error>(
        [&] { (void)ferry::ops::read_url("s3://bkt/dated"); });
    BOOST_REQUIRE(dated.has_value());
    BOOST_TEST(!dated->transient());
    // The Date header has whole seconds: 3600 s, or 3601 s when a second turned meanwhile.
    BOOST_TEST((contains(dated->what(), "this machine's clock is 3600 s ahead of the store's") ||
                contains(dated->what(), "this machine's clock is 3601 s ahead of the store's")),
               dated->what());
}

// Credentials asked for but not found — a key without its secret, a secret without its key, an
// AWS_PROFILE the credentials file does not have (or no file), a profile without a secret — are
// an error that says what is missing, before any request; none of it goes out unsigned.
BOOST_AUTO_TEST_CASE(credentials_asked_for_but_missing_are_an_error) {
    recording_server store([](const http_request&) { return http_response{.body = "x"}; });
    const ferry_test::temp_folder dir("ferry-aws-partial");
    const auto file = dir / "credentials";
    std::ofstream(file) << "[default]\naws_access_key_id = " << key_id
                        << "\n[only-key]\naws_access_key_id = " << key_id << "\n";
    const std::string endpoint = store.server.url("");
    const auto expect_refused = [&](const std::string& says) {
        const auto e = ferry_test::expect_throw<ferry::invalid_argument>(
            [&] { (void)ferry::ops::read_url("s3://bkt/k"); }, says);
        BOOST_TEST(contains(e.what(), "read_url: 's3://bkt/k': "), e.what());
        BOOST_TEST(contains(e.what(), says), e.what());
        BOOST_TEST(!contains(e.what(), key_id), e.what());
        BOOST_TEST(store.requests().empty());
    };
    {
        const scoped_env env({{"AWS_ENDPOINT_URL", endpoint}, {"AWS_ACCESS_KEY_ID", key_id}});
        expect_refused("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    }
    {
        const scoped_env env({{"AWS_ENDPOINT_URL", endpoint}, {"AWS_SECRET_ACCESS_KEY", secret}});
        expect_refused("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
    }
    {
        const scoped_env env({{"AWS_ENDPOINT_URL", endpoint},
                              {"AWS_SHARED_CREDENTIALS_FILE", file.string()},
                              {"AWS_PROFILE", "nope"}});
        expect_refused("AWS_PROFILE names profile 'nope', which '" + file.string() +
                       "' does not have");
    }
    {
        const scoped_env env({{"AWS_ENDPOINT_URL", endpoint},
                              {"AWS_SHARED_CREDENTIALS_FILE", file.string() + ".missing"},
                              {"AWS_PROFILE", "nope"}});
        expect_refused("AWS_PROFILE names profile 'nope', but '" + file.string() +
                       ".missing' cannot be read");
    }
    {
        const scoped_env env({{"AWS_ENDPOINT_URL", endpoint},
                              {"AWS_SHARED_CREDENTIALS_FILE", file.string()},
                              {"AWS_PROFILE", "only-key"}});
        expect_refused("profile 'only-key' in '" + file.string() +
                       "' has no aws_secret_access_key");
    }
    {
        // The default profile, not asked for by name, is still read when it is there.
        const scoped_env env(
            {{"AWS_ENDPOINT_URL", endpoint}, {"AWS_SHARED_CREDENTIALS_FILE", file.string()}});
        expect_refused("profile 'default' in '" + file.string() + "' has no aws_secret_access_key");
    }
    std::filesystem::remove(file);
}

// S3's <Message> and the status line's reason are the store's texts: a newline or an escape
// sequence in them is shown escaped, so a message cannot forge a log line or colour a terminal.
// (An escape character inside the XML makes it no XML document: nothing of it is shown.)
BOOST_AUTO_TEST_CASE(store_texts_in_messages_are_escaped) {
    recording_server store([](const http_request& r) {
        const std::string message =
            r.target == "/bkt/esc" ? "Access Denied\x1b[2J" : "Access Denied\nERROR forged line";
        return http_response{.status = 403,
                             .body = error_doc("AccessDenied", message),
                             .reason = "Forbidden\x1b[0m"};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", store.server.url("")}});
    for (const char* url : {"s3://bkt/k", "s3://bkt/esc"}) {
        const auto e =
            ferry_test::expect_throw<ferry::s3_error>([&] { (void)ferry::ops::read_url(url); });
        BOOST_REQUIRE(e.has_value());
        const std::string what = e->what();
        BOOST_TEST(what.find('\n') == std::string::npos, what);
        BOOST_TEST(what.find('\x1b') == std::string::npos, what);
        BOOST_TEST(contains(what, "HTTP 403 Forbidden\\x1b[0m"), what);
    }
    const auto e = ferry_test::expect_throw<ferry::s3_error>(
        [&] { (void)ferry::ops::read_url("s3://bkt/k"); });
    BOOST_TEST(contains(e.what(),
                        "HTTP 403 Forbidden\\x1b[0m: AccessDenied: Access "
                        "Denied\\nERROR forged line"),
               e.what());
}

// Without an endpoint the bucket is part of the host name: s3://2130706433:PORT#/key sent the
// signed request, session token and all, to 127.0.0.1:PORT. A bucket name that is not one by
// S3's rules is an invalid_argument naming the rule before any connection, from read_url,
// list_objects and http_client alike.
BOOST_AUTO_TEST_CASE(a_bucket_name_that_picks_the_host_is_refused_before_any_request) {
    ferry_test::http_server trap([](const http_request&) { return http_response{.body = "x"}; });
    const scoped_env env({{"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret},
                          {"AWS_SESSION_TOKEN", "SESSIONTOKEN123"}});
    const std::string bucket = "2130706433:" + std::to_string(trap.port()) + "#";
    const std::string url = "s3://" + bucket + "/key";
    const std::string rule = "the bucket '" + bucket +
                             "' is not an S3 bucket name: it holds ':', which is not a lower-case "
                             "letter, a digit, '.' or '-' " +
                             bucket_rules;
    const auto read =
        ferry_test::expect_throw<ferry::invalid_argument>([&] { (void)ferry::ops::read_url(url); });
    BOOST_TEST(read.what() == "read_url: '" + url + "': " + rule);
    const auto listed = ferry_test::expect_throw<ferry::invalid_argument>(
        [&] { (void)ferry::sources::list_objects("s3://" + bucket + "/"); });
    BOOST_TEST(listed.what() == "list_objects: 's3://" + bucket + "/': " + rule);
    ferry::ops::http_client client;
    const auto fetched =
        ferry_test::expect_throw<ferry::invalid_argument>([&] { (void)client.fetch(url).get(); });
    BOOST_TEST(fetched.what() == "read_url: '" + url + "': " + rule);
    BOOST_TEST(trap.connections() == 0U);
}

// With an endpoint the bucket is the path's first segment: s3://../ok/x read <endpoint>/ok/x
// once curl removed the dot segments. A bucket of dots is refused before any request.
BOOST_AUTO_TEST_CASE(a_bucket_of_dot_segments_cannot_reach_another_path) {
    recording_server store(
        [](const http_request& r) { return http_response{.body = "object at " + r.target}; });
    const scoped_env env({{"AWS_ENDPOINT_URL", store.server.url("")},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret}});
    for (const std::string bucket : {"..", "."}) {
        const std::string url = "s3://" + bucket + "/ok/x";
        const auto e = ferry_test::expect_throw<ferry::invalid_argument>(
            [&] { (void)ferry::ops::read_url(url); }, url);
        BOOST_TEST(e.what() == "read_url: '" + url + "': the bucket '" + bucket +
                                   "' is not an S3 bucket name: it begins with '.' " +
                                   bucket_rules);
        const auto listed = ferry_test::expect_throw<ferry::invalid_argument>(
            [&] { (void)ferry::sources::list_objects("s3://" + bucket + "/ok/"); }, url);
        BOOST_TEST(contains(listed.what(), "it begins with '.'"), listed.what());
    }
    BOOST_TEST(store.requests().empty());
}

// Bucket names against S3's rules for general purpose buckets: the names S3 allows reach the
// endpoint as the path's first segment; every other one is an invalid_argument naming the rule
// it breaks (the name shown escaped), and no request is made for it.
BOOST_AUTO_TEST_CASE(bucket_names_follow_s3s_naming_rules) {
    recording_server store(
        [](const http_request& r) { return http_response{.body = "object at " + r.target}; });
    const scoped_env env({{"AWS_ENDPOINT_URL", store.server.url("")}});
    for (const std::string& good : std::vector<std::string>{
             "abc", "my-bucket", "my.bucket.name", "123", "a-b.c-d", "1.2.3", "1.2.3.4.5",
             "192.168.5.4a", "ferry--x-s3", std::string(63, 'z')}) {
        BOOST_TEST(
            as_string(ferry::ops::read_url("s3://" + good + "/k")) == "object at /" + good + "/k",
            good);
    }
    const std::size_t allowed = store.requests().size();
    BOOST_TEST(allowed == 10U);
    struct bad_name {
        std::string bucket;
        std::string rule;
    };
    for (const auto& [bucket, rule] : std::vector<bad_name>{
             {"ab", "it is 2 characters long, not 3 to 63"},
             {std::string(64, 'a'), "it is 64 characters long, not 3 to 63"},
             {"My-Bucket", "it holds 'M', which is not a lower-case letter, a digit, '.' or '-'"},
             {"my_bucket", "it holds '_', which is not"},
             {"host@evil", "it holds '@', which is not"},
             {"b%2e%2e", "it holds '%', which is not"},
             {"b?x=1", "it holds '?', which is not"},
             {"a b c", "it holds byte 0x20, which is not"},
             {"bu\ncket", "it holds byte 0x0A, which is not"},
             {"b\xC3\xBC"
              "cket",
              "it holds byte 0xC3, which is not"},
             {"-bucket", "it begins with '-'"},
             {"bucket-", "it ends with '-'"},
             {".bucket", "it begins with '.'"},
             {"bucket.", "it ends with '.'"},
             {"my..bucket", "it holds '..'"},
             {"192.168.5.4", "it is formatted as an IP address"},
             {"10.0.0.01", "it is formatted as an IP address"}}) {
        const std::string url = "s3://" + bucket + "/k";
        const auto e = ferry_test::expect_throw<ferry::invalid_argument>(
            [&] { (void)ferry::ops::read_url(url); }, rule);
        BOOST_TEST(contains(e.what(), "' is not an S3 bucket name: " + rule), e.what());
        BOOST_TEST(contains(e.what(), bucket_rules), e.what());
        BOOST_TEST(e.what().find('\n') == std::string::npos, e.what());
    }
    BOOST_TEST(store.requests().size() == allowed);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
