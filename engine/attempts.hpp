// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the retry policy needs between two attempts of a call: whether to try again, and a
/// backoff sleep that a stop cuts short.
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "ferry/options.hpp"
#include "ferry/this_call.hpp"

namespace ferry::detail {

/// Sleeps `d`, in slices of at most 10 ms, and returns early once the call should give up: a
/// long backoff must not hold stop() or destruction.
inline void sleep_unless_stopped(std::chrono::duration<double, std::milli> d) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
    for (;;) {
        if (this_call::stop_requested()) return;
        const auto now = std::chrono::steady_clock::now();
        if (now >= until) return;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - now, std::chrono::milliseconds(10)));
    }
}

/// Whether the policy's test calls a failure worth another attempt.
inline bool worth_retrying(const error_policy& policy, const std::exception_ptr& err) noexcept {
    if (policy.when == nullptr) return true;
    try {
        std::rethrow_exception(err);
    } catch (const std::exception& e) {
        try {
            return policy.when(e);
        } catch (...) {
            return false;  // a test that throws retries nothing
        }
    } catch (...) {
        return true;  // not a std::exception: nothing to test
    }
}

}  // namespace ferry::detail
