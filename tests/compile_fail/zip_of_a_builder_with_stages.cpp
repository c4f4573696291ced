// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: zip(a, b) where a is a builder with a stage: one error naming a, before
/// anything from ferry::from.
// expect-error: ferry::zip\(a, b\): a is a builder with stages
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto a = ferry::from(std::vector<int>{1, 2}).map([](int x) { return x + 1; });
    auto z = ferry::zip(a, std::vector<int>{3, 4}).batch(2);
    (void)z;
}
