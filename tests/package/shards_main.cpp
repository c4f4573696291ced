// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry::shards: writes a two-sample ustar shard by hand (no
/// libarchive of its own) and reads it back with tar_samples, through
/// `find_package(ferry COMPONENTS shards)` or `pkg-config ferry-shards`. Exits non-zero on any
/// mismatch.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <ferry/shards.hpp>

namespace {

/// One ustar member: a 512-byte header, then the data padded to 512.
std::string member(const std::string& name, const std::string& data) {
    std::string h(512, '\0');
    h.replace(0, name.size(), name);
    h.replace(100, 7, "0000644");
    h.replace(108, 7, "0000000");
    h.replace(116, 7, "0000000");
    char size[13];
    std::snprintf(size, sizeof size, "%011o", static_cast<unsigned>(data.size()));
    h.replace(124, 11, size);
    h.replace(136, 11, "00000000000");
    h[156] = '0';
    h.replace(257, 6, std::string("ustar\0", 6));
    h.replace(263, 2, "00");
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i) {
        sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    }
    char check[8];
    std::snprintf(check, sizeof check, "%06o", sum);
    h.replace(148, 6, check, 6);
    h[154] = '\0';
    h[155] = ' ';
    std::string padded = data;
    padded.resize((data.size() + 511) / 512 * 512, '\0');
    return h + padded;
}

}  // namespace

int main() {
    const auto path = std::filesystem::temp_directory_path() /
                      ("ferry-package-shards-" + std::to_string(::getpid()) + ".tar");
    {
        std::ofstream out(path, std::ios::binary);
        out << member("a.jpg", "A") << member("a.cls", "1") << member("b.jpg", "B")
            << std::string(1024, '\0');
    }
    std::vector<std::string> got;
    for (auto&& s : ferry::sources::tar_samples({path.string()})(0)) {
        std::string fields;
        for (const auto& [ext, data] : s.fields) {
            fields +=
                ext + "=" + std::string(reinterpret_cast<const char*>(data.data()), data.size());
        }
        got.push_back(s.key + ":" + fields);
    }
    std::filesystem::remove(path);
    const std::vector<std::string> expected{"a:cls=1jpg=A", "b:jpg=B"};
    if (got != expected) {
        std::fprintf(stderr, "package test (shards): FAILED: %zu samples, first '%s'\n", got.size(),
                     got.empty() ? "" : got[0].c_str());
        return 1;
    }
    std::puts("package test (shards): ok");
    return 0;
}
