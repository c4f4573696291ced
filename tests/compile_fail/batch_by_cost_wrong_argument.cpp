// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: batch_by(cost) with a cost of std::string on a pipeline of ints: one error,
/// naming the call and what cost must take.
// expect-error: builder<T>::batch_by\(cost, options\): cost cannot be called with
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto b = ferry::from(std::vector<int>{1, 2})
                 .batch_by([](const std::string& s) { return s.size(); }, {.max_cost = 10});
    (void)b;
}
