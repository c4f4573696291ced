// SPDX-License-Identifier: Apache-2.0
/// \file
/// One tar shard read member by member with libarchive: a stream, one member's bytes in memory
/// at a time, every damage reported as what it is and where.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "ferry/bytes.hpp"
#include "ferry/shards.hpp"

struct archive;

namespace ferry::shards_detail {

/// What `tar_reader::next` found.
enum class member_status : std::uint8_t {
    member,   ///< a regular file: `name` and `data` are set
    too_big,  ///< a regular file over the size limit (not read): `name` and `damage` are set
    damaged,  ///< `damage` is set; the shard cannot be read further (`name`: the member, if any)
    end,      ///< the shard's end
};

/// One member, or what went wrong.
struct member {
    member_status status = member_status::end;
    std::string name;   ///< the member's name in the archive
    ferry::bytes data;  ///< its bytes (`member` only)
    std::uint64_t offset =
        0;  ///< its header's byte in the tar; for `damaged`, where reading stopped
    std::exception_ptr damage;  ///< a `decode_error` or `io_error` naming the shard
};

/// Reads a shard's regular members in order (directories, links and other entries are skipped).
/// `.tar` with any compression libarchive recognises from the bytes (gzip, zstd, xz, bzip2).
class tar_reader {
  public:
    /// Opens `file`; `shard` names it in errors. A shard that cannot be opened is reported by the
    /// first `next()` (as `damaged`), not thrown.
    tar_reader(const std::string& file, std::string shard, std::uint64_t max_member_bytes);
    /// Reads the shard through `read` (`chunk` bytes a call): a remote shard. A failed read ends
    /// the shard with that failure as the damage.
    tar_reader(sources::range_reader read, std::size_t chunk, std::string shard,
               std::uint64_t max_member_bytes);
    ~tar_reader();
    tar_reader(const tar_reader&) = delete;
    tar_reader& operator=(const tar_reader&) = delete;

    /// The next member. After `damaged` or `end`, every call returns `end`.
    member next();

    struct remote;  ///< a remote shard's read state (tar_remote.hpp)

  private:
    member fail(std::string name, const std::string& what, bool io);
    bool new_archive();  ///< a_ for tar with every filter; false (open_error_ set) on failure
    void open_failed(int err, const char* text);
    [[nodiscard]] std::exception_ptr read_error() const;
    std::string where(const std::string& name) const;

    ::archive* a_ = nullptr;
    std::string shard_;
    std::uint64_t max_member_bytes_;
    std::exception_ptr open_error_;
    std::unique_ptr<remote> remote_;
    std::string last_;  ///< the last header's member name, for a bad header's message
    bool finished_ = false;
};

}  // namespace ferry::shards_detail
