// SPDX-License-Identifier: Apache-2.0
/// \file
/// tar_samples on damaged shards: every kind of damage becomes a failed sample with a typed
/// error that says where, the good samples around it arrive, and the accounting adds up.
#include <boost/test/unit_test.hpp>
#include <ferry/ferry.hpp>
#include <ferry/shards.hpp>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tar_writer.hpp"

using ferry_test::numbered_samples;
using ferry_test::read_bytes;
using ferry_test::sample_members;
using ferry_test::temp_folder;
using ferry_test::write_bytes;
using ferry_test::write_tar;

namespace {

const ferry::logger quiet = [](ferry::log_level, std::string_view) {};

struct outcome {
    std::vector<std::string> delivered;         // keys
    std::map<std::string, std::string> failed;  // failure input -> message
    ferry::pipeline_stats stats;
};

/// Runs the shards through a map that reads both fields, under skip.
outcome run(const std::vector<std::string>& shards, std::uint64_t max_member_bytes = 1 << 20) {
    auto pipe =
        ferry::from(ferry::sources::tar_samples(shards, {.max_member_bytes = max_member_bytes}))
            .map(
                [](const ferry::sample& s) {
                    (void)s.fields.at("jpg");
                    (void)s.fields.at("cls");
                    return s.key;
                },
                {.concurrency = 2, .name = "read", .on_error = ferry::skip})
            .build({.threads = 2, .logger = quiet, .max_epoch_failure_rate = 1.0});
    outcome o;
    for (auto& k : pipe) o.delivered.push_back(k);
    for (const auto& f : pipe.failures()) {
        BOOST_TEST(f.stage == "read");
        o.failed[f.input] = f.message;
    }
    o.stats = pipe.stats();
    BOOST_TEST(o.stats.produced == o.stats.delivered + o.stats.failed + o.stats.filtered);
    return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shards)

// A shard cut inside a member: the samples before it arrive, the cut one fails naming the member
// and how much of it there was, and the next shard is read as usual.
BOOST_AUTO_TEST_CASE(a_cut_shard_fails_the_cut_sample_only) {
    temp_folder dir("ferry-shards-cut");
    write_tar(dir / "whole.tar", numbered_samples(4));
    const auto bytes = read_bytes(dir / "whole.tar");
    // Member 5 (k2.cls) has its header at 5120 and its data at 5632: cut 4 bytes into the data.
    write_bytes(dir / "cut.tar", bytes.substr(0, 5636));
    write_tar(dir / "next.tar", numbered_samples(2, "n"));
    const auto cut = (dir / "cut.tar").string();
    const auto o = run({cut, (dir / "next.tar").string()});
    const std::vector<std::string> expected{"k0", "k1", "n0", "n1"};
    BOOST_TEST(o.delivered == expected, boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(o.failed.size() == 1U);
    BOOST_TEST(o.failed.begin()->first == cut + "#k2");
    BOOST_TEST(o.failed.begin()->second.find("member 'k2.cls': cut short after 0 of 11 bytes") !=
                   std::string::npos,
               o.failed.begin()->second);
    BOOST_TEST(o.stats.produced == 5U);
}

// A bad header in the middle: the samples before it arrive; the rest of the shard, which cannot
// be read, is one failed sample that says after which member.
BOOST_AUTO_TEST_CASE(a_bad_header_loses_the_rest_of_its_shard_as_one_failure) {
    temp_folder dir("ferry-shards-header");
    write_tar(dir / "whole.tar", numbered_samples(4));
    auto bytes = read_bytes(dir / "whole.tar");
    bytes[4096 + 148] ^= 0x55;  // member 4's header checksum
    write_bytes(dir / "bad.tar", bytes);
    const auto bad = (dir / "bad.tar").string();
    const auto o = run({bad});
    const std::vector<std::string> expected{"k0", "k1"};
    BOOST_TEST(o.delivered == expected, boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(o.failed.size() == 1U);
    BOOST_TEST(o.failed.begin()->first == bad + "#@4608");
    BOOST_TEST(
        o.failed.begin()->second.find("bad header after member 'k1.cls' (read stopped at "
                                      "byte 4608): Damaged tar archive") != std::string::npos,
        o.failed.begin()->second);
}

// A member larger than max_member_bytes is not read: its sample fails with the sizes, and the
// samples after it arrive.
BOOST_AUTO_TEST_CASE(a_member_over_the_limit_fails_its_sample) {
    temp_folder dir("ferry-shards-big");
    auto members = numbered_samples(3);
    members[2].data = std::string(5000, 'b');  // k1.jpg
    write_tar(dir / "a.tar", members);
    const auto shard = (dir / "a.tar").string();
    const auto o = run({shard}, 4096);
    const std::vector<std::string> expected{"k0", "k2"};
    BOOST_TEST(o.delivered == expected, boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(o.failed.count(shard + "#k1") == 1U);
    BOOST_TEST(o.failed.at(shard + "#k1")
                   .find("member 'k1.jpg': 5000 bytes, over max_member_bytes (4096)") !=
               std::string::npos);
}

// A header that declares a huge member in a short file: a failed sample, not an allocation of
// the declared size.
BOOST_AUTO_TEST_CASE(a_huge_declared_size_in_a_short_file_fails_its_sample) {
    temp_folder dir("ferry-shards-huge");
    write_tar(dir / "whole.tar", numbered_samples(2));
    auto bytes = read_bytes(dir / "whole.tar");
    // Member 2 (k1.jpg): size field (octal, 12 bytes at 124) set to 077777777777 (8 GiB).
    const std::string size = "77777777777";
    bytes.replace(2048 + 124, size.size(), size);
    // Its checksum (at 148, 6 octal digits, NUL, space) recomputed over the header with the
    // checksum field read as spaces.
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i) {
        sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(bytes[2048 + i]);
    }
    char field[8];
    std::snprintf(field, sizeof field, "%06o", sum);
    bytes.replace(2048 + 148, 6, field, 6);
    bytes[2048 + 154] = '\0';
    bytes[2048 + 155] = ' ';
    write_bytes(dir / "huge.tar", bytes);
    const auto shard = (dir / "huge.tar").string();
    const auto o = run({shard});
    const std::vector<std::string> expected{"k0"};
    BOOST_TEST(o.delivered == expected, boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(o.failed.count(shard + "#k1") == 1U);
    BOOST_TEST(o.failed.at(shard + "#k1").find("8589934591 bytes, over max_member_bytes") !=
                   std::string::npos,
               o.failed.at(shard + "#k1"));
}

// Not a tar at all, empty, or missing: each shard is one failed sample naming it, with a
// decode_error for bytes that are not a tar and an io_error for a file that is not there.
BOOST_AUTO_TEST_CASE(unreadable_shards_are_one_failure_each) {
    temp_folder dir("ferry-shards-unreadable");
    write_bytes(dir / "junk.tar", std::string(3000, 'j'));
    write_tar(dir / "good.tar", numbered_samples(1));
    const auto junk = (dir / "junk.tar").string();
    const auto missing = (dir / "missing.tar").string();
    const auto o = run({junk, missing, (dir / "good.tar").string()});
    const std::vector<std::string> expected{"k0"};
    BOOST_TEST(o.delivered == expected, boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(o.failed.size() == 2U);
    BOOST_TEST(o.failed.at(junk).find("tar_samples: shard '" + junk + "': not a tar archive") !=
                   std::string::npos,
               o.failed.at(junk));
    BOOST_TEST(o.failed.at(missing).find("cannot open") != std::string::npos, o.failed.at(missing));
    // The types, straight from the range.
    for (auto&& s : ferry::sources::tar_samples({missing})(0)) {
        BOOST_TEST(s.damaged());
        BOOST_CHECK_THROW((void)s.fields.at("jpg"), ferry::io_error);
    }
    for (auto&& s : ferry::sources::tar_samples({junk})(0)) {
        BOOST_TEST(s.damaged());
        BOOST_CHECK_THROW((void)s.fields.at("jpg"), ferry::decode_error);
    }
}

// Two members of one key with one extension: WebDataset refuses the sample; so does ferry.
BOOST_AUTO_TEST_CASE(a_duplicate_extension_fails_its_sample) {
    temp_folder dir("ferry-shards-dup");
    write_tar(
        dir / "a.tar",
        {{"k0.jpg", "a"}, {"k0.cls", "1"}, {"k0.jpg", "again"}, {"k1.jpg", "b"}, {"k1.cls", "2"}});
    const auto shard = (dir / "a.tar").string();
    const auto o = run({shard});
    const std::vector<std::string> expected{"k1"};
    BOOST_TEST(o.delivered == expected, boost::test_tools::per_element());
    BOOST_TEST(o.failed.at(shard + "#k0").find("two members with extension 'jpg'") !=
               std::string::npos);
}

// Every cut of a shard: the samples before the cut arrive whole, the rest fails or is absent,
// and nothing crashes or hangs; the delivered and failed samples never overlap.
BOOST_AUTO_TEST_CASE(every_cut_of_a_shard_is_accounted_for) {
    temp_folder dir("ferry-shards-cuts");
    write_tar(dir / "whole.tar", numbered_samples(5));
    const auto bytes = read_bytes(dir / "whole.tar");
    for (std::size_t len = 0; len < bytes.size(); len += 97) {
        const auto path = dir / ("cut-" + std::to_string(len) + ".tar");
        write_bytes(path, bytes.substr(0, len));
        const auto o = run({path.string()});
        // Sample k<i> is whole when its second member's data ends before the cut.
        std::size_t whole = 0;
        while (whole < 5 && 1024 * (2 * whole + 1) + 512 + 10 <= len) ++whole;
        BOOST_TEST(o.delivered.size() == whole, "cut at " << len);
        for (std::size_t i = 0; i < o.delivered.size(); ++i) {
            BOOST_TEST(o.delivered[i] == "k" + std::to_string(i));
        }
        for (const auto& [input, message] : o.failed) {
            BOOST_TEST(message.find("tar_samples: shard") != std::string::npos, message);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
