// SPDX-License-Identifier: Apache-2.0
/// \file
/// A shard's bytes and libarchive's client callbacks over them (see tar_client.hpp).

#include "tar_client.hpp"
#include "remote_retry.hpp"

#include <archive.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "ferry/error.hpp"

namespace ferry::shards_detail {

namespace {

la_ssize_t read_window(::archive* a, void* data, const void** out) {
    auto& c = *static_cast<tar_reader::client*>(data);
    try {
        if (c.after_skip || !c.read_before) {
            c.window = c.min_window;
        } else {
            c.window = std::min(c.window * 2, c.max_window);
        }
        // After a skip the read starts at the skipped range's last byte: one more than a window.
        c.buffer = c.bytes.read(c.offset, c.window + (c.after_skip ? 1 : 0));
        c.after_skip = false;
        c.read_before = true;
        c.offset += c.buffer.size();
        *out = c.buffer.data();
        return static_cast<la_ssize_t>(c.buffer.size());
    } catch (...) {  // nothing may cross libarchive's C frames
        c.error = std::current_exception();
    }
    archive_set_error(a, EIO, "reading the shard failed");
    return -1;
}

// Skips all but the range's last byte: libarchive reads that one itself, with the next window
// (so the skip costs no fetch of its own), and an empty read there fails the skip. A range
// shorter than the smallest window is declined (0): libarchive reads through it, which costs no
// more than the window after a skip and lets the window grow over small members. libarchive
// asks again for the byte left (1): declined too.
la_int64_t skip_bytes(::archive*, void* data, la_int64_t request) {
    auto& c = *static_cast<tar_reader::client*>(data);
    if (request < 2 || static_cast<std::uint64_t>(request) < c.min_window) return 0;
    c.after_skip = true;
    c.offset += static_cast<std::uint64_t>(request - 1);
    return request - 1;
}

}  // namespace

shard_bytes::shard_bytes(const std::string& shard, const sources::tar_options& options)
    : shard_(shard), retry_(remote_schedule(options)) {
    constexpr std::string_view file_scheme = "file://";
    if (options.read_remote && shard.find("://") != std::string::npos &&
        !shard.starts_with(file_scheme)) {
        remote_ = options.read_remote;
        return;
    }
    file_ = shard.starts_with(file_scheme) ? shard.substr(file_scheme.size()) : shard;
    fd_ = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
        open_errno_ = errno;
        return;
    }
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) open_errno_ = EISDIR;
}

shard_bytes::~shard_bytes() {
    if (fd_ >= 0) ::close(fd_);
}

ferry::bytes shard_bytes::read(std::uint64_t offset, std::uint64_t length) const {
    if (!remote_) {
        ferry::bytes out(static_cast<std::size_t>(length));
        std::size_t got = 0;
        while (got < out.size()) {
            const auto n =
                ::pread(fd_, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                throw io_error(
                    "reading '" + shard_label(file_) + "' failed: " + std::strerror(errno), false);
            }
            if (n == 0) break;
            got += static_cast<std::size_t>(n);
        }
        out.truncate(got);
        return out;
    }
    return read_retrying(
        retry_,
        [&] {
            auto out = remote_(shard_, offset, length);
            if (out.size() > length) out.truncate(static_cast<std::size_t>(length));
            return out;
        },
        wait_unless_stopped);
}

int tar_reader::client::open(::archive* a) {
    archive_read_set_read_callback(a, &read_window);
    archive_read_set_skip_callback(a, &skip_bytes);
    archive_read_set_callback_data(a, this);
    return archive_read_open1(a);
}

}  // namespace ferry::shards_detail
