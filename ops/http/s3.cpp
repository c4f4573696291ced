// SPDX-License-Identifier: Apache-2.0
/// \file
/// `s3://` URLs: the store, region and credentials from the environment AWS's tools read, the
/// object's HTTPS URL (path-style for a custom endpoint), SigV4 through libcurl, and S3's error
/// documents as `ferry::s3_error`.

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "request.hpp"
#include "s3_text.hpp"
#include "s3_xml.hpp"

namespace ferry::ops::detail {

namespace {

using ferry::detail::escape_controls;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
}

struct credentials {
    std::string key;
    std::string secret;
    std::string token;
};

/// The profile's keys in an AWS shared credentials file (INI: `[name]`, `key = value`);
/// `found`: whether the file has the profile's section.
credentials from_file(std::ifstream& in, const std::string& profile, bool& found) {
    credentials c;
    std::string line;
    bool ours = false;
    while (std::getline(in, line)) {
        const std::string t(trim(line));
        if (t.empty() || t.front() == '#' || t.front() == ';') continue;
        if (t.front() == '[') {
            ours = t == "[" + profile + "]";
            found = found || ours;
            continue;
        }
        const auto eq = t.find('=');
        if (!ours || eq == std::string::npos) continue;
        const std::string name(trim(std::string_view(t).substr(0, eq)));
        const std::string value(trim(std::string_view(t).substr(eq + 1)));
        if (name == "aws_access_key_id") c.key = value;
        if (name == "aws_secret_access_key") c.secret = value;
        if (name == "aws_session_token") c.token = value;
    }
    return c;
}

/// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), else the AWS_PROFILE
/// ("default") section of AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials); none: unsigned.
/// Credentials asked for but not found (one of the two keys, a profile named but absent or
/// without its secret) throw `invalid_argument` (`where` starts the message): a request sent
/// unsigned instead would fail later with a message that says nothing of why.
credentials find_credentials(const std::string& where) {
    credentials c{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
    if (!c.key.empty() && !c.secret.empty()) return c;
    if (!c.key.empty() || !c.secret.empty()) {
        throw invalid_argument(where +
                               (c.key.empty() ? "AWS_SECRET_ACCESS_KEY is set but "
                                                "AWS_ACCESS_KEY_ID is not"
                                              : "AWS_ACCESS_KEY_ID is set but "
                                                "AWS_SECRET_ACCESS_KEY is not") +
                               ": set both (or neither, to read a profile)");
    }
    std::filesystem::path file = env("AWS_SHARED_CREDENTIALS_FILE");
    if (file.empty()) {
        const std::string home = env("HOME");
        if (!home.empty()) file = std::filesystem::path(home) / ".aws" / "credentials";
    }
    const std::string named = env("AWS_PROFILE");
    const std::string profile = named.empty() ? std::string("default") : named;
    std::ifstream in;
    if (!file.empty()) in.open(file);
    if (!in) {
        if (named.empty()) return {};  // no credentials anywhere: a public bucket
        throw invalid_argument(where + "AWS_PROFILE names profile '" + escape_controls(named) +
                               "', but '" + escape_controls(file.string()) +
                               "' cannot be read (AWS_SHARED_CREDENTIALS_FILE, else "
                               "~/.aws/credentials)");
    }
    bool found = false;
    c = from_file(in, profile, found);
    if (!found) {
        if (named.empty()) return {};
        throw invalid_argument(where + "AWS_PROFILE names profile '" + escape_controls(named) +
                               "', which '" + escape_controls(file.string()) +
                               "' does not have (ferry reads keys from the credentials file "
                               "only; `aws configure export-credentials --format env` prints "
                               "them for other kinds of profile)");
    }
    if (c.key.empty() || c.secret.empty()) {
        throw invalid_argument(where + "profile '" + escape_controls(profile) + "' in '" +
                               escape_controls(file.string()) + "' has no " +
                               (c.key.empty() ? "aws_access_key_id" : "aws_secret_access_key") +
                               " (ferry reads static keys only; `aws configure "
                               "export-credentials --format env` prints them for other kinds "
                               "of profile)");
    }
    return c;
}

/// A time as S3 writes it: `20261205T060000Z` (a request's), `2026-12-05T06:20:00Z` (the
/// server's, perhaps with fractions) or an HTTP-date; nullopt for anything else.
std::optional<std::time_t> parse_time(const std::string& text) {
    for (const char* format :
         {"%Y%m%dT%H%M%SZ", "%Y-%m-%dT%H:%M:%S", "%a, %d %b %Y %H:%M:%S GMT"}) {
        std::tm tm{};
        if (::strptime(text.c_str(), format, &tm) != nullptr) return ::timegm(&tm);
    }
    return std::nullopt;
}

/// How many seconds this machine's clock is ahead of the store's (negative: behind), from an
/// error document's <RequestTime> and <ServerTime>, else from the response's Date header
/// against this clock now; nullopt when neither says.
std::optional<long long> clock_skew(const std::string& body, const std::string& date) {
    const auto sent = parse_time(xml_text(body, "RequestTime"));
    const auto server = parse_time(xml_text(body, "ServerTime"));
    if (sent && server) return static_cast<long long>(*sent - *server);
    if (const auto at = parse_time(date)) {
        return static_cast<long long>(std::time(nullptr) - *at);
    }
    return std::nullopt;
}

}  // namespace

s3_location s3_locate(std::string_view url, bool key_required, std::string_view caller) {
    const std::string where =
        std::string(caller) + ": '" + escape_controls(redact_url(url)) + "': ";
    std::string_view rest = url.substr(5);  // past "s3://"
    const auto slash = rest.find('/');
    s3_location loc;
    loc.bucket = std::string(rest.substr(0, slash));
    loc.key = slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash + 1));
    if (loc.bucket.empty() || (key_required && loc.key.empty())) {
        throw invalid_argument(where + "an S3 URL is s3://<bucket>/<key>");
    }
    // The bucket goes into the host name or the path unencoded: checked before anything else.
    if (const std::string broken = s3_bucket_name_error(loc.bucket); !broken.empty()) {
        throw invalid_argument(where + "the bucket '" + shown_text(loc.bucket, 100) +
                               "' is not an S3 bucket name: " + broken +
                               " (S3's rules: 3 to 63 characters of a-z, 0-9, '.' and '-', "
                               "beginning and ending with a letter or a digit, no '..', not an "
                               "IP address)");
    }
    loc.region = env("AWS_REGION");
    if (loc.region.empty()) loc.region = env("AWS_DEFAULT_REGION");
    if (loc.region.empty()) loc.region = "us-east-1";
    std::string endpoint = env("AWS_ENDPOINT_URL_S3");
    if (endpoint.empty()) endpoint = env("AWS_ENDPOINT_URL");
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    // A custom endpoint (MinIO, Ceph, a local test server) and a bucket name with dots (which
    // the wildcard certificate of virtual-hosted names does not cover) take path-style URLs.
    if (!endpoint.empty()) {
        loc.base = endpoint + "/" + loc.bucket;
    } else if (loc.bucket.find('.') != std::string::npos) {
        loc.base = "https://s3." + loc.region + ".amazonaws.com/" + loc.bucket;
    } else {
        loc.base = "https://" + loc.bucket + ".s3." + loc.region + ".amazonaws.com";
    }
    return loc;
}

