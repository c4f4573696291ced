// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: route whose branches end with int and std::string: one error, that every
/// branch must end with the same element type.
// expect-error: builder<T>::route\(select, branches\.\.\.\): every branch must end with
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2})
                 .route([](const int& x) { return x % 2; },
                        [](auto s) { return s.map([](int x) { return x + 1; }); },
                        [](auto s) { return s.map([](int x) { return std::to_string(x); }); })
                 .batch(2);
    (void)b;
}
