// SPDX-License-Identifier: Apache-2.0
/// \file
/// tar_samples on good shards: WebDataset's key rule, shard order over epochs and ranks, the
/// shuffle buffer, the tar CLI's plain and compressed shards (resume: resume.cpp).
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <ferry/ferry.hpp>
#include <ferry/shards.hpp>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tar_writer.hpp"

using ferry_test::sample_members;
using ferry_test::tar_member;
using ferry_test::temp_folder;
using ferry_test::write_tar;

namespace {

std::string text(const ferry::bytes& b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// `shards` shards of `per` samples each, keys "s<shard>-<i>", written to `dir`.
std::vector<std::string> make_shards(const temp_folder& dir, int shards, int per) {
    return ferry_test::write_shards(dir.path(), shards,
                                    [per](int s) { return ferry_test::shard_samples(s, per); });
}

/// The keys one epoch of `src` delivers, read straight from the range.
std::vector<std::string> keys_of(const ferry::sources::tar_samples_source& src,
                                 std::uint64_t epoch) {
    std::vector<std::string> keys;
    for (auto&& s : src(epoch)) keys.push_back(s.key);
    return keys;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shards)

// A sample is the consecutive members of one key; the extension is what follows the first dot of
// the file name, lower-cased; folders and names without an extension are not samples.
BOOST_AUTO_TEST_CASE(members_sharing_a_key_make_one_sample) {
    temp_folder dir("ferry-shards-keys");
    write_tar(dir / "a.tar", {{"train", "", true},
                              {"train/000001.jpg", "J1"},
                              {"train/000001.cls", "3"},
                              {"train/000001.seg.PNG", "S1"},
                              {"train/README", "not a sample"},
                              {"train/000002.jpg", "J2"},
                              {"train/.hidden.jpg", "skipped"},
                              {"train/000003.txt", ""}});
    const auto src = ferry::sources::tar_samples({(dir / "a.tar").string()});
    std::vector<ferry::sample> got;
    for (auto&& s : src(0)) got.push_back(std::move(s));
    BOOST_TEST_REQUIRE(got.size() == 3U);
    BOOST_TEST(got[0].key == "train/000001");
    BOOST_TEST(got[0].shard == (dir / "a.tar").string());
    BOOST_TEST(got[0].path == (dir / "a.tar").string() + "#train/000001");
    BOOST_TEST(got[0].fields.size() == 3U);
    BOOST_TEST(text(got[0].fields.at("jpg")) == "J1");
    BOOST_TEST(text(got[0].fields.at("cls")) == "3");
    BOOST_TEST(text(got[0].fields.at("seg.png")) == "S1");
    BOOST_TEST(!got[0].damaged());
    BOOST_TEST(got[1].key == "train/000002");
    BOOST_TEST(got[1].fields.size() == 1U);
    BOOST_TEST(got[2].key == "train/000003");
    BOOST_TEST(got[2].fields.at("txt").empty());
}

// A missing field is a decode_error that names the shard, the sample, the extension asked for
// and those the sample has.
BOOST_AUTO_TEST_CASE(a_missing_field_names_the_sample_and_what_it_has) {
    temp_folder dir("ferry-shards-missing");
    write_tar(dir / "a.tar", sample_members("k"));
    const auto src = ferry::sources::tar_samples({(dir / "a.tar").string()});
    for (auto&& s : src(0)) {
        BOOST_TEST(!s.fields.contains("png"));
        BOOST_TEST(s.fields.find("png") == nullptr);
        try {
            (void)s.fields.at("png");
            BOOST_FAIL("no error");
        } catch (const ferry::decode_error& e) {
            BOOST_TEST(std::string(e.what()) ==
                       "tar_samples: shard '" + (dir / "a.tar").string() +
                           "', sample 'k': no member with extension 'png' (it has: cls, jpg)");
        }
    }
}

// WebDataset starts a new sample at a shard's start: a key that continues in the next shard is
// two samples, each with its own shard's members.
BOOST_AUTO_TEST_CASE(a_key_split_across_shards_is_two_samples) {
    temp_folder dir("ferry-shards-split");
    write_tar(dir / "0.tar", {{"k1.jpg", "a"}, {"k2.jpg", "b"}});
    write_tar(dir / "1.tar", {{"k2.cls", "c"}, {"k3.jpg", "d"}});
    const auto src =
        ferry::sources::tar_samples({(dir / "0.tar").string(), (dir / "1.tar").string()});
    std::vector<std::string> seen;
    for (auto&& s : src(0)) {
        std::string fields;
        for (const auto& [ext, data] : s.fields) fields += ext + "=" + text(data) + ";";
        seen.push_back(s.key + ":" + fields);
    }
    const std::vector<std::string> expected{"k1:jpg=a;", "k2:jpg=b;", "k2:cls=c;", "k3:jpg=d;"};
    BOOST_TEST(seen == expected, boost::test_tools::per_element());
}

// The tar CLI's shards, plain, gzip and zstd, give the same samples as each other; the
// compression is recognised from the bytes (a .tar name on a gzip file works too).
BOOST_AUTO_TEST_CASE(tar_cli_shards_plain_gzip_and_zstd_read_alike) {
    temp_folder dir("ferry-shards-cli");
    std::filesystem::create_directories(dir / "src");
    for (int i = 0; i < 20; ++i) {
        for (const auto* ext : {"jpg", "cls"}) {
            std::ofstream(dir / ("src/" + std::to_string(1000 + i) + "." + ext))
                << ext << " of " << i << std::string(static_cast<std::size_t>(i * 100), 'x');
        }
    }
    const auto d = dir.path().string();
    const std::string cmd = "cd '" + d +
                            "/src' && ls | sort > ../list && tar cf ../p.tar -T ../list" +
                            " && tar czf ../g.tar.gz -T ../list && tar --zstd -cf ../z.tar.zst -T "
                            "../list && cp ../g.tar.gz ../g-named.tar";
    BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0);
    const auto read_all = [](const std::string& shard) {
        std::vector<std::string> out;
        for (auto&& s : ferry::sources::tar_samples({shard})(0)) {
            out.push_back(s.key + "|" + text(s.fields.at("jpg")) + "|" + text(s.fields.at("cls")));
        }
        return out;
    };
    const auto plain = read_all(d + "/p.tar");
    BOOST_TEST_REQUIRE(plain.size() == 20U);
    BOOST_TEST(plain.front().starts_with("1000|jpg of 0|cls of 0"));
    BOOST_TEST(read_all(d + "/g.tar.gz") == plain, boost::test_tools::per_element());
    BOOST_TEST(read_all(d + "/z.tar.zst") == plain, boost::test_tools::per_element());
    BOOST_TEST(read_all(d + "/g-named.tar") == plain, boost::test_tools::per_element());
    BOOST_TEST(read_all("file://" + d + "/p.tar") == plain, boost::test_tools::per_element());
}

// Shards are visited in the sampler's order: shuffled per epoch, the same for the same seed,
// split over ranks so that the ranks' samples are disjoint and together the whole epoch.
BOOST_AUTO_TEST_CASE(shards_are_shuffled_per_epoch_and_split_over_ranks) {
    temp_folder dir("ferry-shards-ranks");
    const auto shards = make_shards(dir, 8, 3);
    const auto whole =
        keys_of(ferry::sources::tar_samples(shards, {.sampling = {.shuffle = true, .seed = 5}}), 0);
    BOOST_TEST_REQUIRE(whole.size() == 24U);
    // Within a shard the order is the shard's.
    for (std::size_t i = 0; i < whole.size(); i += 3) {
        const auto shard = whole[i].substr(0, whole[i].find('-'));
        BOOST_TEST(whole[i] == shard + "-0");
        BOOST_TEST(whole[i + 2] == shard + "-2");
    }
    const auto again =
        keys_of(ferry::sources::tar_samples(shards, {.sampling = {.shuffle = true, .seed = 5}}), 0);
    BOOST_TEST(again == whole);
    const auto next =
        keys_of(ferry::sources::tar_samples(shards, {.sampling = {.shuffle = true, .seed = 5}}), 1);
    BOOST_TEST(next != whole);
    BOOST_TEST(std::set(next.begin(), next.end()) == std::set(whole.begin(), whole.end()));

    std::multiset<std::string> over_ranks;
    for (std::size_t r = 0; r < 3; ++r) {
        // 8 shards over 3 ranks, padded: 3 shards each, one shard read twice.
        const auto part = keys_of(
            ferry::sources::tar_samples(
                shards, {.sampling = {.shuffle = true, .seed = 5, .rank = r, .world_size = 3}}),
            0);
        BOOST_TEST(part.size() == 9U);
        over_ranks.insert(part.begin(), part.end());
    }
    BOOST_TEST(over_ranks.size() == 27U);
    BOOST_TEST(std::set(over_ranks.begin(), over_ranks.end()).size() == 24U);
}

// The shuffle buffer permutes samples within a bounded window: every sample once, an order that
// depends on the seed and the epoch, and no sample earlier than the buffer could have read it.
BOOST_AUTO_TEST_CASE(the_shuffle_buffer_permutes_within_its_window) {
    temp_folder dir("ferry-shards-buffer");
    const auto shards = make_shards(dir, 1, 300);
    const auto src = ferry::sources::tar_samples(shards, {.shuffle_buffer = 20});
    const auto order = keys_of(src, 0);
    BOOST_TEST_REQUIRE(order.size() == 300U);
    BOOST_TEST(std::set(order.begin(), order.end()).size() == 300U);
    std::size_t moved = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const auto i = std::stoul(order[k].substr(order[k].find('-') + 1));
        // Each delivery reads at most two samples: output k has seen at most 2k + 2 of them.
        BOOST_TEST(i < 2 * k + 2 + 20);
        moved += i != k ? 1 : 0;
    }
    BOOST_TEST(moved > 250U);
    BOOST_TEST(keys_of(src, 0) == order);
    BOOST_TEST(keys_of(src, 1) != order);
    BOOST_TEST(keys_of(ferry::sources::tar_samples(shards, {.shuffle_buffer = 0}), 0).front() ==
               "s0-0");
}

// Options that cannot work fail at once: a remote shard (not read yet), a rank out of range.
BOOST_AUTO_TEST_CASE(options_that_cannot_work_are_refused_at_once) {
    BOOST_CHECK_THROW((void)ferry::sources::tar_samples({"http://127.0.0.1:1/a.tar"}),
                      ferry::invalid_argument);
    BOOST_CHECK_THROW(
        (void)ferry::sources::tar_samples({"a.tar"}, {.sampling = {.rank = 2, .world_size = 2}}),
        ferry::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