request s3_request(const s3_location& loc, std::string url, std::string display) {
    request r;
    r.url = std::move(url);
    r.display = std::move(display);
    r.s3 = true;
    r.region = loc.region;
    const credentials c = find_credentials("read_url: '" + r.display + "': ");
    if (!c.key.empty()) {
        r.sigv4 = "aws:amz:" + loc.region + ":s3";
        r.user = c.key;
        r.password = c.secret;
        // S3 wants the payload's hash in a header of its own; a GET's payload is empty.
        r.headers.push_back(
            "x-amz-content-sha256: "
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        if (!c.token.empty()) r.headers.push_back("x-amz-security-token: " + c.token);
    }
    return r;
}

request s3_object_request(std::string_view url) {
    const s3_location loc = s3_locate(url, true);
    return s3_request(loc, loc.base + "/" + uri_encode(loc.key, false),
                      escape_controls(redact_url(url)));
}

void throw_s3_error(const request& r, const s3_answer& a) {
    const std::string code = escape_controls(xml_text(a.body, "Code"));
    std::string message = escape_controls(xml_text(a.body, "Message"));
    // What to do, where the answer says it.
    std::vector<std::string> advice;
    if (!a.location.empty()) {
        advice.push_back("redirected to '" + a.location + "', not followed" +
                         (r.sigv4.empty() ? std::string(" (follow_redirects is off)")
                          : a.other_origin
                              ? std::string(": a signed S3 request is not redirected to another "
                                            "origin")
                              : std::string(": a signed S3 request is not redirected")));
    }
    if (!a.bucket_region.empty() && a.bucket_region != r.region) {
        const std::string region = escape_controls(a.bucket_region);
        advice.push_back("the bucket is in region '" + region + "', not '" + r.region +
                         "': set AWS_REGION=" + region);
    }
    if (code == "RequestTimeTooSkewed") {
        if (const auto skew = clock_skew(a.body, a.date)) {
            advice.push_back("this machine's clock is " + std::to_string(std::abs(*skew)) + " s " +
                             (*skew < 0 ? "behind" : "ahead of") +
                             " the store's: set the clock right (NTP); asking again will not help");
        }
    }
    // S3's message ends in a full stop; the advice goes on from it.
    if (!advice.empty() && message.ends_with('.')) message.pop_back();
    std::string what = "read_url: '" + r.display + "': " + a.status_text;
    if (!code.empty()) what += ": " + code;
    if (!message.empty()) what += ": " + message;
    for (std::size_t i = 0; i < advice.size(); ++i) {
        what += (i == 0 && code.empty() && message.empty() ? ": " : "; ") + advice[i];
    }
    // What S3 asks to be tried again, whatever the status says. Not RequestTimeTooSkewed: the
    // clock stays as wrong as it was.
    const bool transient =
        a.status >= 400 &&
        (http_error::transient_status(a.status) || code == "SlowDown" || code == "RequestTimeout" ||
         code == "InternalError" || code == "ServiceUnavailable");
    s3_error e(r.display, a.status, code, what, transient);
    e.set_retry_after(a.retry_after);
    throw e;
}

}  // namespace ferry::ops::detail
