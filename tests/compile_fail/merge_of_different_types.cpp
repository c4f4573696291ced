// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: merge({a, b}) of builders whose elements differ (int, std::string): the first
/// error is merge's static_assert, one per branch type, each naming it in its note; no
/// "invalid use of 'void'" from the .batch(2) after it.
// expect-error: ferry::merge\(\{a, b, \.\.\.\}\): every branch must end with the same
// expect-errors: 2
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto a = ferry::from(std::vector<int>{1, 2});
    auto b = ferry::from(std::vector<std::string>{"x"});
    auto m = ferry::merge({a, b}, {.weights = {1, 3}}).batch(2);
    (void)m;
}
