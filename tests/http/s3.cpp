// SPDX-License-Identifier: Apache-2.0
/// \file
/// s3:// against the in-process server: the URL each setting of the environment gives (keys
/// that stay in their bucket), the SigV4 signature checked by an independent implementation
/// (tools/sigv4_check.py), credentials from a profile, S3's error documents as typed s3_errors,
/// no secret in any message, and list_objects' paging.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "../support/temp_folder.hpp"
#include "s3_support.hpp"
#include "sigv4_support.hpp"

using ferry_test::as_string;
using ferry_test::contains;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using ferry_test::key_id;
using ferry_test::scoped_env;
using ferry_test::secret;

namespace s3_test {

/// What tools/sigv4_check.py says of `r`'s signature, signed by `key_id` with `secret_key`.
std::string check_signature(const http_request& r, const std::string& secret_key,
                            const std::string& region) {
    return ferry_test::check_signature(r, key_id, secret_key, region);
}

/// A server that keeps every request and answers with `answer`.
struct recording_server {
    std::mutex m;
    std::vector<http_request> seen;
    http_server server;
    explicit recording_server(std::function<http_response(const http_request&)> answer)
        : server([this, answer = std::move(answer)](const http_request& r) {
              {
                  const std::lock_guard lock(m);
                  seen.push_back(r);
              }
              return answer(r);
          }) {}
    http_request last() {
        const std::lock_guard lock(m);
        return seen.back();
    }
};

http_response s3_error_doc(int status, const std::string& code, const std::string& message) {
    return {.status = status,
            .body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code +
                    "</Code><Message>" + message +
                    "</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>"};
}

}  // namespace s3_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(s3)
using namespace s3_test;

// With an endpoint, s3://bucket/key is <endpoint>/bucket/key (path-style), the key encoded once
// as SigV4 wants it; the request is signed for the region with the environment's keys, the
// session token sent, and an independent SigV4 implementation accepts the signature.
BOOST_AUTO_TEST_CASE(objects_are_signed_requests_to_the_endpoint) {
    recording_server rec([](const http_request&) { return http_response{.body = "object bytes"}; });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("/")},
                          {"AWS_REGION", "eu-west-3"},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret},
                          {"AWS_SESSION_TOKEN", "token/with+chars="}});
    BOOST_TEST(as_string(ferry::ops::read_url("s3://my-bucket/dir/a b+c~é.jpg")) == "object bytes");
    const auto r = rec.last();
    BOOST_TEST(r.method == "GET");
    BOOST_TEST(r.target == "/my-bucket/dir/a%20b%2Bc~%C3%A9.jpg");
    BOOST_TEST(r.header("x-amz-security-token") == "token/with+chars=");
    BOOST_TEST(r.header("authorization").starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"));
    BOOST_TEST(contains(r.header("authorization"), "/eu-west-3/s3/aws4_request"));
    BOOST_TEST(check_signature(r, secret, "eu-west-3") == "ok");
    // The checker is no rubber stamp: another secret does not give this signature.
    BOOST_TEST(check_signature(r, "another secret", "eu-west-3") != "ok");

    // AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL, AWS_DEFAULT_REGION stands in for
    // AWS_REGION, and a range is a signed Range request.
    recording_server other([](const http_request&) {
        return http_response{
            .status = 206, .body = "ject", .headers = {{"Content-Range", "bytes 2-5/12"}}};
    });
    const scoped_env env2({{"AWS_ENDPOINT_URL", "http://127.0.0.1:1"},
                           {"AWS_ENDPOINT_URL_S3", other.server.url("/")},
                           {"AWS_DEFAULT_REGION", "ap-south-1"},
                           {"AWS_ACCESS_KEY_ID", key_id},
                           {"AWS_SECRET_ACCESS_KEY", secret}});
    BOOST_TEST(as_string(ferry::ops::read_url(
                   "s3://bk2/k", {.range = ferry::byte_range{.offset = 2, .length = 4}})) ==
               "ject");
    const auto r2 = other.last();
    BOOST_TEST(r2.target == "/bk2/k");
    BOOST_TEST(r2.header("range") == "bytes=2-5");
    BOOST_TEST(r2.header("x-amz-security-token").empty());
    BOOST_TEST(check_signature(r2, secret, "ap-south-1") == "ok");
}

