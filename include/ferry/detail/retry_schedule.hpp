// SPDX-License-Identifier: Apache-2.0
/// \file
/// The one retry schedule: which failures are tried again, and the pause before the next
/// attempt. Used by the engine's stages (a stage's `on_error`) and by
/// `ferry::ops::http_client`'s event loop (`http_client_options::retry`) alike; not API.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>

#include "ferry/export.hpp"
#include "ferry/retry.hpp"

namespace ferry::detail {

/// A retry policy's arithmetic. Attempts count from 1; the pause after attempt `k` failed is
/// `backoff * multiplier^(k - 1)`, times a random factor in [1 - jitter, 1], and never shorter
/// than the failure's `ferry::error::retry_after()` (a server's `Retry-After`).
/// \code
///   const retry_schedule s = retry_schedule::of(ferry::retry{.attempts = 3, .backoff = 10ms});
///   s.backoff_after(1);  // 10 ms, before attempt 2
///   s.backoff_after(2);  // 20 ms, before attempt 3
///   if (attempt < s.attempts && s.transient(err)) sleep(s.pause_after(attempt, err));
/// \endcode
struct FERRY_API retry_schedule {
    /// How a failure that is not a `ferry::error` is judged.
    enum class others : std::uint8_t {
        /// The engine's rule: a `std::exception` is asked of `when` (`ferry::is_transient` calls
        /// it transient), anything else is retried (nothing to test).
        tested,
        /// `http_client`'s rule: only a `ferry::error` says whether a request may pass next time;
        /// anything else is not retried.
        never,
    };

    int attempts = 1;  ///< in all, at least 1
    std::chrono::milliseconds backoff{0};
    double multiplier = 1.0;
    double jitter = 0.0;        ///< within [0, 1]
    retry_test when = nullptr;  ///< nullptr: every failure may pass (as `others` allows)
    others foreign = others::tested;

    /// `r`'s schedule: attempts below 1 count as 1, a jitter outside [0, 1] is clamped (as
    /// `error_policy` does).
    [[nodiscard]] static retry_schedule of(const retry& r,
                                           others foreign = others::tested) noexcept;

    /// The pause after attempt `failed` (1, 2, ...) failed, before jitter and `Retry-After`:
    /// `backoff * multiplier^(failed - 1)`.
    [[nodiscard]] std::chrono::duration<double, std::milli> backoff_after(
        int failed) const noexcept;
    /// The pause for a `nominal` one (`backoff_after`), a random `draw` in [0, 1) and a failure
    /// that asked for `retry_after`: `nominal * (1 - jitter * draw)`, at least `retry_after`.
    [[nodiscard]] std::chrono::duration<double, std::milli> pause(
        std::chrono::duration<double, std::milli> nominal, std::chrono::milliseconds retry_after,
        double draw) const noexcept;
    /// The same for the failure `err` (its `ferry::error::retry_after()`), with a draw of this
    /// thread's generator (drawn only when `jitter` > 0).
    [[nodiscard]] std::chrono::duration<double, std::milli> pause(
        std::chrono::duration<double, std::milli> nominal, const std::exception_ptr& err) const;
    /// The pause after attempt `failed` failed with `err`: `pause(backoff_after(failed), err)`.
    [[nodiscard]] std::chrono::duration<double, std::milli> pause_after(
        int failed, const std::exception_ptr& err) const {
        return pause(backoff_after(failed), err);
    }
    /// Whether `err` is worth another attempt: `when` asked (a `when` that throws retries
    /// nothing), and what is not a `ferry::error` as `foreign` says.
    [[nodiscard]] bool transient(const std::exception_ptr& err) const noexcept;
};

}  // namespace ferry::detail
