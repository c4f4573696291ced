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
/// epoch delivers from there, damage messages included. libarchive itself is not instrumented;
/// ferry's reader is.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
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
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        if (size > 0) std::fwrite(data, 1, size, f);
        std::fclose(f);
    } else {
        std::abort();
    }
    const std::size_t buffer = size > 0 ? data[size - 1] % 8 : 0;
    const auto src = ferry::sources::tar_samples(
        {path}, {.shuffle_buffer = buffer, .max_member_bytes = std::uint64_t{1} << 20});
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
    return 0;
}
