// SPDX-License-Identifier: Apache-2.0
/// \file
/// tar_samples opened at a position (a resume): the same samples, order and bytes as reading the
/// epoch from its start and dropping what comes before, over shard boundaries, keys split across
/// shards, shuffle buffers, ranks, damaged and compressed shards; and what it costs: the walk to
/// the position fetches headers, not bodies, counted through a range reader.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <ferry/ferry.hpp>
#include <ferry/shards.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tar_writer.hpp"

using ferry_test::numbered_samples;
using ferry_test::read_bytes;
using ferry_test::tar_member;
using ferry_test::temp_folder;
using ferry_test::write_bytes;
using ferry_test::write_tar;

namespace {

/// A sample as text: key, shard and path, and each field's bytes, or the damage's message.
std::string describe(const ferry::sample& s) {
    std::string out = s.key + "|" + s.shard + "|" + s.path + "|";
    if (s.damaged()) {
        try {
            (void)s.fields.at("jpg");
        } catch (const ferry::decode_error& e) {
            out += std::string("decode_error: ") + e.what() + "|";
        } catch (const ferry::io_error& e) {
            out += std::string("io_error: ") + e.what() + "|";
        }
    }
    for (const auto& [ext, data] : s.fields) {
        out +=
            ext + "=" + std::string(reinterpret_cast<const char*>(data.data()), data.size()) + ";";
    }
    return out;
}

/// Epoch `epoch` of `src` from sample `position` on, as text.
std::vector<std::string> read_from(const ferry::sources::tar_samples_source& src,
                                   std::uint64_t epoch, std::uint64_t position) {
    std::vector<std::string> out;
    for (auto&& s : src(epoch, position)) out.push_back(describe(s));
    return out;
}

/// Checks that opening epoch 1 of `src` at each position in `positions` (all of them when
/// empty) delivers what the whole epoch delivers from there.
void check_positions(const std::string& what, const ferry::sources::tar_samples_source& src,
                     std::vector<std::size_t> positions = {}) {
    std::vector<std::string> whole;
    for (auto&& s : src(1)) whole.push_back(describe(s));
    BOOST_TEST_REQUIRE(!whole.empty(), what);
    if (positions.empty()) {
        for (std::size_t p = 0; p <= whole.size(); ++p) positions.push_back(p);
    }
    for (const auto p : positions) {
        const std::vector<std::string> rest(whole.begin() + static_cast<std::ptrdiff_t>(p),
                                            whole.end());
        BOOST_TEST_CONTEXT(what << ", position " << p << " of " << whole.size()) {
            BOOST_TEST(read_from(src, 1, p) == rest, boost::test_tools::per_element());
        }
    }
}

/// 5 shards of 9 samples, "s<shard>-<i>", .jpg of 100 to 5000 bytes (some span a walk's reads,
/// some do not) and .cls; shard s ends with key "split<s>"'s .jpg, which continues in shard
/// s + 1 with its .cls.
std::vector<std::string> make_shards(const temp_folder& dir) {
    return ferry_test::write_shards(dir.path(), 5, [](int s) {
        std::vector<tar_member> members;
        if (s > 0) members.push_back({"split" + std::to_string(s - 1) + ".cls", "split cls"});
        for (int i = 0; i < 9; ++i) {
            const auto key = "s" + std::to_string(s) + "-" + std::to_string(i);
            members.push_back({key + ".jpg", key + std::string(100 + 613 * i, 'a' + s)});
            members.push_back({key + ".cls", std::to_string(i)});
        }
        if (s < 4) members.push_back({"split" + std::to_string(s) + ".jpg", "split jpg"});
        return members;
    });
}

/// Every output of a pipeline over `src` for 2 epochs, with a break after `at` outputs (none:
/// `at` past the end): the outputs before the break, then those of a pipeline resumed from the
/// state saved there.
std::vector<std::string> run(const ferry::sources::tar_samples_source& src, std::size_t at) {
    const auto build = [&src](const ferry::pipeline_options& o) {
        return ferry::from(src).map(describe, 2).build(o);
    };
    std::vector<std::string> out;
    std::string saved;
    {
        auto pipe = build({.threads = 2});
        if (at == 0) saved = pipe.state().serialize();
        for (int e = 0; e < 2 && saved.empty(); ++e) {
            for (auto& x : pipe) {
                out.push_back(x);
                if (out.size() == at) {
                    saved = pipe.state().serialize();
                    break;
                }
            }
        }
        if (saved.empty()) return out;
    }
    const auto st = ferry::pipeline_state::parse(saved);
    auto pipe = build({.threads = 2, .resume_from = st});
    for (auto e = st.epoch(); e < 2; ++e) {
        for (auto& x : pipe) out.push_back(x);
    }
    return out;
}

/// A range reader over local files named `mem://<file name>` in `dir`, counting what it fetches:
/// a remote shard whose reads the test can see.
struct counting_reader {
    struct counts {
        std::mutex m;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> reads;  // offset, bytes
        std::map<std::string, std::string> files;                    // read once
    };
    std::filesystem::path dir;
    std::shared_ptr<counts> seen = std::make_shared<counts>();

