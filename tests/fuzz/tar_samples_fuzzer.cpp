// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for `ferry::sources::tar_samples` (the shard reader): any bytes, written to a
/// scratch file and read as one shard, must give samples, damaged ones among them, whose fields
/// read back or throw a `ferry::error` (the damage: `decode_error` or `io_error`); any other
/// exception escapes and counts as a crash, and so do a crash, a leak, an out-of-bounds access
/// and an allocation past libFuzzer's limit (`max_member_bytes` is 1 MiB here, so a header that
/// declares a huge member is a damaged sample, not an allocation). The last byte picks the
/// shuffle buffer (0-7 samples). libarchive itself is not instrumented; ferry's reader is.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "ferry/error.hpp"
#include "ferry/shards.hpp"

namespace {

std::string scratch_file() {
    const std::filesystem::path dir =
        std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    return (dir / ("ferry-tar-fuzz-" + std::to_string(::getpid()) + ".tar")).string();
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
    for (auto&& s : src(0)) {
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
    return 0;
}
