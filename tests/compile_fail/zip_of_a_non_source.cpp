// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: zip(42, v): one error, that a is not a source, before ferry::from's own.
// expect-error: ferry::zip\(a, b\): a is not a source
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto z = ferry::zip(42, std::vector<int>{3, 4}).batch(2);
    (void)z;
}
