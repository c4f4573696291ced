// SPDX-License-Identifier: Apache-2.0
/// \file
/// One tar shard read member by member with libarchive: a stream, one member's bytes in memory
/// at a time, every damage reported as what it is and where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "ferry/bytes.hpp"
#include "ferry/shards.hpp"

struct archive;

namespace ferry::shards_detail {

/// What `tar_reader::next` found.
enum class member_status : std::uint8_t {
    member,  ///< a regular file: `name` and `data` are set
    /// a regular file over `max_member_bytes`, or refused by the `admit` hook (not read):
    /// `name` and `damage` are set
    too_big,
    damaged,  ///< `damage` is set; the shard cannot be read further (`name`: the member, if any)
    end,      ///< the shard's end
};

/// One member, or what went wrong.
struct member {
    member_status status = member_status::end;
    std::string name;   ///< the member's name in the archive
    ferry::bytes data;  ///< its bytes (`member`, unless `skipped`)
    /// Its header's byte in the tar; for `damaged`, where reading stopped.
    std::uint64_t offset = 0;
    /// `member` while walking an uncompressed shard: `data` was not read, it lies at
    /// `data_offset` (a byte of the shard) and has `size` bytes.
    bool skipped = false;
    std::uint64_t data_offset = 0;
    std::uint64_t size = 0;
    std::exception_ptr damage;  ///< a `decode_error` or `io_error` naming the shard
    bool refused = false;       ///< `too_big` because the `admit` hook refused it
};

/// Asked before a regular member's data is read, with its name and declared size: null reads
/// it, an error refuses it (its data is skipped; `next()` returns it `too_big` with that error).
using admit_fn = std::function<std::exception_ptr(const std::string& name, std::uint64_t size)>;

/// A shard's name as messages show it: credentials redacted, control characters escaped.
[[nodiscard]] std::string shard_label(const std::string& shard);

/// Reads a shard's regular members in order (directories, links and other entries are skipped).
/// `.tar`, plain or compressed with what libarchive decompresses in-process (gzip, bzip2, xz,
/// zstd, lz4), recognised from the bytes. Formats for which libarchive would start an external
/// program (lrzip, grzip, lzop, or any of those five in a libarchive built without its library)
/// are refused: shard bytes must not choose a program to run.
class tar_reader {
  public:
    /// Opens `shard` as `tar_samples` reads it: through `options.read_remote`, `remote_chunk`
    /// bytes a read, when it is a URL other than `file://`; else as a local file, 256 KiB a read.
    /// A shard that cannot be opened is reported by the first `next()` (as `damaged`), not
    /// thrown; a failed read ends the shard with that failure as the damage. `walking`: see
    /// `walk`.
    tar_reader(const std::string& shard, const sources::tar_options& options, bool walking = false);
    ~tar_reader();
    tar_reader(const tar_reader&) = delete;
    tar_reader& operator=(const tar_reader&) = delete;

    /// The next member. After `damaged` or `end`, every call returns `end`.
    member next();
    /// Sets the hook asked before each member's data is read (none: every member is read).
    void admit(admit_fn hook) { admit_ = std::move(hook); }
    /// How many members `next()` has returned (its next member's index).
    [[nodiscard]] std::uint64_t returned() const noexcept { return returned_; }

    /// Walking: members of an uncompressed shard come `skipped` (their data not read, each
    /// header fetched on its own: `walk_window` bytes a read after a skip, more over small
    /// members, see `client`); a compressed shard's members, and
    /// sparse members (whose data is not their bytes in the tar), are read as usual. Off: members
    /// are read in `chunk`-byte reads. Damage found while walking is found where reading would find
    /// it, but its message and offset may differ: a caller that needs them exact reads the shard
    /// again without walking, up to the damaged member (`returned()` before the call).
    void walk(bool on);
    /// The bytes a read fetches while walking: three tar blocks, enough for a header, a small
    /// member (a label, a class) and the next header in one read.
    static constexpr std::size_t walk_window = 1536;

    struct client;  ///< the shard's bytes as libarchive's client (tar_client.hpp)

  private:
    member read_next();
    member fail(std::string name, const std::string& what, bool io);
    bool new_archive();  ///< a_ for tar with every filter; false (open_error_ set) on failure
    void open();         ///< opens a_ on client_
    void open_failed(int err, const char* text);
    [[nodiscard]] std::exception_ptr read_error() const;
    std::string where(const std::string& name) const;
    [[nodiscard]] std::string unsupported_compression() const;

    ::archive* a_ = nullptr;
    std::string shard_;  ///< the shard's `shard_label`
    admit_fn admit_;
    std::uint64_t max_member_bytes_;
    std::exception_ptr open_error_;
    std::unique_ptr<client> client_;
    std::size_t chunk_;
    std::string last_;  ///< the last header's member name, for a bad header's message
    std::uint64_t returned_ = 0;
    bool walking_ = false;
    bool compressed_ = false;
    bool finished_ = false;
};

}  // namespace ferry::shards_detail
