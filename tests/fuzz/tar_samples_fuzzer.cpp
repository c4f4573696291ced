// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for `ferry::sources::tar_samples` (the shard reader): any bytes, written to a
/// scratch file and read as one shard, must give samples, damaged ones among them, whose fields
/// read back or throw a `ferry::error` (the damage: `decode_error` or `io_error`); any other
/// exception escapes and counts as a crash, and so do a crash, a leak, an out-of-bounds access
/// and an allocation past libFuzzer's limit (`max_member_bytes` is 1 MiB here, so a header that
/// declares a huge member is a damaged sample, not an allocation). The last byte picks the
/// shuffle buffer (0-7 samples), the one before it a position: the epoch opened there (a resume,
/// which walks headers instead of reading bodies) must deliver exactly the samples the whole
/// epoch delivers from there, damage messages included. The third byte from the end picks a
/// compression (none, gzip, bzip2, xz, zstd, lz4) libarchive wraps the bytes in before they are
/// written, so the decompressing reader (and its resume, which reads compressed shards whole)
/// is fuzzed too; samples are capped at 64 KiB and 8 members, so the caps' paths run. PATH
/// holds only stub programs (lrzip, grzip, lzop, gzip, ...) that leave a mark: a shard that makes
/// libarchive run one is a finding. libarchive itself is not instrumented; ferry's reader is.
#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/shards.hpp"

namespace {

std::string scratch_file() {
    const std::filesystem::path dir =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    return (dir / ("ferry-tar-fuzz-" + std::to_string(::getpid()) + ".tar")).string();
}

// A scratch folder of stub programs, each leaving `mark` when run, made the whole PATH.
std::filesystem::path stub_programs() {
    const auto dir = std::filesystem::path(scratch_file() + ".bin");
    std::filesystem::create_directories(dir);
    for (const char* program : {"lrzip", "grzip", "lzop", "lzip", "lz4", "zstd", "xz", "lzma",
                                "gzip", "gunzip", "bzip2", "compress", "uncompress"}) {
        const auto stub = dir / program;
        std::ofstream(stub) << "#!/bin/sh\n: > '" << (dir / "mark").string() << "'\n";
        std::filesystem::permissions(stub, std::filesystem::perms::owner_all);
    }
    ::setenv("PATH", dir.c_str(), 1);
    return dir / "mark";
}

// `data` compressed with libarchive's filter `filter` (a raw stream: no archive format of its
// own), or as it is when the filter is empty or cannot be had.
std::string compressed(const std::uint8_t* data, std::size_t size, const char* filter) {
    std::string raw(reinterpret_cast<const char*>(data), size);
    if (filter == nullptr) return raw;
    std::string out(size + size / 2 + 4096, '\0');
    std::size_t used = 0;
    archive* a = archive_write_new();
    bool ok = archive_write_set_format_raw(a) == ARCHIVE_OK &&
              archive_write_add_filter_by_name(a, filter) == ARCHIVE_OK &&
              archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
              archive_write_open_memory(a, out.data(), out.size(), &used) == ARCHIVE_OK;
    if (ok) {
        archive_entry* e = archive_entry_new();
        archive_entry_set_pathname(e, "shard");
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(size));
        ok =
            archive_write_header(a, e) == ARCHIVE_OK &&
            (size == 0 || archive_write_data(a, raw.data(), size) == static_cast<la_ssize_t>(size));
        archive_entry_free(e);
        ok = archive_write_close(a) == ARCHIVE_OK && ok;
    }
    archive_write_free(a);
    if (!ok) return raw;
    out.resize(used);
    return out;
}

// A sample as text: its key and path, and its fields' bytes or its damage's message.
std::string describe(const ferry::sample& s) {
    std::string out = s.key + "|" + s.path + "|";
    if (s.damaged()) {
        try {
            std::rethrow_exception(s.fields.damage());
        } catch (const std::exception& e) {
            out += e.what();
        }
    }
    for (const auto& [ext, bytes] : s.fields) {
        out += ext + "=" + std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = scratch_file();
    static const std::filesystem::path ran = stub_programs();
    static const char* const filters[] = {nullptr, nullptr, "gzip", "bzip2", "xz", "zstd", "lz4"};
    const char* filter = size > 2 ? filters[data[size - 3] % std::size(filters)] : nullptr;
    const std::string shard = compressed(data, size, filter);
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        if (!shard.empty()) std::fwrite(shard.data(), 1, shard.size(), f);
        std::fclose(f);
    } else {
        std::abort();
    }
    const std::size_t buffer = size > 0 ? data[size - 1] % 8 : 0;
    const auto src =
        ferry::sources::tar_samples({path}, {.shuffle_buffer = buffer,
                                             .max_member_bytes = std::uint64_t{1} << 20,
                                             .max_sample_bytes = 64 << 10,
                                             .max_sample_members = 8});
    std::vector<std::string> whole;
    for (auto&& s : src(0)) {
        whole.push_back(describe(s));
        if (s.damaged()) {
            try {
                (void)s.fields.at("jpg");
                std::abort();  // a damaged sample's fields must throw
            } catch (const ferry::error&) {
            }
            continue;
        }
        if (s.fields.empty() || s.key.empty()) std::abort();
        volatile std::size_t sink = 0;
        for (const auto& [ext, bytes] : s.fields) {
            for (const std::byte b : bytes) sink = sink + static_cast<std::size_t>(b);
            if (&s.fields.at(ext) != &bytes) std::abort();
        }
        (void)sink;
    }
    const std::size_t position = size > 1 ? data[size - 2] % (whole.size() + 1) : 0;
    std::size_t i = position;
    for (auto&& s : src(0, position)) {
        if (i == whole.size() || describe(s) != whole[i]) std::abort();  // a resume differs
        ++i;
    }
    if (i != whole.size()) std::abort();
    if (std::filesystem::exists(ran)) std::abort();  // the shard ran a program
    return 0;
}
