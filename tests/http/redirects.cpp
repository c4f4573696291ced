// SPDX-License-Identifier: Apache-2.0
/// \file
/// Where a request's credentials go on a redirect: every credential header and the URL's user
/// part stay with the origin they were given for (or go to `credential_hosts`), harmless headers
/// and the range go on every hop, and the hop limit and the https-only rule hold, for `read_url`
/// and `http_client` alike. Over TLS (tls_server.hpp), since a request with credentials is
/// redirected to https only: one server is two origins under two names (`127.0.0.1`,
/// `localhost`), and two servers are two origins by their ports.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <ferry/http.hpp>
#include <ferry/http_client.hpp>
#include <string>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "tls_server.hpp"

using ferry_test::as_string;
using ferry_test::contains;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::tls_server;

namespace redirects_test {

/// Four credentials of four kinds, and one harmless header that must go everywhere.
const std::vector<std::string> secret_headers = {
    "X-Api-Key: SECRET1", "Authorization: Bearer SECRET2", "x-amz-security-token: SECRET3",
    "Cookie: s=SECRET4", "X-Trace: keep"};

/// What every case asks with: the four secrets, the test's self-signed certificate accepted, no
/// host limits (they are per process, and not what these cases are about).
ferry::http_options with_secrets() {
    return {.headers = secret_headers, .verify_tls = false, .adaptive = false};
}

/// The names of the headers of `r` whose values hold a secret, sorted, one space apart: "" when
/// none reached the server, "authorization cookie x-amz-security-token x-api-key" when all did.
std::string secrets_in(const http_request& r) {
    std::vector<std::string> names;
    for (const auto& [name, value] : r.headers) {
        if (contains(value, "SECRET")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
    return out;
}

const std::string all_secrets = "authorization cookie x-amz-security-token x-api-key";

/// The port of a request's Host header ("127.0.0.1:4431" -> "4431").
std::string port_of(const http_request& r) {
    const std::string host = r.header("host");
    return host.substr(host.rfind(':') + 1);
}

/// The redirect's target: 302 to `location`.
http_response moved_to(const std::string& location) {
    return http_response{.status = 302, .body = "moved", .headers = {{"Location", location}}};
}

/// The resource every redirect ends at: ten bytes, or bytes 2-5 of them for that range.
http_response final_answer(const http_request& r) {
    if (r.header("range") == "bytes=2-5") {
        return http_response{
            .status = 206, .body = "2345", .headers = {{"Content-Range", "bytes 2-5/10"}}};
    }
    return http_response{.body = "0123456789"};
}

/// A server whose paths redirect: `/to-localhost` to itself under the name `localhost` (another
/// origin), `/to-same` to `/final` (relative, the same origin), `/to-same-absolute` there by an
/// absolute URL with the host in capitals, `/to-other` to `other`'s `/final` on 127.0.0.1 (the
/// same host, another port), `/to-other-localhost` to `other` as `localhost`, `/loop/N` to
/// `/loop/N+1`, `/to-localhost-then-http` via `localhost` to `plain`; `/final` answers.
ferry_test::http_handler redirecting(const tls_server* other,
                                     const ferry_test::http_server* plain) {
    return [other, plain](const http_request& r) {
        const std::string port = port_of(r);
        if (r.target == "/to-localhost") return moved_to("https://localhost:" + port + "/final");
        if (r.target == "/to-same") return moved_to("/final");
        if (r.target == "/to-same-absolute")
            return moved_to("https://LOCALHOST:" + port + "/final");
        if (r.target == "/to-other" && other != nullptr) return moved_to(other->url("/final"));
        if (r.target == "/to-other-localhost" && other != nullptr) {
            return moved_to(other->url_on("localhost", "/final"));
        }
        if (r.target.starts_with("/loop/")) {
            return moved_to("/loop/" + std::to_string(std::stoi(r.target.substr(6)) + 1));
        }
        if (r.target == "/to-localhost-then-http") {
            return moved_to("https://localhost:" + port + "/to-http");
        }
        if (r.target == "/to-http" && plain != nullptr) return moved_to(plain->url("/x"));
        return final_answer(r);
    };
}

}  // namespace redirects_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(redirects)
using namespace redirects_test;

// On a redirect to another origin (another host name, or the same host on another port) no
// credential header reaches the new origin (curl by itself drops only Authorization and Cookie,
// and would send X-Api-Key and x-amz-security-token on), the harmless header and the range go
// on, and the body is the new origin's.
BOOST_AUTO_TEST_CASE(credential_headers_do_not_follow_a_redirect_to_another_origin) {
    tls_server other(redirecting(nullptr, nullptr));
    tls_server first(redirecting(&other, nullptr));

    BOOST_TEST(as_string(ferry::ops::read_url(first.url("/to-localhost"), with_secrets())) ==
               "0123456789");
    auto seen = first.requests();
    BOOST_REQUIRE(seen.size() == 2U);
    BOOST_TEST(secrets_in(seen[0]) == all_secrets);  // the origin they were given for has them
    BOOST_TEST(seen[1].header("host") == "localhost:" + std::to_string(first.port()));
    BOOST_TEST(secrets_in(seen[1]) == "");
    BOOST_TEST(seen[1].header("x-trace") == "keep");

    BOOST_TEST(as_string(ferry::ops::read_url(first.url("/to-other"), with_secrets())) ==
               "0123456789");
    BOOST_REQUIRE(other.requests().size() == 1U);
    BOOST_TEST(secrets_in(other.requests()[0]) == "");
    BOOST_TEST(other.requests()[0].header("x-trace") == "keep");

    ferry::http_options ranged = with_secrets();
    ranged.range = ferry::byte_range{.offset = 2, .length = 4};
    BOOST_TEST(as_string(ferry::ops::read_url(first.url("/to-localhost"), ranged)) == "2345");
    seen = first.requests();
    BOOST_REQUIRE(seen.size() == 5U);  // and /to-other's
    BOOST_TEST(seen[3].header("range") == "bytes=2-5");
    BOOST_TEST(seen[4].header("range") == "bytes=2-5");
    BOOST_TEST(secrets_in(seen[4]) == "");
}

// A redirect within the origin (a relative Location; an absolute one naming the host in another
// case) keeps every credential header: the safe rule costs a same-origin redirect nothing.
BOOST_AUTO_TEST_CASE(a_same_origin_redirect_keeps_the_credential_headers) {
    tls_server server(redirecting(nullptr, nullptr));
    BOOST_TEST(as_string(ferry::ops::read_url(server.url("/to-same"), with_secrets())) ==
               "0123456789");
    BOOST_TEST(as_string(ferry::ops::read_url(server.url_on("localhost", "/to-same-absolute"),
                                              with_secrets())) == "0123456789");
    const auto seen = server.requests();
    BOOST_REQUIRE(seen.size() == 4U);
    for (const auto& r : seen) {
        BOOST_TEST(secrets_in(r) == all_secrets, r.target);
        BOOST_TEST(r.header("x-trace") == "keep", r.target);
    }
    BOOST_TEST(seen[3].header("host") == "LOCALHOST:" + std::to_string(server.port()));
}

// credential_hosts names the hosts credentials may follow a redirect to: every credential header
// reaches a host named (in another case, on any port), and none reaches a host not named.
BOOST_AUTO_TEST_CASE(credential_hosts_let_credentials_follow_to_the_hosts_named) {
    tls_server other(redirecting(nullptr, nullptr));
    tls_server first(redirecting(&other, nullptr));
    ferry::http_options options = with_secrets();
    options.credential_hosts = {"LocalHost"};

    BOOST_TEST(as_string(ferry::ops::read_url(first.url("/to-localhost"), options)) ==
               "0123456789");
    const auto seen = first.requests();
    BOOST_REQUIRE(seen.size() == 2U);
    BOOST_TEST(seen[1].header("host") == "localhost:" + std::to_string(first.port()));
    BOOST_TEST(secrets_in(seen[1]) == all_secrets);

    BOOST_TEST(as_string(ferry::ops::read_url(first.url("/to-other-localhost"), options)) ==
               "0123456789");
    BOOST_TEST(as_string(ferry::ops::read_url(first.url("/to-other"), options)) == "0123456789");
    const auto at_other = other.requests();
    BOOST_REQUIRE(at_other.size() == 2U);
    BOOST_TEST(secrets_in(at_other[0]) == all_secrets);  // localhost, another port: named
    BOOST_TEST(secrets_in(at_other[1]) == "");           // 127.0.0.1: not named
}

// The URL's user part is a credential too: it goes with a same-origin redirect, not to another
// origin, and to a host of credential_hosts.
BOOST_AUTO_TEST_CASE(the_user_part_goes_with_the_origin_only) {
    tls_server server(redirecting(nullptr, nullptr));
    const auto with_user = [&](const std::string& path) {
        std::string url = server.url(path);
        url.insert(url.find("://") + 3, "user:PASSWORD42@");
        return url;
    };
    const std::string basic = "Basic dXNlcjpQQVNTV09SRDQy";  // user:PASSWORD42
    const ferry::http_options tls{.verify_tls = false, .adaptive = false};
    ferry::http_options to_localhost = tls;
    to_localhost.credential_hosts = {"localhost"};

    BOOST_TEST(as_string(ferry::ops::read_url(with_user("/to-same"), tls)) == "0123456789");
    BOOST_TEST(as_string(ferry::ops::read_url(with_user("/to-localhost"), tls)) == "0123456789");
    BOOST_TEST(as_string(ferry::ops::read_url(with_user("/to-localhost"), to_localhost)) ==
               "0123456789");
    const auto seen = server.requests();
    BOOST_REQUIRE(seen.size() == 6U);
    BOOST_TEST(seen[0].header("authorization") == basic);
    BOOST_TEST(seen[1].header("authorization") == basic);  // the same origin
    BOOST_TEST(seen[3].header("host") == "localhost:" + std::to_string(server.port()));
    BOOST_TEST(seen[3].header("authorization") == "");     // another origin
    BOOST_TEST(seen[5].header("authorization") == basic);  // a host of credential_hosts
}

// A request with credentials follows at most 10 redirects, as one without: the 11th answer is
// the same http_error, word for word, whoever follows them.
BOOST_AUTO_TEST_CASE(the_hop_limit_holds_for_requests_with_credentials) {
    tls_server server(redirecting(nullptr, nullptr));
    const std::string url = server.url("/loop/0");
    const auto without = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)ferry::ops::read_url(url, {.verify_tls = false, .adaptive = false}); });
    BOOST_REQUIRE(without.has_value());
    BOOST_TEST(server.requests().size() == 11U);
    const auto with = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)ferry::ops::read_url(url, with_secrets()); });
    BOOST_REQUIRE(with.has_value());
    BOOST_TEST(server.requests().size() == 22U);
    BOOST_TEST(with.what() == without.what());
    BOOST_TEST(contains(with.what(), "read_url: '" + url + "': Maximum (10) redirects followed"),
               with.what());
    BOOST_TEST(with->status() == 302);
    BOOST_TEST(!with->transient());
    BOOST_TEST(secrets_in(server.requests().back()) == all_secrets);  // the same origin
}

