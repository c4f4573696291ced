// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: a map(f) whose f cannot take the element, then a whole pipeline written for
/// what f would have returned: the refused map's static_assert is the only error (the builder's
/// later calls, build() and the loop add none of their own).
// expect-error: ferry::builder<T>::map\(f\): f cannot be called with T
#include <cstddef>
#include <string>
#include <vector>

#include "ferry/ferry.hpp"

int main() {
    auto pipe = ferry::from(std::vector<int>{1, 2})
                    .map([](const std::string& s) { return s.size(); })
                    .filter([](std::size_t n) { return n > 0; })
                    .map([](std::size_t n) { return std::vector<std::size_t>(n, n); })
                    .flat_map([](std::vector<std::size_t> v) { return v; })
                    .batch(4)
                    .unbatch()
                    .batch_by([](std::size_t n) { return static_cast<double>(n); }, {.max_cost = 8})
                    .map([](const std::vector<std::size_t>& b) { return b.size(); })
                    .build();
    for (const auto& n : pipe) (void)n;
}
