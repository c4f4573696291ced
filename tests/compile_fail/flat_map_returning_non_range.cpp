// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: flat_map(g) with a g that returns an int: one error, that g must return a
/// range.
// expect-error: ferry::builder<T>::flat_map\(g\): g must return a range
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2}).flat_map([](int x) { return x * 2; }).batch(2);
    (void)b;
}
