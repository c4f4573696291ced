// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the retry policy needs between two attempts of a call: whether to try again, and a
/// backoff sleep that a stop cuts short.
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <random>
#include <thread>

#include "ferry/error.hpp"
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

/// The pause before the next attempt: `backoff` times a random factor in [1 - jitter, 1], and
/// at least what the failure asked for (`ferry::error::retry_after()`).
inline std::chrono::duration<double, std::milli> pause_before_retry(
    const error_policy& policy, std::chrono::duration<double, std::milli> backoff,
    const std::exception_ptr& err) {
    auto pause = backoff;
    if (policy.jitter > 0) {
        thread_local std::minstd_rand rng{std::random_device{}()};
        pause *= 1.0 - policy.jitter * std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    }
    try {
        std::rethrow_exception(err);
    } catch (const ::ferry::error& e) {
        pause = std::max(pause, std::chrono::duration<double, std::milli>(e.retry_after()));
    } catch (...) {
    }
    return pause;
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
