// SPDX-License-Identifier: Apache-2.0
/// \file
/// tar_samples over shards nobody checked: presigned shard URLs stay out of messages, logs and
/// the quarantine file; member names cannot forge log lines; shard bytes cannot make libarchive
/// run a program; a small compressed shard cannot expand into a huge sample.
#include <archive.h>
#include <archive_entry.h>
#include <boost/test/unit_test.hpp>
#include <ferry/ferry.hpp>
#include <ferry/shards.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "tar_writer.hpp"

using ferry_test::numbered_samples;
using ferry_test::read_bytes;
using ferry_test::tar_member;
using ferry_test::temp_folder;
using ferry_test::write_bytes;
using ferry_test::write_tar;

namespace untrusted_test {

/// A presigned shard URL, as list_objects' users pass them.
const std::string presigned =
    "https://h.example/x.tar?X-Amz-Credential=AKIDSHARD&X-Amz-Signature=SIGSHARD";

/// The damage of a damaged sample: its type's name and its message.
struct damage {
    std::string type;
    std::string what;
};

damage damage_of(const ferry::sample& s) {
    if (!s.damaged()) return {"none", "(not damaged)"};
    try {
        std::rethrow_exception(s.fields.damage());
    } catch (const ferry::decode_error& e) {
        return {"decode_error", e.what()};
    } catch (const ferry::io_error& e) {
        return {"io_error", e.what()};
    } catch (const std::exception& e) {
        return {"other", e.what()};
    }
}

/// Every sample of epoch 0 of `shards` read with `options`.
std::vector<ferry::sample> read_all(const std::vector<std::string>& shards,
                                    const ferry::sources::tar_options& options = {}) {
    std::vector<ferry::sample> out;
    for (auto&& s : ferry::sources::tar_samples(shards, options)(0)) out.push_back(std::move(s));
    return out;
}

/// A range reader that serves `shards` (URL -> bytes) from memory, and fails reads of a URL
/// not there with an error that names the URL in full, as a careless client would.
ferry::sources::range_reader from_memory(std::map<std::string, std::string> shards) {
    return [shards = std::move(shards)](const std::string& url, std::uint64_t offset,
                                        std::uint64_t length) {
        const auto it = shards.find(url);
        if (it == shards.end()) throw ferry::io_error("GET " + url + ": 403 Forbidden", false);
        if (offset >= it->second.size()) return ferry::bytes{};
        return ferry::bytes::from_string(std::string_view(it->second).substr(offset, length));
    };
}

/// Writes `members` as a tar at `path` compressed with libarchive's filter `filter` ("gzip",
/// "bzip2", "xz", "zstd", "lz4").
void write_compressed_tar(const std::filesystem::path& path, const std::vector<tar_member>& members,
                          const char* filter) {
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    BOOST_TEST_REQUIRE(archive_write_add_filter_by_name(a, filter) == ARCHIVE_OK);
    BOOST_TEST_REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
    for (const auto& m : members) {
        archive_entry* e = archive_entry_new();
        archive_entry_set_pathname(e, m.name.c_str());
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, static_cast<la_int64_t>(m.data.size()));
        archive_write_header(a, e);
        archive_write_data(a, m.data.data(), m.data.size());
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
}

std::string file_text(const std::filesystem::path& p) {
    std::ostringstream s;
    s << std::ifstream(p).rdbuf();
    return s.str();
}

/// Sets PATH to `dir` before the old PATH for the object's life.
class path_first {
  public:
    explicit path_first(const std::filesystem::path& dir) : old_(std::getenv("PATH")) {
        ::setenv("PATH", (dir.string() + ":" + old_).c_str(), 1);
    }
    ~path_first() { ::setenv("PATH", old_.c_str(), 1); }
    path_first(const path_first&) = delete;
    path_first& operator=(const path_first&) = delete;

  private:
    std::string old_;
};

}  // namespace untrusted_test

BOOST_AUTO_TEST_SUITE(shards)
BOOST_AUTO_TEST_SUITE(untrusted)
using namespace untrusted_test;

