// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: unbatch() on a pipeline of ints: one error, that the element type must be a
/// range (before: "no matching function" with the unsatisfied constraint in its notes).
// expect-error: ferry::builder<T>::unbatch\(\): T, the pipeline's element type .* a range
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2}).unbatch().batch(2);
    (void)b;
}
