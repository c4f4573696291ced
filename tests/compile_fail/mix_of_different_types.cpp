// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: mix<int> with a source of std::string: one error, that every source must have
/// the mix's element type.
// expect-error: ferry::mix_input<T>: every source of a mix must have elements of the
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    std::vector<int> a{1, 2};
    std::vector<std::string> b{"x"};
    auto m = ferry::mix<int>({{a, 0.5}, {b, 0.5}}).batch(2);
    (void)m;
}
