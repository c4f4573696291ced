// SPDX-License-Identifier: Apache-2.0
/// \file
/// S3 errors that say what to do, against the in-process server: a wrong region names the region
/// to set, a skewed clock says by how much (and is not retried), credentials asked for but not
/// found are an error before any request, and texts from the store cannot forge log lines.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ctime>
#include <ferry/http.hpp>
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
            [&] { (void)ferry::ops::read_url("s3://b/k"); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(e->code() == "PermanentRedirect");
        BOOST_TEST(e->status() == 301);
        BOOST_TEST(!e->transient());
        BOOST_TEST(contains(e->what(),
                            "read_url: 's3://b/k': HTTP 301 Moved Permanently: PermanentRedirect: "
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
        if (r.target == "/b/times") {
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
        [&] { (void)ferry::ops::read_url("s3://b/times"); });
    BOOST_REQUIRE(times.has_value());
    BOOST_TEST(times->code() == "RequestTimeTooSkewed");
    BOOST_TEST(!times->transient());
    BOOST_TEST(contains(times->what(), "this machine's clock is 1200 s behind the store's"),
               times->what());
    BOOST_TEST(contains(times->what(), "set the clock right"), times->what());

    const auto dated = ferry_test::expect_throw<ferry::s3_error>(
        [&] { (void)ferry::ops::read_url("s3://b/dated"); });
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
            [&] { (void)ferry::ops::read_url("s3://b/k"); }, says);
        BOOST_TEST(contains(e.what(), "read_url: 's3://b/k': "), e.what());
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
            r.target == "/b/esc" ? "Access Denied\x1b[2J" : "Access Denied\nERROR forged line";
        return http_response{.status = 403,
                             .body = error_doc("AccessDenied", message),
                             .reason = "Forbidden\x1b[0m"};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", store.server.url("")}});
    for (const char* url : {"s3://b/k", "s3://b/esc"}) {
        const auto e =
            ferry_test::expect_throw<ferry::s3_error>([&] { (void)ferry::ops::read_url(url); });
        BOOST_REQUIRE(e.has_value());
        const std::string what = e->what();
        BOOST_TEST(what.find('\n') == std::string::npos, what);
        BOOST_TEST(what.find('\x1b') == std::string::npos, what);
        BOOST_TEST(contains(what, "HTTP 403 Forbidden\\x1b[0m"), what);
    }
    const auto e =
        ferry_test::expect_throw<ferry::s3_error>([&] { (void)ferry::ops::read_url("s3://b/k"); });
    BOOST_TEST(contains(e.what(),
                        "HTTP 403 Forbidden\\x1b[0m: AccessDenied: Access "
                        "Denied\\nERROR forged line"),
               e.what());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