// A failing presigned shard: no message, failure record, log line or quarantine entry shows
// its credential or signature, and each still names the shard (redacted) and the cause.
BOOST_AUTO_TEST_CASE(presigned_shard_urls_are_redacted_everywhere) {
    temp_folder dir("ferry-shards-presigned");
    write_tar(dir / "whole.tar", numbered_samples(2));
    const auto cut = read_bytes(dir / "whole.tar").substr(0, 2048 + 512 + 4);  // cut in k1.jpg
    const std::string junk = presigned + "&part=junk";
    const std::string denied = presigned + "&part=denied";
    const ferry::sources::tar_options options{
        .read_remote = from_memory({{presigned, cut}, {junk, std::string(4096, 'j')}})};
    const std::vector<std::string> shards{presigned, junk, denied};

    // At the source: the damaged samples' errors.
    const auto samples = read_all(shards, options);
    BOOST_TEST_REQUIRE(samples.size() == 4U);  // k0, k1 (cut), junk, denied
    for (const auto& s : samples) {
        if (!s.damaged()) continue;
        const auto d = damage_of(s);
        BOOST_TEST(d.what.find("AKIDSHARD") == std::string::npos, d.what);
        BOOST_TEST(d.what.find("SIGSHARD") == std::string::npos, d.what);
        BOOST_TEST(d.what.find("X-Amz-Signature=REDACTED") != std::string::npos, d.what);
    }
    BOOST_TEST(damage_of(samples[1]).what.find("member 'k1.jpg': cut short") != std::string::npos);
    BOOST_TEST(damage_of(samples[2]).what.find("not a tar archive") != std::string::npos);
    BOOST_TEST(damage_of(samples[3]).what.find("403 Forbidden") != std::string::npos);
    // A missing field's message names the sample too.
    try {
        (void)samples[0].fields.at("png");
        BOOST_FAIL("no png");
    } catch (const ferry::decode_error& e) {
        BOOST_TEST(std::string(e.what()).find("SIGSHARD") == std::string::npos, e.what());
    }

    // Downstream: failures(), the log and the quarantine file.
    const auto q = dir / "quarantine.jsonl";
    std::mutex m;
    std::string log;
    {
        auto pipe = ferry::from(ferry::sources::tar_samples(shards, options))
                        .map([](const ferry::sample& s) { return s.fields.at("jpg").size(); },
                             {.name = "read", .on_error = ferry::skip})
                        .build({.threads = 2,
                                .logger =
                                    [&](ferry::log_level, std::string_view line) {
                                        const std::lock_guard lock(m);
                                        log += std::string(line) + "\n";
                                    },
                                .max_epoch_failure_rate = 1.0,
                                .quarantine = q});
        std::size_t delivered = 0;
        for (auto& n : pipe) delivered += n > 0 ? 1 : 0;
        BOOST_TEST(delivered == 1U);
        BOOST_TEST_REQUIRE(pipe.failures().size() == 3U);
        for (const auto& f : pipe.failures()) {
            const auto text = f.input + " " + f.message;
            BOOST_TEST(text.find("AKIDSHARD") == std::string::npos, text);
            BOOST_TEST(text.find("SIGSHARD") == std::string::npos, text);
        }
    }
    const auto quarantined = file_text(q);
    BOOST_TEST(!quarantined.empty());
    for (const auto& text : {log, quarantined}) {
        BOOST_TEST(text.find("AKIDSHARD") == std::string::npos, text);
        BOOST_TEST(text.find("SIGSHARD") == std::string::npos, text);
    }

    // The options check, before anything is read.
    try {
        (void)ferry::sources::tar_samples({presigned});
        BOOST_FAIL("a URL without read_remote");
    } catch (const ferry::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("SIGSHARD") == std::string::npos, e.what());
    }
}