// A key is the key, whatever it holds: its `.` and `..` segments go out as %2E and %2E%2E, and
// `?`, `#` and `%` encoded, so no URL parser removes a segment or ends the path: the request
// stays in the bucket, at that key, signed as sent.
BOOST_AUTO_TEST_CASE(a_key_cannot_leave_its_bucket) {
    recording_server rec(
        [](const http_request& r) { return http_response{.body = "object at " + r.target}; });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret}});
    for (const auto& [url, target] : std::vector<std::pair<std::string, std::string>>{
             {"s3://bkt/../x", "/bkt/%2E%2E/x"},
             {"s3://bkt/a/../../other/x", "/bkt/a/%2E%2E/%2E%2E/other/x"},
             {"s3://bkt/./x", "/bkt/%2E/x"},
             {"s3://bkt/..", "/bkt/%2E%2E"},
             {"s3://bkt/x?y#z%2F..", "/bkt/x%3Fy%23z%252F.."},
             {"s3://bkt//x", "/bkt//x"}}) {
        BOOST_TEST(as_string(ferry::ops::read_url(url)) == "object at " + target, url);
        BOOST_TEST(rec.last().target == target, url);
        BOOST_TEST(check_signature(rec.last(), secret, "us-east-1") == "ok", url);
    }
}

// Without keys in the environment, the AWS_PROFILE section of the shared credentials file signs;
// with no credentials anywhere the request goes unsigned (a public bucket).
BOOST_AUTO_TEST_CASE(credentials_come_from_the_profile_or_nowhere) {
    recording_server rec([](const http_request&) { return http_response{.body = "x"}; });
    const ferry_test::temp_folder dir("ferry-aws-credentials");
    const auto file = dir / "credentials";
    std::ofstream(file) << "[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n\n"
                           "# the one the test uses\n[train]\naws_access_key_id = "
                        << key_id << "\naws_secret_access_key=" << secret << "\n";
    {
        const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")},
                              {"AWS_SHARED_CREDENTIALS_FILE", file.string()},
                              {"AWS_PROFILE", "train"}});
        (void)ferry::ops::read_url("s3://bucket/key");
        BOOST_TEST(check_signature(rec.last(), secret, "us-east-1") == "ok");
    }
    {
        const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")},
                              {"AWS_SHARED_CREDENTIALS_FILE", file.string() + ".missing"},
                              {"HOME", "/nonexistent"}});
        (void)ferry::ops::read_url("s3://bucket/key");
        BOOST_TEST(rec.last().header("authorization").empty());
    }
    std::filesystem::remove(file);
}

// S3's error documents become s3_errors with the store's code and message; what can pass
// (SlowDown, 500) is transient, what cannot (NoSuchKey, AccessDenied, a bad signature, a skewed
// clock) is not;
// neither the secret nor the signature appears in any message.
BOOST_AUTO_TEST_CASE(error_documents_are_typed_s3_errors_without_secrets) {
    recording_server rec([](const http_request& r) {
        if (r.target == "/bkt/missing")
            return s3_error_doc(404, "NoSuchKey", "The specified key does not exist.");
        if (r.target == "/bkt/denied") return s3_error_doc(403, "AccessDenied", "Access Denied");
        if (r.target == "/bkt/badsig") {
            return s3_error_doc(
                403, "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.");
        }
        if (r.target == "/bkt/slow")
            return s3_error_doc(503, "SlowDown", "Please reduce your request rate.");
        if (r.target == "/bkt/skew")
            return s3_error_doc(403, "RequestTimeTooSkewed", "The difference is too large.");
        return http_response{.status = 500, .body = "not xml at all"};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret},
                          {"AWS_SESSION_TOKEN", "SESSIONTOKEN123"}});
    struct case_ {
        const char* key;
        int status;
        const char* code;
        bool transient;
        const char* text;
    };
    for (const auto& c :
         {case_{
              "missing", 404, "NoSuchKey", false,
              "read_url: 's3://bkt/missing': HTTP 404 Not Found: NoSuchKey: The specified key does "
              "not exist."},
          case_{"denied", 403, "AccessDenied", false,
                "read_url: 's3://bkt/denied': HTTP 403 Forbidden: AccessDenied: Access Denied"},
          case_{"badsig", 403, "SignatureDoesNotMatch", false,
                "SignatureDoesNotMatch: The request signature"},
          case_{"slow", 503, "SlowDown", true,
                "HTTP 503 Service Unavailable: SlowDown: Please reduce your request rate."},
          case_{"skew", 403, "RequestTimeTooSkewed", false, "RequestTimeTooSkewed"},
          case_{"other", 500, "", true,
                "read_url: 's3://bkt/other': HTTP 500 Internal Server Error"}}) {
        const std::string url = std::string("s3://bkt/") + c.key;
        const auto e =
            ferry_test::expect_throw<ferry::s3_error>([&] { (void)ferry::ops::read_url(url); });
        BOOST_REQUIRE(e.has_value());
        BOOST_TEST(e->code() == c.code);
        BOOST_TEST(e->status() == c.status);
        BOOST_TEST(e->url() == url);
        BOOST_TEST(e->transient() == c.transient, url);
        const std::string what = e->what();
        BOOST_TEST(contains(what, c.text), what);
        const std::string authorization = rec.last().header("authorization");
        const std::string signature = authorization.substr(authorization.find("Signature=") + 10);
        BOOST_TEST(!contains(what, secret));
        BOOST_TEST(!contains(what, "SESSIONTOKEN123"));
        BOOST_TEST(!contains(what, signature));
    }
}