// After a hop to another origin (credentials dropped), a request that carried credentials is
// still redirected to https only: the plain-http server sees nothing, the error says why.
BOOST_AUTO_TEST_CASE(a_request_with_credentials_is_not_redirected_to_plain_http_after_a_hop) {
    ferry_test::recording_server plain(
        [](const http_request&) { return http_response{.body = "plain"}; });
    tls_server server(redirecting(nullptr, &plain.server));
    const std::string url = server.url("/to-localhost-then-http");
    const auto e = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)ferry::ops::read_url(url, with_secrets()); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(plain.requests().empty());
    BOOST_TEST(e->status() == 302);
    BOOST_TEST(!e->transient());
    BOOST_TEST(e.what() == "read_url: '" + url + "': HTTP 302 Found: redirected to '" +
                               plain.server.url("/x") +
                               "': not followed: the request carries credentials (X-Api-Key), "
                               "which never go to plain http");
}

// http_client runs the same rule on its event loop: no credential header reaches another origin
// (a host name or a port), each goes on within the origin, and credential_hosts opens a host.
BOOST_AUTO_TEST_CASE(http_client_keeps_credentials_with_their_origin) {
    tls_server other(redirecting(nullptr, nullptr));
    tls_server first(redirecting(&other, nullptr));
    ferry::ops::http_client client;
    BOOST_TEST(as_string(client.fetch(first.url("/to-localhost"), with_secrets()).get()) ==
               "0123456789");
    BOOST_TEST(as_string(client.fetch(first.url("/to-same"), with_secrets()).get()) ==
               "0123456789");
    BOOST_TEST(as_string(client.fetch(first.url("/to-other"), with_secrets()).get()) ==
               "0123456789");
    ferry::http_options named = with_secrets();
    named.credential_hosts = {"localhost"};
    BOOST_TEST(as_string(client.fetch(first.url("/to-localhost"), named).get()) == "0123456789");
    const auto seen = first.requests();
    BOOST_REQUIRE(seen.size() == 7U);
    BOOST_TEST(seen[1].header("host") == "localhost:" + std::to_string(first.port()));
    BOOST_TEST(secrets_in(seen[1]) == "");
    BOOST_TEST(seen[1].header("x-trace") == "keep");
    BOOST_TEST(secrets_in(seen[3]) == all_secrets);  // /final within the origin
    BOOST_TEST(secrets_in(seen[6]) == all_secrets);  // localhost, named
    BOOST_REQUIRE(other.requests().size() == 1U);
    BOOST_TEST(secrets_in(other.requests()[0]) == "");

    const auto loop = ferry_test::expect_throw<ferry::http_error>(
        [&] { (void)client.fetch(first.url("/loop/0"), with_secrets()).get(); });
    BOOST_TEST(contains(loop.what(), "Maximum (10) redirects followed"), loop.what());
    BOOST_TEST(first.requests().size() == 18U);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
