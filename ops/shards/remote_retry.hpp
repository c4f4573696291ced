// SPDX-License-Identifier: Apache-2.0
/// \file
/// A remote shard's read tried again on the one retry schedule (ferry/detail/retry_schedule.hpp,
/// `tar_options::remote_retry`), its pauses cut short when the pipeline stops.
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "ferry/bytes.hpp"
#include "ferry/detail/retry_schedule.hpp"
#include "ferry/shards.hpp"
#include "ferry/this_call.hpp"

namespace ferry::shards_detail {

/// A pause between two reads, in milliseconds.
using remote_pause = std::chrono::duration<double, std::milli>;

/// `options.remote_retry` as the retry schedule, under `http_client`'s rule: only a
/// `ferry::error` that says it may pass (`when`, `ferry::is_transient` by default) is read again.
[[nodiscard]] inline detail::retry_schedule remote_schedule(const sources::tar_options& options) {
    return detail::retry_schedule::of(options.remote_retry, detail::retry_schedule::others::never);
}

/// Sleeps `pause` in slices of at most 10 ms, asking `this_call::stop_requested()` before each:
/// false as soon as the call running on this thread should give up (the pipeline stopping or
/// being destroyed, the epoch left early), true once the pause is over. A pause too long for the
/// clock waits until then.
inline bool wait_unless_stopped(remote_pause pause) {
    constexpr double longest_ms = 1e12;  // about 30 years: the clock's nanoseconds still hold it
    const double ms = pause.count() < longest_ms ? pause.count() : longest_ms;  // NaN: no pause
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           remote_pause(ms > 0 ? ms : 0.0));
    for (;;) {
        if (this_call::stop_requested()) return false;
        const auto now = std::chrono::steady_clock::now();
        if (now >= until) return true;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - now, std::chrono::milliseconds(10)));
    }
}

/// `read()`'s bytes, read again after each transient failure while `schedule` allows: attempt
/// `k`'s failure `err` is followed by `wait(schedule.pause_after(k, err))`, then attempt `k + 1`.
/// Throws the last failure when it is not transient, when the attempts are spent, or when
/// `wait` returns false (the call was stopped: no attempt after that).
/// \code
///   auto out = read_retrying(remote_schedule(options), [&] { return fetch(); },
///                            wait_unless_stopped);
/// \endcode
template <class Read, class Wait>
[[nodiscard]] ferry::bytes read_retrying(const detail::retry_schedule& schedule, Read&& read,
                                         Wait&& wait) {
    for (int attempt = 1;; ++attempt) {
        try {
            return read();
        } catch (...) {
            const std::exception_ptr err = std::current_exception();
            if (attempt >= schedule.attempts || !schedule.transient(err) ||
                this_call::stop_requested() || !wait(schedule.pause_after(attempt, err))) {
                throw;
            }
        }
    }
}

}  // namespace ferry::shards_detail