// A presigned URL's credentials reach the server but no message: what() and url() show them
// REDACTED, the other parameters as they were.
BOOST_AUTO_TEST_CASE(presigned_url_credentials_are_redacted_in_errors) {
    recording_server rec([](const http_request&) {
        return s3_error_doc(403, "AccessDenied", "Request has expired");
    });
    const std::string query =
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261204%2Fus-east-1%2Fs3"
        "%2Faws4_request&X-Amz-Date=20261204T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host"
        "&X-Amz-Security-Token=SECRETTOKEN&X-Amz-Signature=0123456789abcdef";
    const std::string url = rec.server.url("/b/k.jpg?" + query);
    const auto e =
        ferry_test::expect_throw<ferry::http_error>([&] { (void)ferry::ops::read_url(url); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(rec.last().target == "/b/k.jpg?" + query);
    const std::string redacted = rec.server.url(
        "/b/k.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Date="
        "20261204T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Security-Token=REDACTED"
        "&X-Amz-Signature=REDACTED");
    BOOST_TEST(e->url() == redacted);
    const std::string what = e->what();
    BOOST_TEST(contains(what, "read_url: '" + redacted + "': HTTP 403 Forbidden"), what);
    for (const char* secret_part : {"0123456789abcdef", "SECRETTOKEN", "AKIDEXAMPLE"}) {
        BOOST_TEST(!contains(what, secret_part));
    }
}

// With credentials set, a pipeline whose S3, presigned and user:password reads fail keeps every
// secret out of what it writes — failures(), log lines, the stats, the trace, the quarantine
// file — while still naming each input (redacted).
BOOST_AUTO_TEST_CASE(no_secret_reaches_logs_traces_or_the_quarantine_file) {
    recording_server rec([](const http_request&) {
        return s3_error_doc(403, "SignatureDoesNotMatch",
                            "The request signature we calculated does not match.");
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret},
                          {"AWS_SESSION_TOKEN", "SESSIONTOKEN123"}});
    const std::string presigned = rec.server.url(
        "/b/p.jpg?X-Amz-Credential=AKIDEXAMPLE%2F20261204%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Security-Token=SECRETTOKEN&X-Amz-Signature=0123456789abcdef");
    std::string with_password = rec.server.url("/b/u.jpg");
    with_password.insert(with_password.find("://") + 3, "user:PASSWORD42@");
    const ferry_test::temp_folder dir("ferry-s3-secrets");
    const auto quarantine = dir / "quarantine.jsonl";
    std::filesystem::remove(quarantine);
    std::mutex lines_mutex;
    std::vector<std::string> lines;
    const std::vector<std::string> urls{"s3://bkt/a.jpg", presigned, with_password};
    auto p = ferry::from(urls)
                 .map([](const std::string& u) { return ferry::ops::read_url(u).size(); },
                      {.name = "fetch", .on_error = ferry::skip, .executor = ferry::io})
                 .build({.logger =
                             [&](ferry::log_level, std::string_view line) {
                                 const std::lock_guard lock(lines_mutex);
                                 lines.emplace_back(line);
                             },
                         .trace_spans = 1000,
                         .max_epoch_failure_rate = 1.0,
                         .quarantine = quarantine});
    for (const auto& n : p) (void)n;
    BOOST_TEST(p.failures().size() == 3U);
    std::ostringstream all;
    for (const auto& f : p.failures()) all << f.input << ' ' << f.message << '\n';
    for (const auto& l : lines) all << l << '\n';
    all << p.stats();
    p.write_trace(all);
    all << std::ifstream(quarantine).rdbuf();
    std::filesystem::remove(quarantine);
    const std::string text = all.str();
    std::vector<std::string> secrets{secret,        "SESSIONTOKEN123", "0123456789abcdef",
                                     "SECRETTOKEN", "AKIDEXAMPLE%2F",  "PASSWORD42"};
    {
        const std::lock_guard lock(rec.m);
        for (const auto& r : rec.seen) {
            const std::string authorization = r.header("authorization");
            if (const auto at = authorization.find("Signature="); at != std::string::npos) {
                secrets.push_back(authorization.substr(at + 10));
            }
        }
    }
    BOOST_TEST(secrets.size() > 6U);  // the S3 read was signed
    for (const auto& secret_part : secrets) {
        BOOST_TEST(!contains(text, secret_part), secret_part << " in:\n" << text);
    }
    // Each input is still named, its credentials REDACTED.
    BOOST_TEST(contains(text, "s3://bkt/a.jpg"));
    BOOST_TEST(contains(text, "X-Amz-Signature=REDACTED"));
    BOOST_TEST(contains(text, "user:REDACTED@"));
}

// list_objects pages through ListObjectsV2 with continuation tokens (signed queries an
// independent check accepts), keeps S3's order, decodes XML entities in keys and leaves folder
// markers out.
BOOST_AUTO_TEST_CASE(list_objects_pages_through_the_listing) {
    recording_server rec([](const http_request& r) {
        const bool second = contains(r.target, "continuation-token=");
        std::string body = "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name>";
        if (!second) {
            body +=
                "<Contents><Key>train/</Key><Size>0</Size></Contents>"
                "<Contents><Key>train/0000.tar</Key></Contents>"
                "<Contents><Key>train/a&amp;b &lt;1&gt;.tar</Key></Contents>"
                "<IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr/"
                "XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>";
        } else {
            body +=
                "<Contents><Key>train/sub/0001.tar</Key></Contents><IsTruncated>false</"
                "IsTruncated>";
        }
        return http_response{.body = body + "</ListBucketResult>"};
    });
    const scoped_env env({{"AWS_ENDPOINT_URL", rec.server.url("")},
                          {"AWS_ACCESS_KEY_ID", key_id},
                          {"AWS_SECRET_ACCESS_KEY", secret}});
    const auto urls = ferry::sources::list_objects("s3://bkt/train/", {.page_size = 3});
    const std::vector<std::string> expected{"s3://bkt/train/0000.tar", "s3://bkt/train/a&b <1>.tar",
                                            "s3://bkt/train/sub/0001.tar"};
    BOOST_TEST(urls == expected, boost::test_tools::per_element());
    BOOST_REQUIRE(rec.seen.size() == 2U);
    BOOST_TEST(rec.seen[0].target == "/bkt/?list-type=2&max-keys=3&prefix=train%2F");
    BOOST_TEST(rec.seen[1].target ==
               "/bkt/"
               "?continuation-token=1ueGcxLPRx1Tr%2FXYExHnhbYLgveDs2J%2Fwm36Hy4vbOwM%3D&list-type="
               "2&max-keys=3&prefix=train%2F");
    BOOST_TEST(check_signature(rec.seen[0], secret, "us-east-1") == "ok");
    BOOST_TEST(check_signature(rec.seen[1], secret, "us-east-1") == "ok");
    BOOST_CHECK_THROW((void)ferry::sources::list_objects("http://b/train/"),
                      ferry::invalid_argument);
    BOOST_CHECK_THROW((void)ferry::sources::list_objects("s3://bkt/", {.page_size = 0}),
                      ferry::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
