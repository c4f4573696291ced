// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image trainer's progress bar: one line on stderr, redrawn at most five times a second, with
/// the rate and the time left.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

namespace ferry_examples {

/// A progress bar for `total` items: `update(done)` redraws it (at most every 200 ms, and at the
/// end), `finish()` ends its line. Disabled, it prints nothing (e.g. when stderr is no terminal).
class progress {
    using steady = std::chrono::steady_clock;

  public:
    progress(std::string title, std::size_t total, bool enabled)
        : title_(std::move(title)), total_(total), enabled_(enabled), start_(steady::now()) {}

    void update(std::size_t done) {
        if (!enabled_) return;
        last_done_ = done;
        const auto now = steady::now();
        if (now - last_ < std::chrono::milliseconds(200) && done < total_) return;
        last_ = now;
        const double secs = std::chrono::duration<double>(now - start_).count();
        const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
        const double left = done < total_ ? static_cast<double>(total_ - done) : 0;
        const double eta = rate > 0 ? left / rate : 0;
        constexpr int width = 30;
        const int filled =
            total_ > 0 ? std::min(width, static_cast<int>(width * static_cast<double>(done) /
                                                          static_cast<double>(total_)))
                       : width;
        std::fprintf(stderr, "\r%s [%s%s] %zu/%zu  %.0f img/s  ETA %.0fs ", title_.c_str(),
                     std::string(static_cast<std::size_t>(filled), '#').c_str(),
                     std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done,
                     total_, rate, eta);
    }
    void finish() {
        if (enabled_ && last_done_ > 0) std::fputc('\n', stderr);
    }

  private:
    std::string title_;
    std::size_t total_;
    bool enabled_;
    steady::time_point start_;
    steady::time_point last_{};
    std::size_t last_done_ = 0;
};

}  // namespace ferry_examples
