// SPDX-License-Identifier: Apache-2.0
/// \file
/// tar_samples over shards on an HTTP server (the in-process one on 127.0.0.1), read through
/// ferry::ops::url_ranges chunk by chunk: the same samples as the local files, skipped members
/// not fetched, and a server that fails, for good or for a while, accounted for.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <charconv>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <ferry/shards.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "tar_writer.hpp"

using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using ferry_test::read_bytes;
using ferry_test::sample_members;
using ferry_test::tar_member;
using ferry_test::temp_folder;
using ferry_test::write_tar;

namespace {

/// Serves `files` (target -> bytes) with Range support; counts requests and bytes sent.
struct shard_server {
    std::map<std::string, std::string> files;
    std::atomic<int> requests{0};
    std::atomic<std::size_t> sent{0};
    std::function<std::optional<http_response>(const http_request&, std::uint64_t first)> fault;
    http_server server{[this](const http_request& r) { return answer(r); }};

    http_response answer(const http_request& r) {
        ++requests;
        const auto it = files.find(r.target);
        if (it == files.end()) return {.status = 404, .body = "no such shard"};
        const std::string range = r.header("range");
        std::uint64_t first = 0;
        if (range.size() > 6) std::from_chars(range.data() + 6, range.data() + range.size(), first);
        if (fault) {
            if (auto f = fault(r, first)) return *f;
        }
        auto reply = ferry_test::ranged(it->second, r);
        sent += reply.body.size();
        return reply;
    }
};

std::vector<std::string> describe(const ferry::sources::tar_samples_source& src) {
    std::vector<std::string> out;
    for (auto&& s : src(0)) {
        std::string fields;
        for (const auto& [ext, data] : s.fields)
            fields += ext + "=" + std::to_string(data.size()) + ":" +
                      ferry_test::as_string(data).substr(0, 16) + ";";
        out.push_back(s.key + "|" + (s.damaged() ? "damaged" : fields));
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shards)

// Remote shards, plain and gzip, read in 1000-byte chunks give the samples the local files give;
// a member over max_member_bytes is skipped without being fetched.
BOOST_AUTO_TEST_CASE(remote_shards_read_like_local_ones) {
    temp_folder dir("ferry-shards-remote");
    std::vector<tar_member> members;
    for (int i = 0; i < 6; ++i) {
        auto m = sample_members("k" + std::to_string(i));
        m[0].data += std::string(static_cast<std::size_t>(i) * 900, static_cast<char>('a' + i));
        members.insert(members.end(), m.begin(), m.end());
    }
    members[6].data = std::string(300000, 'B');  // k3.jpg: over the limit below
    write_tar(dir / "a.tar", members);
    const std::string gz = "cd '" + dir.path().string() + "' && gzip -k -n a.tar";
    BOOST_TEST_REQUIRE(std::system(gz.c_str()) == 0);
    shard_server s;
    s.files["/a.tar"] = read_bytes(dir / "a.tar");
    s.files["/a.tar.gz"] = read_bytes(dir / "a.tar.gz");
    const ferry::sources::tar_options options{
        .max_member_bytes = 100000, .read_remote = ferry::ops::url_ranges{}, .remote_chunk = 1000};
    const auto local = describe(ferry::sources::tar_samples({(dir / "a.tar").string()}, options));
    BOOST_TEST_REQUIRE(local.size() == 6U);
    BOOST_TEST(local[3] == "k3|damaged");
    BOOST_TEST(describe(ferry::sources::tar_samples({s.server.url("/a.tar")}, options)) == local,
               boost::test_tools::per_element());
    const std::size_t plain = s.files["/a.tar"].size();
    BOOST_TEST(s.sent.load() < plain - 250000, "the skipped member was fetched");
    BOOST_TEST(s.requests.load() > 10);
    BOOST_TEST(describe(ferry::sources::tar_samples({s.server.url("/a.tar.gz")}, options)) == local,
               boost::test_tools::per_element());
}

// A shard the server does not have is one failed sample with the server's answer; a server that
// fails for good in the middle of a shard delivers the samples before and fails the rest as one,
// after the transient failure was tried three times; one that fails once is retried and whole.
BOOST_AUTO_TEST_CASE(a_failing_server_is_accounted_for) {
    temp_folder dir("ferry-shards-remote-fail");
    std::vector<tar_member> members;
    for (int i = 0; i < 8; ++i) {
        auto m = sample_members("k" + std::to_string(i));
        members.insert(members.end(), m.begin(), m.end());
    }
    write_tar(dir / "a.tar", members);
    shard_server s;
    s.files["/a.tar"] = read_bytes(dir / "a.tar");
    s.files["/flaky.tar"] = s.files["/a.tar"];
    std::atomic<int> at_8192{0};
    std::atomic<int> flaky{0};
    s.fault = [&](const http_request& r, std::uint64_t first) -> std::optional<http_response> {
        if (r.target == "/a.tar" && first >= 8192) {
            ++at_8192;
            return http_response{.status = 503, .body = "busy"};
        }
        if (r.target == "/flaky.tar" && first == 4096 && flaky++ == 0) {
            return http_response{.status = 500, .body = "oops"};
        }
        return std::nullopt;
    };
    const ferry::sources::tar_options options{.read_remote = ferry::ops::url_ranges{},
                                              .remote_chunk = 4096};
    const std::string missing = s.server.url("/missing.tar");
    const std::string failing = s.server.url("/a.tar");
    auto pipe = ferry::from(ferry::sources::tar_samples(
                                {missing, failing, s.server.url("/flaky.tar")}, options))
                    .map(
                        [](const ferry::sample& x) {
                            return x.key + ":" + ferry_test::as_string(x.fields.at("cls"));
                        },
                        {.concurrency = 1, .name = "read", .on_error = ferry::skip})
                    .build({.threads = 2,
                            .logger = [](ferry::log_level, std::string_view) {},
                            .max_epoch_failure_rate = 1.0});
    std::vector<std::string> got;
    for (auto& k : pipe) got.push_back(k);
    // a.tar: members at 1024 * m, so 8192 bytes hold k0..k3 whole.
    const std::vector<std::string> expected{"k0:class of k0", "k1:class of k1", "k2:class of k2",
                                            "k3:class of k3", "k0:class of k0", "k1:class of k1",
                                            "k2:class of k2", "k3:class of k3", "k4:class of k4",
                                            "k5:class of k5", "k6:class of k6", "k7:class of k7"};
    BOOST_TEST(got == expected, boost::test_tools::per_element());
    std::map<std::string, std::string> failed;
    for (const auto& f : pipe.failures()) failed[f.input] = f.message;
    BOOST_TEST_REQUIRE(failed.size() == 2U);
    BOOST_TEST(failed.at(missing).find("reading at byte 0 failed: read_url: '" + missing +
                                       "': HTTP 404 Not Found: no such shard") != std::string::npos,
               failed.at(missing));
    BOOST_TEST_REQUIRE(failed.count(failing + "#@8192") == 1U);
    BOOST_TEST(
        failed.at(failing + "#@8192").find("reading at byte 8192 failed") != std::string::npos,
        failed.at(failing + "#@8192"));
    BOOST_TEST(failed.at(failing + "#@8192").find("HTTP 503") != std::string::npos);
    BOOST_TEST(at_8192.load() == 3);
    BOOST_TEST(flaky.load() == 2);
    const auto stats = pipe.stats();
    BOOST_TEST(stats.produced == stats.delivered + stats.failed);
}

BOOST_AUTO_TEST_SUITE_END()
