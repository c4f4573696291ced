// SPDX-License-Identifier: Apache-2.0
/// \file
/// Rate-limited logging of failures, per stage.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "ferry/options.hpp"

namespace ferry::detail {

/// Rate-limited failure logging: `burst` lines per stage per window, then a count, then one
/// summary line when the window rolls over (or the epoch ends). A null sink prints to stderr.
class failure_log {
  public:
    failure_log(logger sink, int burst, std::chrono::milliseconds window);

    void log(const std::string& stage, log_level level, const std::string& line);
    /// Prints the pending summaries (end of an epoch, destruction).
    void flush();

  private:
    struct window {
        std::chrono::steady_clock::time_point start{};
        int printed = 0;
        std::uint64_t suppressed = 0;
    };
    [[nodiscard]] std::string summary_line(const std::string& stage, const window& w) const;
    void emit(log_level level, const std::string& line);

    logger sink_;
    int burst_;
    std::chrono::milliseconds window_;
    std::mutex mutex_;
    std::map<std::string, window> windows_;
};

}  // namespace ferry::detail
