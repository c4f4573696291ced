// SPDX-License-Identifier: Apache-2.0
/// \file
/// A remote shard as libarchive's client: chunks fetched through the user's range reader, skips
/// that fetch nothing, and the reader's failure kept for the message.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

#include "ferry/bytes.hpp"
#include "ferry/shards.hpp"
#include "tar_reader.hpp"

struct archive;

namespace ferry::shards_detail {

struct tar_reader::remote {
    sources::range_reader read;
    std::size_t chunk = 0;
    std::string shard;
    std::uint64_t offset = 0;  ///< the next byte to fetch
    ferry::bytes buffer;       ///< the last chunk, which libarchive reads from
    std::exception_ptr error;  ///< why the last fetch failed (after its retries)

    /// Opens `a` on this client (archive_read_open2 with the callbacks below).
    int open(::archive* a);
};

}  // namespace ferry::shards_detail
