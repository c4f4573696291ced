// SPDX-License-Identifier: Apache-2.0
/// \file
/// The quarantine file a pipeline appends its failures to (`pipeline_options::quarantine`).
#pragma once

#include <filesystem>
#include <mutex>
#include <string>

#include "failure_log.hpp"
#include "ferry/stats.hpp"

namespace ferry::detail {

/// Appends one JSON line per failure (`ferry::quarantine_line`) to a file opened for appending.
/// Safe to call from any thread: each line goes out in one `write` under a mutex, so concurrent
/// failures never interleave and every line is in the kernel (it survives the process crashing)
/// once `append` returns. Not fsync'ed: a crash of the machine may lose the last lines.
class quarantine_writer {
  public:
    /// Opens (creates) `file` for appending; throws `ferry::io_error` naming it and the cause.
    explicit quarantine_writer(const std::filesystem::path& file);
    ~quarantine_writer();
    quarantine_writer(const quarantine_writer&) = delete;
    quarantine_writer& operator=(const quarantine_writer&) = delete;

    /// Appends `f`'s line. The first write that fails is logged to `log` (once); the file gets
    /// no more lines after it, so it never holds a torn one in the middle.
    void append(const failure& f, failure_log& log);

  private:
    std::string path_;
    int fd_ = -1;
    std::mutex mutex_;
    bool broken_ = false;  ///< a write failed: nothing more is written
};

}  // namespace ferry::detail