// Member names with a newline or a terminal escape: messages show them escaped (no forged log
// line, no coloured terminal), while the sample's key keeps its bytes.
BOOST_AUTO_TEST_CASE(control_characters_in_names_are_escaped_in_messages) {
    temp_folder dir("ferry-shards-controls");
    const std::string key = "evil\x1b[2J\nferry: forged";
    write_tar(dir / "names.tar", {{key + ".jpg", "a"}, {key + ".jpg", "b"}, {"ok.jpg", "c"}});
    write_tar(dir / "whole.tar", {{"cut\r\x1b.jpg", std::string(5000, 'x')}});
    const auto whole = read_bytes(dir / "whole.tar");
    write_bytes(dir / "cut.tar", whole.substr(0, whole.size() / 2));  // inside the data
    const auto samples = read_all({(dir / "names.tar").string(), (dir / "cut.tar").string()});
    BOOST_TEST_REQUIRE(samples.size() == 3U);
    BOOST_TEST(samples[0].key == key);  // the data is the shard's
    const auto duplicate = damage_of(samples[0]).what;
    BOOST_TEST(duplicate.find("sample 'evil\\x1b[2J\\nferry: forged': two members with "
                              "extension 'jpg'") != std::string::npos,
               duplicate);
    const auto cut = damage_of(samples[2]).what;
    BOOST_TEST(cut.find("member 'cut\\r\\x1b.jpg': cut short") != std::string::npos, cut);
    try {
        (void)samples[1].fields.at("cls");
        BOOST_FAIL("no cls");
    } catch (const ferry::decode_error& e) {
        BOOST_TEST(std::string(e.what()).find("sample 'ok'") != std::string::npos, e.what());
    }
    for (const auto& text : {duplicate, cut}) {
        BOOST_TEST(text.find_first_of("\n\r\x1b") == std::string::npos, text);
    }
}

// Shards that libarchive would decompress by running lrzip, grzip or lzop (stubs on PATH here):
// each is one damaged sample with a decode_error naming the compression, and no program ran.
BOOST_AUTO_TEST_CASE(program_only_compressions_run_no_program) {
    temp_folder dir("ferry-shards-programs");
    const auto ran = dir / "ran";
    for (const char* program : {"lrzip", "grzip", "lzop"}) {
        const auto stub = dir / program;
        std::ofstream(stub) << "#!/bin/sh\necho " << program << " >> '" << ran.string()
                            << "'\ncat > /dev/null\n";
        std::filesystem::permissions(stub, std::filesystem::perms::owner_all);
    }
    const std::string padding(512, '\0');
    write_bytes(dir / "a.tar.lrz", std::string("LRZI\0\x06", 6) + padding);
    write_bytes(dir / "b.tar.grz", std::string("GRZipII\0\x02\x04:)", 12) + padding);
    write_bytes(dir / "c.tar.lzo",
                std::string("\x89LZO\0\r\n\x1a\n\x10\x30\x20\xa0", 13) + padding);
    const path_first stubs(dir.path());
    const auto samples = read_all(
        {(dir / "a.tar.lrz").string(), (dir / "b.tar.grz").string(), (dir / "c.tar.lzo").string()});
    BOOST_TEST(!std::filesystem::exists(ran), file_text(ran));
    BOOST_TEST_REQUIRE(samples.size() == 3U);
    const char* names[] = {"lrzip", "grzip", "lzop"};
    for (std::size_t i = 0; i < samples.size(); ++i) {
        BOOST_TEST_REQUIRE(samples[i].damaged());
        const auto d = damage_of(samples[i]);
        BOOST_TEST(d.type == "decode_error");
        BOOST_TEST(d.what.find(std::string("compressed with ") + names[i] +
                               ", which ferry does not read: unsupported") != std::string::npos,
                   d.what);
    }
}

// The compressions ferry reads in-process, each written by libarchive, give the plain shard's
// samples.
BOOST_AUTO_TEST_CASE(in_process_compressions_are_read) {
    temp_folder dir("ferry-shards-filters");
    const auto members = numbered_samples(3);
    for (const char* filter : {"gzip", "bzip2", "xz", "zstd", "lz4"}) {
        const auto path = dir / (std::string("s.tar.") + filter);
        write_compressed_tar(path, members, filter);
        const auto samples = read_all({path.string()});
        BOOST_TEST_REQUIRE(samples.size() == 3U, filter);
        for (std::size_t i = 0; i < samples.size(); ++i) {
            BOOST_TEST(!samples[i].damaged(), filter);
            BOOST_TEST(samples[i].key == "k" + std::to_string(i));
            BOOST_TEST(samples[i].fields.size() == 2U);
        }
    }
}

