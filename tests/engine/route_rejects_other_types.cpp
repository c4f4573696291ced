// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must not compile (ctest engine.route_rejects_other_element_types): a route's branches must end
/// with one element type, and the error says so.

#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto p = ferry::from(std::vector<int>{1, 2})
                 .route([](int x) { return x % 2; },
                        [](auto b) { return b.map([](int x) { return x; }); },
                        [](auto b) { return b.map([](int x) { return std::to_string(x); }); });
    (void)p;
}
