// SPDX-License-Identifier: Apache-2.0
/// \file
/// The pause between two attempts that a stop cuts short: used by a stage's retries (the
/// engine's attempts.hpp) and a remote shard's reads (ops/shards/remote_retry.hpp); not API.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

#include "ferry/this_call.hpp"

namespace ferry::detail {

/// Sleeps `pause` in slices of at most 10 ms, asking `this_call::stop_requested()` before each:
/// false as soon as the call running on this thread should give up (the pipeline stopping or
/// being destroyed, the epoch left early), true once the pause is over. A long backoff so holds
/// up neither stop() nor destruction. A pause too long for the clock waits until then; a
/// negative or NaN one does not wait.
inline bool wait_unless_stopped(std::chrono::duration<double, std::milli> pause) {
    constexpr double longest_ms = 1e12;  // about 30 years: the clock's nanoseconds still hold it
    const double ms = pause.count() < longest_ms ? pause.count() : longest_ms;  // NaN: no pause
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double, std::milli>(ms > 0 ? ms : 0.0));
    for (;;) {
        if (this_call::stop_requested()) return false;
        const auto now = std::chrono::steady_clock::now();
        if (now >= until) return true;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - now, std::chrono::milliseconds(10)));
    }
}

}  // namespace ferry::detail
