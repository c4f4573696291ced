// SPDX-License-Identifier: Apache-2.0
/// \file
/// The retry schedule (ferry/detail/retry_schedule.hpp): the pauses and the transient rule.

#include "ferry/detail/retry_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "ferry/error.hpp"

namespace ferry::detail {
namespace {

/// `when`'s verdict on `e` (nullptr: every failure may pass); a test that throws retries nothing.
bool asks(retry_test when, const std::exception& e) noexcept {
    if (when == nullptr) return true;
    try {
        return when(e);
    } catch (...) {
        return false;
    }
}

}  // namespace

retry_schedule retry_schedule::of(const retry& r, others foreign) noexcept {
    return {.attempts = r.attempts < 1 ? 1 : r.attempts,
            .backoff = r.backoff,
            .multiplier = r.multiplier,
            .jitter = std::clamp(r.jitter, 0.0, 1.0),
            .when = r.when,
            .foreign = foreign};
}

std::chrono::duration<double, std::milli> retry_schedule::backoff_after(int failed) const noexcept {
    std::chrono::duration<double, std::milli> pause = backoff;
    // One multiplication per attempt, as the stages did (the same doubles bit for bit); past
    // infinity or zero nothing changes any more.
    for (int k = 1; k < failed && pause.count() != 0 && std::isfinite(pause.count()); ++k) {
        pause *= multiplier;
    }
    return pause;
}

std::chrono::duration<double, std::milli> retry_schedule::pause(
    std::chrono::duration<double, std::milli> nominal, std::chrono::milliseconds retry_after,
    double draw) const noexcept {
    if (jitter > 0) nominal *= 1.0 - jitter * draw;
    return std::max(nominal, std::chrono::duration<double, std::milli>(retry_after));
}

std::chrono::duration<double, std::milli> retry_schedule::pause(
    std::chrono::duration<double, std::milli> nominal, const std::exception_ptr& err) const {
    double draw = 0;
    if (jitter > 0) {
        thread_local std::minstd_rand rng{std::random_device{}()};
        draw = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    }
    std::chrono::milliseconds asked{0};
    try {
        std::rethrow_exception(err);
    } catch (const ::ferry::error& e) {
        asked = e.retry_after();
    } catch (...) {
    }
    return pause(nominal, asked, draw);
}

bool retry_schedule::transient(const std::exception_ptr& err) const noexcept {
    try {
        std::rethrow_exception(err);
    } catch (const ::ferry::error& e) {
        return asks(when, e);
    } catch (const std::exception& e) {
        return foreign == others::tested && asks(when, e);
    } catch (...) {
        return foreign == others::tested;  // not a std::exception: nothing to test
    }
}

}  // namespace ferry::detail
