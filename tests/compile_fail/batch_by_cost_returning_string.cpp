// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: batch_by(cost) with a cost that returns a std::string: one error, that the
/// cost must be a number (before: ~60 lines of std::function's overloads after it).
// expect-error: ferry::builder<T>::batch_by\(cost, options\): cost must return a number
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2})
                 .batch_by([](const int& x) { return std::to_string(x); }, {.max_cost = 10});
    (void)b;
}
