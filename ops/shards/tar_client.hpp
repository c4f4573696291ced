// SPDX-License-Identifier: Apache-2.0
/// \file
/// A shard's bytes by offset (a local file or the user's range reader) and libarchive's client
/// over them: reads of a chosen size, and skips that read nothing but still prove the skipped
/// bytes are there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "ferry/bytes.hpp"
#include "ferry/detail/retry_schedule.hpp"
#include "ferry/shards.hpp"
#include "tar_reader.hpp"

struct archive;

namespace ferry::shards_detail {

/// One shard's bytes by offset: a local file (`pread`) or, for a remote shard, the user's
/// `range_reader` with its transient failures read again on `tar_options::remote_retry`'s
/// schedule, each pause cut short when the pipeline stops (remote_retry.hpp).
class shard_bytes {
  public:
    /// The bytes of `shard` as `tar_samples` reads them: through `options.read_remote` when it
    /// is a URL other than `file://`, else a local file (one that cannot be opened is reported
    /// by `open_errno()`).
    shard_bytes(const std::string& shard, const sources::tar_options& options);
    ~shard_bytes();
    shard_bytes(const shard_bytes&) = delete;
    shard_bytes& operator=(const shard_bytes&) = delete;

    /// 0, or why the local file could not be opened (an errno value).
    [[nodiscard]] int open_errno() const noexcept { return open_errno_; }
    /// Whether the shard is read through the range reader.
    [[nodiscard]] bool remote() const noexcept { return static_cast<bool>(remote_); }
    /// Up to `length` bytes at `offset`: fewer only where the shard ends, none past it. Throws a
    /// `ferry::error` when the read fails.
    [[nodiscard]] ferry::bytes read(std::uint64_t offset, std::uint64_t length) const;

  private:
    int fd_ = -1;
    int open_errno_ = 0;
    std::string file_;
    sources::range_reader remote_;
    std::string shard_;
    detail::retry_schedule retry_;  ///< `tar_options::remote_retry`
};

/// libarchive's client over a shard's bytes: each read fetches `window` bytes at `offset`. The
/// window starts at `min_window` after every skip and doubles, up to `max_window`, with each
/// read that follows the last one without a skip: a walk over large members fetches little more
/// than their headers, one over small members, which it reads through, soon reads as much at
/// once as reading does (the caller sets both sizes as it walks headers or reads members). A
/// skip fetches nothing but the skipped range's last byte, read with the next window
/// (`window + 1` bytes from it): a shard cut inside the range makes the skip fail, as reading
/// through it would, instead of reading as an end after the cut.
struct tar_reader::client {
    client(const std::string& shard, const sources::tar_options& options) : bytes(shard, options) {}

    shard_bytes bytes;
    std::size_t min_window = 0;
    std::size_t max_window = 0;
    std::size_t window = 0;
    bool read_before = false;  ///< a read came before this one
    std::uint64_t offset = 0;  ///< the next byte to fetch
    ferry::bytes buffer;       ///< the last read, which libarchive reads from
    bool after_skip = false;   ///< the next read starts at a skipped range's last byte
    std::exception_ptr error;  ///< why the last read failed

    /// Opens `a` on this client (archive_read_open1 with the callbacks).
    int open(::archive* a);
};

}  // namespace ferry::shards_detail
