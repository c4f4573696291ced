// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: map(f) with an f that returns nothing: the first error says to return the
/// element or use filter().
// expect-error: ferry::builder<T>::map\(f\): f must return the new element \(it returns
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2}).map([](int) {}, 4).batch(2);
    (void)b;
}
