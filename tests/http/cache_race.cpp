// SPDX-License-Identifier: Apache-2.0
/// \file
/// The cache folder moved under an open cache, as another local user would move it to make the
/// cache serve what they planted: the folder's path a link re-pointed after open_cache, its
/// parent renamed away and replaced. The open cache reads and writes the folder it opened, never
/// what its path names now.
#include <boost/test/unit_test.hpp>
#include <ferry/cache.hpp>
#include <ferry/http.hpp>
#include <filesystem>
#include <string>

#include "cache_support.hpp"

using ferry_test::object_server;
using ferry_test::plant_entry;
using ferry_test::random_body;
using ferry_test::read;
using ferry_test::served;
using ferry_test::temp_folder;

namespace cache_race_test {

/// What the planted entries hold: a read that returns it was served someone else's bytes.
const std::string poison = "POISONED-BY-UID-65534";

}  // namespace cache_race_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(cache)
using namespace cache_race_test;

// A cache opened through a link (root/cache -> a) keeps reading and writing folder a after the
// link is re-pointed at a folder b holding a planted entry for the same URL: the read is a hit
// of a's entry, b's bytes are never served, and a new fill lands in a, not in b.
BOOST_AUTO_TEST_CASE(a_folder_link_repointed_after_open_serves_nothing_planted) {
    temp_folder root("ferry-cache-relink");
    object_server s;
    const std::string body = random_body(6000, 51);
    s.put("/x", body);
    s.put("/y", random_body(3000, 52));
    std::filesystem::create_directory(root / "a");
    std::filesystem::create_directory_symlink(root / "a", root / "cache");
    const auto cache = ferry::ops::open_cache({.dir = root / "cache"});
    BOOST_TEST(read(s.url("/x"), cache) == body);

    plant_entry(s, "/x", root / "b", poison);
    std::filesystem::create_directory_symlink(root / "b", root / "cache.new");
    std::filesystem::rename(root / "cache.new", root / "cache");  // the link now names b
    BOOST_TEST_REQUIRE(std::filesystem::read_symlink(root / "cache") == root / "b");

    const std::string got = read(s.url("/x"), cache);
    BOOST_TEST((got == body), served(got));
    BOOST_TEST(cache->stats().hits == 1U);
    BOOST_TEST(s.gets.load() == 2, "GETs: the fill and the plant");
    BOOST_TEST(read(s.url("/y"), cache) == random_body(3000, 52));
    const auto y = cache->entry_path(s.url("/y")).filename();
    BOOST_TEST(std::filesystem::exists(root / "a" / y), "the fill is not in the folder opened");
    BOOST_TEST(!std::filesystem::exists(root / "b" / y), "the fill went where the link points now");
}

// A cache at root/p/cache keeps reading and writing its folder after p is renamed away and a
// new p/cache with a planted entry for the same URL takes its place: nothing planted is
// served, and a new fill lands in the folder opened (now p-moved/cache).
BOOST_AUTO_TEST_CASE(a_parent_swapped_after_open_serves_nothing_planted) {
    temp_folder root("ferry-cache-reparent");
    object_server s;
    const std::string body = random_body(7000, 53);
    s.put("/x", body);
    s.put("/y", random_body(2000, 54));
    const auto cache = ferry::ops::open_cache({.dir = root / "p" / "cache"});
    BOOST_TEST(read(s.url("/x"), cache) == body);

    std::filesystem::rename(root / "p", root / "p-moved");
    plant_entry(s, "/x", root / "p" / "cache", poison);

    const std::string got = read(s.url("/x"), cache);
    BOOST_TEST((got == body), served(got));
    BOOST_TEST(cache->stats().hits == 1U);
    BOOST_TEST(s.gets.load() == 2, "GETs: the fill and the plant");
    BOOST_TEST(read(s.url("/y"), cache) == random_body(2000, 54));
    const auto y = cache->entry_path(s.url("/y")).filename();
    BOOST_TEST(std::filesystem::exists(root / "p-moved" / "cache" / y),
               "the fill is not in the folder opened");
    BOOST_TEST(!std::filesystem::exists(root / "p" / "cache" / y),
               "the fill went to the folder that took its place");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