// A 60 KB .tar.gz that expands into one 48 MiB sample of 48 members, and one of 300 tiny
// members: each is damaged at the member past max_sample_bytes / max_sample_members, saying
// which sample of which shard, holds no more than the cap, and the next sample arrives whole;
// an epoch opened past them (a resume) says the same.
BOOST_AUTO_TEST_CASE(a_compressed_shard_cannot_expand_into_a_huge_sample) {
    temp_folder dir("ferry-shards-bomb");
    std::vector<tar_member> members;
    for (int i = 0; i < 48; ++i)
        members.push_back({"big." + std::to_string(i), std::string(1 << 20, '\0')});
    for (int i = 0; i < 300; ++i) members.push_back({"many." + std::to_string(i), "x"});
    members.push_back({"fine.jpg", "jpeg"});
    members.push_back({"fine.cls", "3"});
    const auto shard = (dir / "bomb.tar.gz").string();
    write_compressed_tar(shard, members, "gzip");
    BOOST_TEST(std::filesystem::file_size(shard) < 200'000U);
    const ferry::sources::tar_options options{.max_sample_bytes = 8 << 20,
                                              .max_sample_members = 256};
    const auto samples = read_all({shard}, options);
    BOOST_TEST_REQUIRE(samples.size() == 3U);
    BOOST_TEST(samples[0].key == "big");
    BOOST_TEST(samples[1].key == "many");
    const auto big = damage_of(samples[0]);
    BOOST_TEST(big.type == "decode_error");
    BOOST_TEST(big.what == "tar_samples: shard '" + shard +
                               "', sample 'big': member 'big.8' not read: 9437184 bytes with "
                               "this member, over max_sample_bytes (8388608)");
    std::uint64_t held = 0;
    for (const auto& [ext, data] : samples[0].fields) held += data.size();
    BOOST_TEST(held == 8U << 20);
    const auto many = damage_of(samples[1]);
    BOOST_TEST(many.what == "tar_samples: shard '" + shard +
                                "', sample 'many': member 'many.256' not read: more than "
                                "max_sample_members (256) members");
    BOOST_TEST(samples[1].fields.size() == 256U);
    BOOST_TEST(!samples[2].damaged());
    BOOST_TEST(samples[2].fields.size() == 2U);
    // An epoch opened at position 1 or 2 delivers the same.
    const auto src = ferry::sources::tar_samples({shard}, options);
    for (std::uint64_t position = 1; position < 3; ++position) {
        std::vector<ferry::sample> rest;
        for (auto&& s : src(0, position)) rest.push_back(std::move(s));
        BOOST_TEST_REQUIRE(rest.size() == 3 - position);
        BOOST_TEST(rest[0].key == samples[position].key);
        BOOST_TEST(rest[0].damaged() == samples[position].damaged());
        if (rest[0].damaged())
            BOOST_TEST(damage_of(rest[0]).what == damage_of(samples[position]).what);
    }
}

// The same limits hold on an uncompressed shard read by walking its headers (a resume): the
// sample over the limit is damaged alike, its members past the limit not read.
BOOST_AUTO_TEST_CASE(sample_limits_hold_when_a_resume_walks_a_plain_shard) {
    temp_folder dir("ferry-shards-walk-limits");
    std::vector<tar_member> members;
    for (int i = 0; i < 6; ++i)
        members.push_back({"big." + std::to_string(i), std::string(4000, 'b')});
    members.push_back({"next.jpg", "j"});
    members.push_back({"last.jpg", "l"});
    const auto shard = (dir / "plain.tar").string();
    write_tar(shard, members);
    const ferry::sources::tar_options options{.shuffle_buffer = 3, .max_sample_bytes = 10000};
    const auto src = ferry::sources::tar_samples({shard}, options);
    std::vector<std::string> whole;
    for (auto&& s : src(0)) whole.push_back(s.key + (s.damaged() ? ": " + damage_of(s).what : ""));
    BOOST_TEST_REQUIRE(whole.size() == 3U);
    const std::string expected = "big: tar_samples: shard '" + shard +
                                 "', sample 'big': member 'big.2' not read: 12000 bytes with this "
                                 "member, over max_sample_bytes (10000)";
    BOOST_TEST(std::count(whole.begin(), whole.end(), expected) == 1);
    for (std::uint64_t position = 1; position < 3; ++position) {
        std::vector<std::string> rest;
        for (auto&& s : src(0, position))
            rest.push_back(s.key + (s.damaged() ? ": " + damage_of(s).what : ""));
        BOOST_TEST(rest == std::vector<std::string>(whole.begin() + position, whole.end()),
                   boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
