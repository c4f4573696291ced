// SPDX-License-Identifier: Apache-2.0
/// \file
/// quarantine_writer: open for appending at build(), one write(2) per line, errors logged once.

#include "quarantine_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ferry/error.hpp"
#include "ferry/quarantine.hpp"

namespace ferry::detail {

quarantine_writer::quarantine_writer(const std::filesystem::path& file) : path_(file.string()) {
    // 0600, like the cache's files: the lines name inputs (paths, URLs) and why they failed.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) {
        const int err = errno;
        throw io_error("pipeline_options::quarantine: cannot open '" + path_ +
                           "' for appending: " + std::strerror(err),
                       false);
    }
}

quarantine_writer::~quarantine_writer() {
    if (fd_ >= 0) ::close(fd_);
}

void quarantine_writer::append(const failure& f, failure_log& log) {
    const std::string line = quarantine_line(f) + '\n';
    std::string problem;
    {
        std::lock_guard lock(mutex_);
        if (broken_) return;
        // O_APPEND puts each write at the end; a short write (a full disk) is continued, and a
        // failed one ends the file's use rather than leave a torn line to append after.
        std::size_t done = 0;
        while (done < line.size()) {
            const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                const int err = n < 0 ? errno : EIO;
                broken_ = true;
                problem = "quarantine file '" + path_ + "': write failed (" + std::strerror(err) +
                          "); later failures are not written to it";
                break;
            }
            done += static_cast<std::size_t>(n);
        }
    }
    if (!problem.empty()) log.log("quarantine", log_level::error, problem);
}

}  // namespace ferry::detail
