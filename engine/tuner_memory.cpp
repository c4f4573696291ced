// SPDX-License-Identifier: Apache-2.0
/// \file
/// The tuner's memory budget (tuner_policy's rules): in_flight at what the budget holds of the
/// items measured, lowered at once when they grow, raised only by a margin and not soon after a
/// fall; a budget below what the pipeline's shape holds is an error naming both.

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tuner_policy.hpp"

namespace ferry::detail {
namespace {

std::string memory_megabytes(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
    return buf;
}

}  // namespace

std::size_t tuner_policy::in_flight_for(const tuner_budget& b, double item_bytes) {
    if (b.memory_bytes == 0 || item_bytes <= 0) return b.max_in_flight;
    const double fits = std::floor(static_cast<double>(b.memory_bytes) / item_bytes);
    const auto n = fits >= static_cast<double>(b.max_in_flight)
                       ? b.max_in_flight
                       : static_cast<std::size_t>(std::max(0.0, fits));
    return std::clamp(n, b.min_in_flight, b.max_in_flight);
}

std::optional<std::string> tuner_policy::memory_check(const tuner_budget& b, double item_bytes,
                                                      double largest_output_bytes) {
    if (b.memory_bytes == 0) return std::nullopt;
    const auto budget = static_cast<double>(b.memory_bytes);
    const double held = static_cast<double>(b.min_in_flight) * std::max(0.0, item_bytes);
    char buf[512];
    if (held > budget && held >= largest_output_bytes) {
        std::snprintf(
            buf, sizeof buf,
            "autotune: memory_budget = %llu bytes (%s) cannot be kept: the pipeline "
            "holds at least %zu source items at once (%s), and at %.0f bytes an item "
            "(measured) they hold %.0f bytes (%s); raise memory_budget to that or hold "
            "fewer items",
            static_cast<unsigned long long>(b.memory_bytes), memory_megabytes(budget).c_str(),
            b.min_in_flight,
            b.min_in_flight_by.empty() ? "one item at a time" : b.min_in_flight_by.c_str(),
            std::ceil(item_bytes), std::ceil(held), memory_megabytes(held).c_str());
        return std::string(buf);
    }
    if (largest_output_bytes > budget) {
        std::snprintf(buf, sizeof buf,
                      "autotune: memory_budget = %llu bytes (%s) cannot be kept: one output "
                      "holds %.0f bytes (%s), the largest so far; raise memory_budget to that or "
                      "make outputs smaller",
                      static_cast<unsigned long long>(b.memory_bytes),
                      memory_megabytes(budget).c_str(), largest_output_bytes,
                      memory_megabytes(largest_output_bytes).c_str());
        return std::string(buf);
    }
    return std::nullopt;
}

bool tuner_policy::keep_memory(const tuner_sample& s, double rate) {
    if (budget_.memory_bytes == 0) return false;
    if (s.in_flight > 0) in_flight_ = s.in_flight;  // the epoch's first output may have set it
    if (s.item_bytes <= 0) return false;
    memory_error_ = memory_check(budget_, s.item_bytes, s.largest_output_bytes);
    if (memory_error_) return false;
    const std::size_t allowed = in_flight_for(budget_, s.item_bytes);
    // Down at once (the budget holds); up only by a margin and not soon after a fall, so that
    // items of other sizes measured in turn do not swing it.
    const bool down = allowed < in_flight_;
    const bool up =
        allowed > in_flight_ && memory_rest_ == 0 &&
        static_cast<double>(allowed) >= static_cast<double>(in_flight_) * (1 + memory_margin);
    if (!down && !up) return false;
    tuning_decision d;
    d.at = std::chrono::nanoseconds(static_cast<std::int64_t>(s.at_s * 1e9));
    d.stage = "in_flight";
    d.from = static_cast<int>(in_flight_);
    d.to = static_cast<int>(allowed);
    d.why = "items hold " + memory_megabytes(s.item_bytes) + " each: " + std::to_string(allowed) +
            " of them hold " + memory_megabytes(static_cast<double>(allowed) * s.item_bytes) +
            " of the " + memory_megabytes(static_cast<double>(budget_.memory_bytes)) + " budget";
    d.rate_before = rate;
    in_flight_ = allowed;
    add(std::move(d), false);
    if (down) memory_rest_ = memory_rest;
    return true;
}

}  // namespace ferry::detail
