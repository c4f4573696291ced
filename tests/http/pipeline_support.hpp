// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the http suite's pipeline cases share: the process's thread count (to show that nothing
/// is left behind, or that no thread is spent per request) and the accounting every stopped or
/// finished pipeline must balance.
#pragma once

#include <dirent.h>

#include <boost/test/unit_test.hpp>
#include <cstddef>
#include <ferry/options.hpp>
#include <ferry/stats.hpp>
#include <string_view>

namespace ferry_test {

/// A logger that drops every line, for pipelines whose failures a case provokes on purpose.
inline const ferry::logger quiet = [](ferry::log_level, std::string_view) {};

/// Threads of this process now.
inline std::size_t thread_count() {
    std::size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/task")) {
        while (const dirent* e = ::readdir(d)) {
            if (e->d_name[0] != '.') ++n;
        }
        ::closedir(d);
    }
    return n;
}

/// Every produced item ended somewhere: nothing is pending (a stopped pipeline's stats are
/// taken once its calls have settled).
inline void check_accounting(const ferry::pipeline_stats& s) {
    BOOST_TEST(s.produced == s.delivered + s.filtered + s.failed + s.cancelled + s.pending);
    BOOST_TEST(s.pending == 0u);
}

}  // namespace ferry_test
