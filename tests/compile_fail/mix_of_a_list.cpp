// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: mix<int> with a std::list source: one error, that a mix's source must be a
/// sized random-access range (before: a second one from indexing the list).
// expect-error: ferry::mix_input: a mix's source must be a sized random-access range
#include <list>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    std::list<int> a{1, 2};
    std::vector<int> b{3};
    auto m = ferry::mix<int>({{a, 0.5}, {b, 0.5}}).batch(2);
    (void)m;
}
