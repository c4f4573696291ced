// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: map(f) with an f of std::string on a pipeline of ints: the first error is
/// map's static_assert, and the stage's later calls add none.
// expect-error: ferry::builder<T>::map\(f\): f cannot be called with T
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2})
                 .map([](const std::string& s) { return s.size(); }, {.name = "decode"})
                 .batch(2);
    (void)b;
}
