// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::bytes and ferry::ops::read_file (open + fstat + pread into one uninitialised buffer;
/// pipes, FIFOs and devices are polled so that a call told to give up stops waiting).
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <type_traits>

#include "ferry/bytes.hpp"
#include "ferry/error.hpp"
#include "ferry/this_call.hpp"

namespace ferry {

bytes::bytes(std::span<const std::byte> data) : buf_(data.size()) {
    if (!data.empty()) std::memcpy(buf_.data(), data.data(), data.size());
}

// Moves stay noexcept (std::vector<bytes> moves, rather than copies, when it grows).
static_assert(std::is_nothrow_move_constructible_v<bytes> &&
              std::is_nothrow_move_assignable_v<bytes>);

namespace ops::detail {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const char* what, int err) {
    throw io_error(
        "read_file: " + std::string(what) + " '" + path.string() + "': " + std::strerror(err),
        transient_errno(err));
}

// The longest a read from a pipe or FIFO waits before it asks `this_call::stop_requested()`
// again: the bound on how late a cancellation is seen while no writer writes.
constexpr int poll_slice_ms = 50;

/// Waits until `fd` (not a regular file, opened non-blocking) has bytes to read or has reached
/// its end, or throws `errc::cancelled` once the stage call should give up. A FIFO that no
/// writer has opened yet is neither: poll() reports nothing until one opens and writes or
/// closes, so the wait is the one a blocking open would have made.
void wait_readable(int fd, const std::filesystem::path& path) {
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        const int n = ::poll(&p, 1, poll_slice_ms);
        if (n > 0) return;
        if (n < 0 && errno != EINTR) fail(path, "cannot read", errno);
        if (this_call::stop_requested()) {
            throw error(errc::cancelled,
                        "read_file: '" + path.string() + "': cancelled: the pipeline is stopping");
        }
    }
}

/// Closes the descriptor however the read ends.
struct fd_guard {
    int fd;
    ~fd_guard() { ::close(fd); }
};

}  // namespace

bytes read_file_fn::operator()(const std::filesystem::path& path) const {
    // O_NONBLOCK: opening a FIFO does not wait for a writer (the wait is wait_readable's, which
    // can be cancelled). It changes nothing for regular files, so their path costs no syscall
    // more.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(path, "cannot open", errno);
    fd_guard guard{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail(path, "cannot stat", errno);
    if (S_ISDIR(st.st_mode)) fail(path, "cannot read", EISDIR);

    // Regular files are read at their stated size in one buffer; anything else (pipes, /proc)
    // grows as it reads. A regular file that changes size while being read is read up to
    // where it ends.
    std::size_t capacity = S_ISREG(st.st_mode) ? static_cast<std::size_t>(st.st_size) : 0;
    if (capacity == 0) capacity = 64 * 1024;
    bytes out(capacity);
    const bool regular = S_ISREG(st.st_mode);
    // Pipes and character devices cannot pread; they are read in sequence, each read waiting
    // (cancellably) until there is something to read, since the descriptor does not block.
    auto read_at = [&](std::byte* dst, std::size_t n, std::size_t offset) {
        if (regular) return ::pread(fd, dst, n, static_cast<off_t>(offset));
        for (;;) {
            wait_readable(fd, path);
            const ssize_t got = ::read(fd, dst, n);
            if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return got;
        }
    };
    std::size_t got = 0;
    for (;;) {
        if (got == out.size()) {
            if (regular && got == static_cast<std::size_t>(st.st_size) && got != 0) {
                // Check for growth since fstat with a one-byte probe.
                std::byte probe{};
                const ssize_t n = read_at(&probe, 1, got);
                if (n == 0) break;
                if (n < 0) {
                    if (errno == EINTR) continue;
                    fail(path, "cannot read", errno);
                }
            }
            bytes bigger(out.size() * 2);
            std::memcpy(bigger.data(), out.data(), got);
            out = std::move(bigger);
            // The probe byte (if any) is re-read below at its offset.
        }
        const ssize_t n = read_at(out.data() + got, out.size() - got, got);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(path, "cannot read", errno);
        }
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    out.truncate(got);
    return out;
}

}  // namespace ops::detail
}  // namespace ferry
