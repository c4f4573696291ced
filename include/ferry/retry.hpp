// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::retry`: how often and how patiently a failed call is tried again, and what then
/// (`ferry::fail`, `ferry::skip`). Part of ferry::core: a stage's `on_error` and
/// `ferry::ops::http_client`'s requests take the same policy; the pauses and the rule of which
/// failures pass are computed in one place (ferry/detail/retry_schedule.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>

#include "ferry/error.hpp"

namespace ferry {

/// Which failures `ferry::retry` tries again: a plain function (a lambda without captures
/// converts to one).
using retry_test = bool (*)(const std::exception&);

/// What a stage does once an item has failed (after any retries).
enum class error_action : std::uint8_t {
    fail,  ///< end the pipeline: the consumer's `next()` / iterator throws `ferry::stage_error`
    skip,  ///< drop the item, record it in `failures()`, go on
};

/// Retry a failing call `attempts` times in all, sleeping `backoff`, then `backoff * multiplier`,
/// ... between attempts (each pause scaled by a random factor in [1 - `jitter`, 1], and never
/// shorter than a `ferry::error`'s `retry_after()`: a server's `Retry-After`); when every attempt
/// failed, do `then`. Only failures that `when` calls
/// worth it are tried again — by default `ferry::is_transient`: a `ferry::error` whose
/// `transient()` is false (a missing file, an HTTP 404, a corrupt image) goes to `then` at once;
/// any other exception is retried. `.when = nullptr` retries every failure.
/// \code
///   .map(fetch, {.concurrency = 16, .on_error = ferry::retry{.attempts = 3, .then =
///   ferry::error_action::skip}, .executor = ferry::io})
/// \endcode
/// The sleep blocks the thread running the call: use retries on `io` stages, where that is cheap.
struct retry {
    int attempts = 3;
    std::chrono::milliseconds backoff{10};
    double multiplier = 2.0;
    error_action then = error_action::fail;
    retry_test when = &is_transient;
    /// Spreads the pauses: each is `backoff * multiplier^k` times a random factor in
    /// [1 - jitter, 1] (0: none; 1: "full jitter"), so that many workers that failed together
    /// do not come back together. Within [0, 1].
    double jitter = 0.0;
};

/// The first error ends the pipeline and is rethrown to the consumer as `ferry::stage_error`.
inline constexpr error_action fail = error_action::fail;
/// A failing item is dropped, recorded in `pipeline::failures()`, and the pipeline goes on.
inline constexpr error_action skip = error_action::skip;

}  // namespace ferry
