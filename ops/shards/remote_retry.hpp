// SPDX-License-Identifier: Apache-2.0
/// \file
/// A remote shard's read tried again on the one retry schedule (ferry/detail/retry_schedule.hpp,
/// `tar_options::remote_retry`), its pauses cut short when the pipeline stops.
#pragma once

#include <chrono>
#include <exception>

#include "ferry/bytes.hpp"
#include "ferry/detail/retry_schedule.hpp"
#include "ferry/detail/stoppable_wait.hpp"
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

/// The pause that a stop cuts short (ferry/detail/stoppable_wait.hpp): false once the call
/// should give up, true once the pause is over.
using detail::wait_unless_stopped;

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
