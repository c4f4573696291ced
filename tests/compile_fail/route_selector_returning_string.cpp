// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: route(select, ...) with a selector that returns a std::string: one error, that
/// it must return the branch's index.
// expect-error: ferry::builder<T>::route\(select, \.\.\.\): select must return an integer
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2})
                 .route([](const int& x) { return std::to_string(x); },
                        [](auto s) { return s.map([](int x) { return x + 1; }); },
                        [](auto s) { return s.map([](int x) { return x - 1; }); })
                 .batch(2);
    (void)b;
}
