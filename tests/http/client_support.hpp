// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the http_client cases (client.cpp, client_load.cpp) share: request options that keep
/// cases apart, and waiting for a condition with a bound.
#pragma once

#include <chrono>
#include <ferry/http.hpp>
#include <thread>

namespace ferry_test {

/// Not adaptive where a case is not about throttling: host limits are per process and keyed by
/// host and port, and a port another case's server throttled on may come back here.
inline const ferry::http_options plain{.adaptive = false};
/// Limits far beyond the cases' bounds, so that only cancellation can end a frozen request.
inline const ferry::http_options patient{.timeout = std::chrono::seconds(30),
                                         .low_speed_time = std::chrono::seconds(0),
                                         .adaptive = false};

/// `d` in milliseconds, for messages and comparisons Boost.Test can print.
inline double ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

/// Waits until `pred()` holds; false if it does not within 10 s.
template <class P>
bool eventually(P pred) {
    using steady = std::chrono::steady_clock;
    for (const auto until = steady::now() + std::chrono::seconds(10); !pred();
         std::this_thread::sleep_for(std::chrono::milliseconds(2))) {
        if (steady::now() > until) return false;
    }
    return true;
}

}  // namespace ferry_test
