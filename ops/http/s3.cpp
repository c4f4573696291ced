// SPDX-License-Identifier: Apache-2.0
/// \file
/// `s3://` URLs: the store, region and credentials from the environment AWS's tools read, the
/// object's HTTPS URL (path-style for a custom endpoint), SigV4 through libcurl, and S3's error
/// documents as `ferry::s3_error`.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "request.hpp"
#include "s3_text.hpp"
#include "s3_xml.hpp"

namespace ferry::ops::detail {

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
}

std::string trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return std::string(s);
}

struct credentials {
    std::string key;
    std::string secret;
    std::string token;
};

/// The profile's keys in an AWS shared credentials file (INI: `[name]`, `key = value`).
credentials from_file(const std::filesystem::path& file, const std::string& profile) {
    credentials c;
    std::ifstream in(file);
    std::string line;
    bool ours = false;
    while (std::getline(in, line)) {
        const std::string t = trim(line);
        if (t.empty() || t.front() == '#' || t.front() == ';') continue;
        if (t.front() == '[') {
            ours = t == "[" + profile + "]";
            continue;
        }
        const auto eq = t.find('=');
        if (!ours || eq == std::string::npos) continue;
        const std::string name = trim(std::string_view(t).substr(0, eq));
        const std::string value = trim(std::string_view(t).substr(eq + 1));
        if (name == "aws_access_key_id") c.key = value;
        if (name == "aws_secret_access_key") c.secret = value;
        if (name == "aws_session_token") c.token = value;
    }
    return c;
}

/// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), else the AWS_PROFILE
/// ("default") section of AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials); none: unsigned.
credentials find_credentials() {
    credentials c{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
    if (!c.key.empty() && !c.secret.empty()) return c;
    std::filesystem::path file = env("AWS_SHARED_CREDENTIALS_FILE");
    if (file.empty()) {
        const std::string home = env("HOME");
        if (home.empty()) return {};
        file = std::filesystem::path(home) / ".aws" / "credentials";
    }
    std::string profile = env("AWS_PROFILE");
    if (profile.empty()) profile = "default";
    c = from_file(file, profile);
    if (c.key.empty() || c.secret.empty()) return {};
    return c;
}

}  // namespace

s3_location s3_locate(std::string_view url, bool key_required) {
    const std::string where = "read_url: '" + std::string(url) + "': ";
    std::string_view rest = url.substr(5);  // past "s3://"
    const auto slash = rest.find('/');
    s3_location loc;
    loc.bucket = std::string(rest.substr(0, slash));
    loc.key = slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash + 1));
    if (loc.bucket.empty() || (key_required && loc.key.empty())) {
        throw invalid_argument(where + "an S3 URL is s3://<bucket>/<key>");
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
    const credentials c = find_credentials();
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
    return s3_request(loc, loc.base + "/" + uri_encode(loc.key, false), std::string(url));
}

void throw_s3_error(const request& r, int status, const std::string& status_text,
                    const std::string& body, std::chrono::milliseconds retry_after) {
    const std::string code = xml_text(body, "Code");
    const std::string message = xml_text(body, "Message");
    std::string what = "read_url: '" + r.display + "': " + status_text;
    if (!code.empty()) what += ": " + code;
    if (!message.empty()) what += ": " + message;
    // What S3 asks to be tried again, whatever the status says.
    const bool transient = http_error::transient_status(status) || code == "SlowDown" ||
                           code == "RequestTimeout" || code == "InternalError" ||
                           code == "ServiceUnavailable" || code == "RequestTimeTooSkewed";
    s3_error e(r.display, status, code, what, transient);
    e.set_retry_after(retry_after);
    throw e;
}

}  // namespace ferry::ops::detail
