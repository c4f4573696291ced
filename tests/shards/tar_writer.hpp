// SPDX-License-Identifier: Apache-2.0
/// \file
/// Shards for the tests: tar files written with libarchive (an independent writer: the reader
/// under test only reads), and the shard layout the tests share (`write_shards`,
/// `shard_samples`); their folders are `ferry_test::temp_folder`s.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../support/temp_folder.hpp"

namespace ferry_test {

/// One tar member: a regular file, or a directory when `dir` is set.
struct tar_member {
    std::string name;
    std::string data;
    bool dir = false;
};

/// Writes `members` as a ustar/pax tar file at `path` (libarchive's writer).
inline void write_tar(const std::filesystem::path& path, const std::vector<tar_member>& members) {
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (archive_write_open_filename(a, path.c_str()) != ARCHIVE_OK) {
        archive_write_free(a);
        throw std::runtime_error("write_tar: cannot create " + path.string());
    }
    for (const auto& m : members) {
        archive_entry* e = archive_entry_new();
        archive_entry_set_pathname(e, m.name.c_str());
        archive_entry_set_filetype(e, m.dir ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(e, m.dir ? 0755 : 0644);
        archive_entry_set_size(e, m.dir ? 0 : static_cast<la_int64_t>(m.data.size()));
        archive_write_header(a, e);
        if (!m.dir) archive_write_data(a, m.data.data(), m.data.size());
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
}

/// The members of sample `key`: `<key>.jpg` and `<key>.cls`, contents that name the key.
inline std::vector<tar_member> sample_members(const std::string& key) {
    return {{key + ".jpg", "jpeg of " + key}, {key + ".cls", "class of " + key}};
}

/// Samples `<prefix>0` .. `<prefix><n-1>`, each a .jpg and a .cls of under 512 bytes: with ustar
/// headers, member m's header starts at byte 1024 * m.
inline std::vector<tar_member> numbered_samples(int n, const std::string& prefix = "k") {
    std::vector<tar_member> out;
    for (int i = 0; i < n; ++i) {
        auto m = sample_members(prefix + std::to_string(i));
        out.insert(out.end(), m.begin(), m.end());
    }
    return out;
}

/// A file's bytes.
inline std::string read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

/// Writes `s` as the file `p`.
inline void write_bytes(const std::filesystem::path& p, const std::string& s) {
    std::ofstream(p, std::ios::binary) << s;
}

/// Writes `count` shards into `dir`, `<stem><s>.tar` for s = 0 .. count - 1, shard s holding
/// `members_of(s)`, and returns their paths in shard order: the multi-shard layout of
/// tar_samples.cpp, resume.cpp and cached.cpp.
inline std::vector<std::string> write_shards(
    const std::filesystem::path& dir, int count,
    const std::function<std::vector<tar_member>(int shard)>& members_of,
    const std::string& stem = "shard-") {
    std::vector<std::string> out;
    for (int s = 0; s < count; ++s) {
        const auto path = dir / (stem + std::to_string(s) + ".tar");
        write_tar(path, members_of(s));
        out.push_back(path.string());
    }
    return out;
}

/// Shard `shard`'s samples in the multi-shard cases: `per` samples keyed
/// `s<shard><separator><i>`, each a .jpg and a .cls (`sample_members`).
inline std::vector<tar_member> shard_samples(int shard, int per,
                                             const std::string& separator = "-") {
    std::vector<tar_member> out;
    for (int i = 0; i < per; ++i) {
        auto m = sample_members("s" + std::to_string(shard) + separator + std::to_string(i));
        out.insert(out.end(), m.begin(), m.end());
    }
    return out;
}

}  // namespace ferry_test