    ferry::bytes operator()(const std::string& shard, std::uint64_t offset,
                            std::uint64_t length) const {
        std::lock_guard lock(seen->m);
        auto [file, added] = seen->files.try_emplace(shard);
        if (added) file->second = read_bytes(dir / shard.substr(std::string("mem://").size()));
        const auto at = std::min<std::uint64_t>(offset, file->second.size());
        const auto part = file->second.substr(at, length);
        seen->reads.emplace_back(offset, part.size());
        return ferry::bytes::from_string(part);
    }
    /// How many reads.
    [[nodiscard]] std::size_t requests() const {
        std::lock_guard lock(seen->m);
        return seen->reads.size();
    }
    /// Bytes fetched, all of them or those before byte `end`.
    [[nodiscard]] std::uint64_t fetched(std::uint64_t end = UINT64_MAX) const {
        std::lock_guard lock(seen->m);
        std::uint64_t n = 0;
        for (const auto& [offset, size] : seen->reads) {
            if (offset < end) n += std::min(size, end - offset);
        }
        return n;
    }
    void reset() const {
        std::lock_guard lock(seen->m);
        seen->reads.clear();
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(shards)

// The exactness of a resume: before the break + after the resume == an uninterrupted run, at
// the first sample, mid-shard, a shard boundary, the last sample and the epoch's end, with and
// without a shuffle buffer, on every rank of 1 and of 3, keys split across shards included.
BOOST_AUTO_TEST_CASE(a_resume_at_any_position_delivers_the_uninterrupted_run) {
    temp_folder dir("ferry-shards-resume-matrix");
    const auto shards = make_shards(dir);
    for (const std::size_t buffer : {0U, 1U, 7U, 100U}) {
        for (const std::size_t world : {1U, 3U}) {
            for (std::size_t rank = 0; rank < world; ++rank) {
                const ferry::sampling sampling{
                    .shuffle = true, .seed = 3, .rank = rank, .world_size = world};
                const auto src = ferry::sources::tar_samples(
                    shards, {.sampling = sampling, .shuffle_buffer = buffer});
                // The first shard's end, in shard order.
                std::vector<std::string> shard_order;
                for (auto&& s : ferry::sources::tar_samples(shards, {.sampling = sampling})(0)) {
                    shard_order.push_back(s.shard);
                }
                std::size_t boundary = 0;
                while (shard_order[boundary] == shard_order.front()) ++boundary;
                const std::size_t n = shard_order.size();  // epoch 0's
                const auto whole = run(src, SIZE_MAX);
                BOOST_TEST_REQUIRE(whole.size() > n);
                for (const std::size_t at : {std::size_t{0}, std::size_t{1}, boundary / 2, boundary,
                                             boundary + 1, n - 1, n, n + boundary / 2}) {
                    BOOST_TEST_CONTEXT("buffer " << buffer << ", rank " << rank << " of " << world
                                                 << ", break after " << at << " of " << n) {
                        BOOST_TEST(run(src, at) == whole, boost::test_tools::per_element());
                    }
                }
            }
        }
    }
}

// Opening an epoch at a position, straight from the range, at every position: the samples the
// whole epoch delivers from there, bytes and all.
BOOST_AUTO_TEST_CASE(an_epoch_opened_at_each_position_is_the_rest_of_the_epoch) {
    temp_folder dir("ferry-shards-resume-every");
    const auto shards = make_shards(dir);
    for (const std::size_t buffer : {0U, 1U, 7U, 100U}) {
        for (std::size_t rank = 0; rank < 3; ++rank) {
            check_positions(
                "buffer " + std::to_string(buffer) + ", rank " + std::to_string(rank),
                ferry::sources::tar_samples(
                    shards,
                    {.sampling = {.shuffle = true, .seed = 8, .rank = rank, .world_size = 3},
                     .shuffle_buffer = buffer}));
        }
    }
}

// Damaged shards resume identically: a member cut short (also one whose body the walk skips),
// a cut inside a member's padding, a bad header, a member over max_member_bytes, a duplicate
// extension, a missing shard and one that is no tar: the same damaged samples, messages and
// all, at the same places.
BOOST_AUTO_TEST_CASE(damaged_shards_resume_identically) {
    temp_folder dir("ferry-shards-resume-damaged");
    write_tar(dir / "whole.tar", numbered_samples(6));
    const auto whole = read_bytes(dir / "whole.tar");
    write_bytes(dir / "cut-data.tar", whole.substr(0, 5636));  // 4 bytes into k2.cls's data
    write_bytes(dir / "cut-pad.tar", whole.substr(0, 5632 + 13 + 100));  // after k2.cls's data
    auto bad = whole;
    bad[4096 + 148] ^= 0x55;  // member 4's header checksum
    write_bytes(dir / "bad-header.tar", bad);
    auto big = numbered_samples(4, "b");
    big[2].data = std::string(5000, 'b');  // b1.jpg, over the limit below
    write_tar(dir / "big.tar", big);
    write_tar(
        dir / "dup.tar",
        {{"d0.jpg", "a"}, {"d0.cls", "1"}, {"d0.jpg", "again"}, {"d1.jpg", "b"}, {"d1.cls", "2"}});
    write_bytes(dir / "junk.tar", std::string(3000, 'j'));
    std::vector<std::string> shards;
    for (const char* f : {"whole.tar", "cut-data.tar", "cut-pad.tar", "bad-header.tar", "big.tar",
                          "dup.tar", "missing.tar", "junk.tar"}) {
        shards.push_back((dir / f).string());
    }
    for (const std::size_t buffer : {0U, 1U, 7U, 100U}) {
        for (const std::size_t world : {1U, 3U}) {
            for (std::size_t rank = 0; rank < world; ++rank) {
                check_positions(
                    "buffer " + std::to_string(buffer) + ", rank " + std::to_string(rank) + " of " +
                        std::to_string(world),
                    ferry::sources::tar_samples(shards, {.sampling = {.shuffle = true,
                                                                      .seed = 2,
                                                                      .rank = rank,
                                                                      .world_size = world},
                                                         .shuffle_buffer = buffer,
                                                         .max_member_bytes = 4096}));
            }
        }
    }
}

// Every cut of a shard with members larger than a walk's read: wherever the shard ends (in a
// header, a body the walk skips, its padding), an epoch opened at any position is the rest of
// the whole epoch's, damage included.
BOOST_AUTO_TEST_CASE(every_cut_of_a_shard_resumes_identically) {
    temp_folder dir("ferry-shards-resume-cuts");
    std::vector<tar_member> members;
    for (int i = 0; i < 4; ++i) {
        const auto key = "c" + std::to_string(i);
        members.push_back({key + ".jpg", std::string(2500 + 700 * i, 'x')});
        members.push_back({key + ".cls", std::to_string(i)});
    }
    write_tar(dir / "whole.tar", members);
    write_tar(dir / "next.tar", numbered_samples(2, "n"));
    const auto bytes = read_bytes(dir / "whole.tar");
    const auto next = (dir / "next.tar").string();
    for (std::size_t len = 0; len < bytes.size(); len += 89) {
        const auto path = dir / ("cut-" + std::to_string(len) + ".tar");
        write_bytes(path, bytes.substr(0, len));
        for (const std::size_t buffer : {0U, 3U}) {
            check_positions(
                "cut at " + std::to_string(len) + ", buffer " + std::to_string(buffer),
                ferry::sources::tar_samples({path.string(), next}, {.shuffle_buffer = buffer}));
        }
    }
}

// Compressed shards (gzip, zstd), local and remote, resume exactly: their bodies are read (they
// must be decompressed), beside plain shards that are walked.
BOOST_AUTO_TEST_CASE(compressed_shards_resume_exactly) {
    temp_folder dir("ferry-shards-resume-gz");
    write_tar(dir / "a.tar", numbered_samples(7, "a"));
    write_tar(dir / "b.tar", numbered_samples(5, "b"));
    const std::string cmd = "cd '" + dir.path().string() +
                            "' && gzip -k -n a.tar && zstd -q -k b.tar && cp b.tar c.tar";
    BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0);
    const counting_reader reader{dir.path()};
    for (const std::size_t buffer : {0U, 7U}) {
        check_positions(
            "local, buffer " + std::to_string(buffer),
            ferry::sources::tar_samples({(dir / "a.tar.gz").string(), (dir / "b.tar.zst").string(),
                                         (dir / "c.tar").string()},
                                        {.shuffle_buffer = buffer}));
        check_positions(
            "remote, buffer " + std::to_string(buffer),
            ferry::sources::tar_samples(
                {"mem://a.tar.gz", "mem://c.tar", "mem://b.tar.zst"},
                {.shuffle_buffer = buffer, .read_remote = reader, .remote_chunk = 700}));
    }
}

// Sparse members (GNU tar -S), whose bytes in the tar are not their data, resume exactly: the
// walk reads them rather than taking their bytes by offset.
BOOST_AUTO_TEST_CASE(sparse_members_resume_exactly) {
    temp_folder dir("ferry-shards-resume-sparse");
    std::filesystem::create_directories(dir / "src");
    for (int i = 0; i < 4; ++i) {
        const auto key = dir / ("src/" + std::to_string(i));
        // 64 KiB of holes around a few bytes: a sparse .jpg, and a plain .cls.
        const std::string make = "cd '" + (dir / "src").string() + "' && truncate -s 65536 " +
                                 std::to_string(i) + ".jpg && printf 'data%d' " +
                                 std::to_string(i) + " | dd of=" + std::to_string(i) +
                                 ".jpg bs=1 seek=30000 conv=notrunc status=none && echo " +
                                 std::to_string(i) + " > " + std::to_string(i) + ".cls";
        BOOST_TEST_REQUIRE(std::system(make.c_str()) == 0);
    }
    const std::string pack = "cd '" + (dir / "src").string() +
                             "' && tar -S -cf ../sparse.tar 0.jpg 0.cls 1.jpg 1.cls 2.jpg 2.cls "
                             "3.jpg 3.cls";
    BOOST_TEST_REQUIRE(std::system(pack.c_str()) == 0);
    write_tar(dir / "plain.tar", numbered_samples(3, "p"));
    const auto src = ferry::sources::tar_samples(
        {(dir / "sparse.tar").string(), (dir / "plain.tar").string()}, {.shuffle_buffer = 3});
    // Every sparse sample read whole: its holes as zeros, its data where it was written.
    std::set<std::string> keys;
    for (auto&& s : src(1)) {
        keys.insert(s.key);
        if (s.key.size() != 1) continue;  // p0..p2, the plain shard's
        std::string want(65536, '\0');
        want.replace(30000, 5, "data" + s.key);
        const auto& jpg = s.fields.at("jpg");
        BOOST_TEST((std::string(reinterpret_cast<const char*>(jpg.data()), jpg.size()) == want),
                   "sparse sample " << s.key);
        const auto& cls = s.fields.at("cls");
        BOOST_TEST(std::string(reinterpret_cast<const char*>(cls.data()), cls.size()) ==
                   s.key + "\n");
    }
    BOOST_TEST(keys == (std::set<std::string>{"0", "1", "2", "3", "p0", "p1", "p2"}),
               boost::test_tools::per_element());
    check_positions("sparse", src);
}

// What a resume costs on an uncompressed remote shard: before the resume position it fetches
// one walk read per sample (the window after a .jpg's skipped body holds its .cls and the next
// header: 1537 bytes), well under a tenth of the 22016 bytes a sample takes, where reading the
// epoch again fetches all of them.
BOOST_AUTO_TEST_CASE(a_resume_fetches_headers_not_bodies_before_its_position) {
    temp_folder dir("ferry-shards-resume-cost");
    constexpr int samples = 600;
    constexpr std::uint64_t position = 500;
    // Per sample: a 512-byte header and 20 KiB for the .jpg, a header and a padded block for
    // the .cls.
    constexpr std::uint64_t sample_bytes = 512 + 20480 + 512 + 512;
    std::vector<tar_member> members;
    for (int i = 0; i < samples; ++i) {
        const auto key = "k" + std::to_string(i);
        members.push_back({key + ".jpg", std::string(20480, static_cast<char>('a' + i % 26))});
        members.push_back({key + ".cls", std::to_string(i)});
    }
    write_tar(dir / "big.tar", members);
    const counting_reader reader{dir.path()};
    const std::uint64_t before = position * sample_bytes;  // the resume position's first byte
    for (const std::size_t buffer : {0U, 100U}) {
        BOOST_TEST_CONTEXT("buffer " << buffer) {
            const auto src = ferry::sources::tar_samples(
                {"mem://big.tar"},
                {.shuffle_buffer = buffer, .read_remote = reader, .remote_chunk = 64 * 1024});
            std::vector<std::string> expected;
            {
                // Reading the epoch again and dropping the samples before the position.
                auto epoch = src(0);
                auto it = epoch.begin();
                for (std::uint64_t i = 0; i < position; ++i) ++it;
                expected.push_back(describe(*it));
            }
            const auto dropped = reader.fetched();
            reader.reset();
            auto epoch = src(0, position);
            auto it = epoch.begin();
            BOOST_TEST_REQUIRE(!(it == std::default_sentinel));
            BOOST_TEST(describe(*it) == expected.front());
            const auto walked = reader.fetched(before);
            const auto total = reader.fetched();
            BOOST_TEST_MESSAGE("buffer " << buffer << ": to the first sample after position "
                                         << position << ", reading again fetched " << dropped
                                         << " bytes, the positioned open " << total << " ("
                                         << walked << " before the position)");
            BOOST_TEST(dropped >= before);
            if (buffer == 0) {
                // One read per sample walked, and the first; none of the bodies.
                BOOST_TEST(walked <= (position + 2) * 1537);
                BOOST_TEST(walked * 10 < before);
                // After the position: the walk's reads for the .jpg that ends the last sample
                // before it (its header, the window after its body), that body again, and one
                // chunk.
                BOOST_TEST(total <= walked + 2 * 1537 + 20480 + 64 * 1024);
            } else {
                // Bodies read again: at most those of the buffer's samples and the one being
                // grouped (and a header or a small member between two of them).
                BOOST_TEST(total <= (position + 2) * 1537 + (buffer + 2) * (sample_bytes + 4096) +
                                        64 * 1024);
                BOOST_TEST(total * 3 < before);
            }
        }
    }
}

// Over small members a walk reads through rather than fetching header by header: a remote
// shard of 3000 one-block members, resumed at sample 2500, costs a few reads that double up to
// `remote_chunk` (64 KiB: from 1.5 KiB, 6 doublings, then ~40 chunks for 2.5 MB), not one
// request per member.
BOOST_AUTO_TEST_CASE(a_walk_over_small_members_reads_through_in_few_requests) {
    temp_folder dir("ferry-shards-resume-small");
    std::vector<tar_member> members;
    for (int i = 0; i < 3000; ++i) members.push_back({"t" + std::to_string(i) + ".txt", "x"});
    write_tar(dir / "small.tar", members);
    const counting_reader reader{dir.path()};
    const auto src = ferry::sources::tar_samples(
        {"mem://small.tar"}, {.read_remote = reader, .remote_chunk = 64 * 1024});
    auto epoch = src(0, 2500);
    auto it = epoch.begin();
    BOOST_TEST_REQUIRE(!(it == std::default_sentinel));
    BOOST_TEST((*it).key == "t2500");
    BOOST_TEST_MESSAGE("3000 small members, resumed at 2500: " << reader.requests() << " reads, "
                                                               << reader.fetched() << " bytes");
    BOOST_TEST(reader.requests() < 60U);
    BOOST_TEST(reader.fetched() < 2500U * 1024 + 2 * 64 * 1024);
    check_positions("small members", src, {0, 1, 1000, 2999, 3000});
}

BOOST_AUTO_TEST_SUITE_END()
