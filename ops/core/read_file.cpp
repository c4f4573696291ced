// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::bytes and ferry::ops::read_file (open + fstat + pread into one uninitialised buffer).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <type_traits>

#include "ferry/bytes.hpp"
#include "ferry/error.hpp"

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

/// Closes the descriptor however the read ends.
struct fd_guard {
    int fd;
    ~fd_guard() { ::close(fd); }
};

}  // namespace

bytes read_file_fn::operator()(const std::filesystem::path& path) const {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
    // Pipes and character devices cannot pread; they are read in sequence.
    auto read_at = [&](std::byte* dst, std::size_t n, std::size_t offset) {
        return regular ? ::pread(fd, dst, n, static_cast<off_t>(offset)) : ::read(fd, dst, n);
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
