// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the retry policy needs between two attempts of a call: whether to try again, and how
/// long to pause (the pause itself, which a stop cuts short: ferry/detail/stoppable_wait.hpp).
#pragma once

#include <chrono>
#include <exception>

#include "ferry/detail/retry_schedule.hpp"
#include "ferry/detail/stoppable_wait.hpp"
#include "ferry/options.hpp"

namespace ferry::detail {

/// A stage's policy as the one retry schedule (ferry/detail/retry_schedule.hpp). A stage asks
/// `when` of every `std::exception` and retries anything else (`others::tested`), unlike
/// `http_client`, which retries only a `ferry::error` that says it may pass.
inline retry_schedule schedule_of(const error_policy& policy) noexcept {
    return {.attempts = policy.attempts,
            .backoff = policy.backoff,
            .multiplier = policy.multiplier,
            .jitter = policy.jitter,
            .when = policy.when,
            .foreign = retry_schedule::others::tested};
}

/// The pause after attempt `failed` of a call failed with `err` (`retry_schedule::pause_after`).
inline std::chrono::duration<double, std::milli> pause_before_retry(const error_policy& policy,
                                                                    int failed,
                                                                    const std::exception_ptr& err) {
    return schedule_of(policy).pause_after(failed, err);
}

/// The pause for a `nominal` one (jitter, `Retry-After`; `retry_schedule::pause`).
inline std::chrono::duration<double, std::milli> pause_before_retry(
    const error_policy& policy, std::chrono::duration<double, std::milli> nominal,
    const std::exception_ptr& err) {
    return schedule_of(policy).pause(nominal, err);
}

/// Whether the policy's test calls a failure worth another attempt.
inline bool worth_retrying(const error_policy& policy, const std::exception_ptr& err) noexcept {
    return schedule_of(policy).transient(err);
}

/// The one retry guard of a stage's calls (`apply`, a timed stage's attempts and their
/// expiry): whether attempt `attempt`, failed with `err`, gets another. It does while attempts
/// are left, its input is still there (`input_kept`: a call that consumed its input, or one
/// that may still be reading it, cannot run again), the pipeline is not stopping or aborting
/// (`stopping`), and the policy calls the failure worth it (asked last: it may run the user's
/// test).
inline bool retry_allowed(const error_policy& policy, int attempt, const std::exception_ptr& err,
                          bool input_kept, bool stopping) noexcept {
    return attempt < policy.attempts && input_kept && !stopping && worth_retrying(policy, err);
}

}  // namespace ferry::detail
