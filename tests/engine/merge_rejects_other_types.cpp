// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must not compile (ctest engine.merge_rejects_other_element_types): a merge's branches must end
/// with one element type, and the error says so, naming each branch's type.

#include <string>
#include <vector>

#include "ferry/from.hpp"
#include "ferry/merge.hpp"

int main() {
    const std::vector<int> numbers{1, 2};
    const std::vector<std::string> words{"a", "b"};
    auto a = ferry::from(numbers).map([](int x) { return x + 1; });
    auto b = ferry::from(words).map([](const std::string& s) { return s + "!"; });
    ferry::merge({a, b}, {.weights = {1, 3}});
}
