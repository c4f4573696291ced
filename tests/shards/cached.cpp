// SPDX-License-Identifier: Apache-2.0
/// \file
/// tar_samples over remote shards through ferry::ops::cached_ranges: the first epoch fills the
/// cache with each shard, the second reads local disk only, with the same samples.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <ferry/cache.hpp>
#include <ferry/ferry.hpp>
#include <ferry/http.hpp>
#include <ferry/shards.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "tar_writer.hpp"

using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using ferry_test::temp_folder;

BOOST_AUTO_TEST_SUITE(shards)

// Three shards on the server, read in 1000-byte chunks through cached_ranges: epoch 1 makes one
// whole-shard GET each (no Range), epoch 2 makes none and gives the same samples, which are
// the local files' samples.
BOOST_AUTO_TEST_CASE(cached_shards_are_read_from_disk_in_epoch_two) {
    temp_folder dir("ferry-shards-cached");
    const std::vector<std::string> local = ferry_test::write_shards(
        dir.path(), 3,
        [](int s) {
            auto members = ferry_test::shard_samples(s, 5, "k");
            for (int i = 0; i < 5; ++i) {
                members[2 * static_cast<std::size_t>(i)].data +=
                    ferry_test::random_body(3000 + 500 * static_cast<std::size_t>(i), 40 + i);
            }
            return members;
        },
        "shard");
    std::map<std::string, std::string> files;
    for (const auto& path : local) {
        files["/" + std::filesystem::path(path).filename().string()] = ferry_test::read_bytes(path);
    }
    std::vector<std::string> remote;
    std::atomic<int> gets{0}, ranged{0};
    http_server server([&](const http_request& r) {
        ++gets;
        if (!r.header("range").empty()) ++ranged;
        const auto it = files.find(r.target);
        if (it == files.end()) return http_response{.status = 404};
        return ferry_test::ranged(it->second, r);
    });
    for (const auto& [path, bytes] : files) remote.push_back(server.url(path));
    const auto cache = ferry::ops::open_cache({.dir = dir / "cache", .max_bytes = 10 << 20});
    const auto samples = [](const ferry::sources::tar_samples_source& src, std::uint64_t epoch) {
        std::vector<std::string> out;
        for (auto&& s : src(epoch)) {
            std::string fields;
            for (const auto& [ext, data] : s.fields) {
                fields += ext + "=" + ferry_test::as_string(data) + ";";
            }
            out.push_back(s.key + "|" + (s.damaged() ? "damaged" : fields));
        }
        return out;
    };
    const auto expected = samples(ferry::sources::tar_samples(local, {}), 0);
    BOOST_TEST_REQUIRE(expected.size() == 15U);
    const auto src = ferry::sources::tar_samples(
        remote, {.read_remote = ferry::ops::cached_ranges{cache}, .remote_chunk = 1000});
    BOOST_TEST(samples(src, 0) == expected, boost::test_tools::per_element());
    BOOST_TEST(gets.load() == 3);
    BOOST_TEST(ranged.load() == 0);
    BOOST_TEST(samples(src, 1) == expected, boost::test_tools::per_element());
    BOOST_TEST(gets.load() == 3);
    const auto st = cache->stats();
    BOOST_TEST(st.misses == 3U);
    BOOST_TEST(st.entries == 3U);
    BOOST_TEST(st.hits > 3U * 20U);  // every chunk after the first of each shard
}

BOOST_AUTO_TEST_SUITE_END()
