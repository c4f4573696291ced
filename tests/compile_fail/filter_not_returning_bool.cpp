// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: filter(pred) with a pred that returns a std::string: one error, that pred must
/// return bool.
// expect-error: ferry::builder<T>::filter\(pred\): pred must return bool
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2})
                 .filter([](const int& x) { return std::to_string(x); })
                 .batch(2);
    (void)b;
}
