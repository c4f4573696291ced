// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: filter(pred) with a pred of std::string on a pipeline of ints: one error,
/// naming the call and what pred must take.
// expect-error: ferry::builder<T>::filter\(pred\): pred cannot be called with const T&
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2})
                 .filter([](const std::string& s) { return s.empty(); })
                 .batch(2);
    (void)b;
}
