// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must not compile (ctest engine.mix_rejects_other_element_types): a mix's sources must share
/// the mix's element type, and the error says so.

#include <string>
#include <vector>

#include "ferry/mix.hpp"

int main() {
    const std::vector<int> numbers{1, 2};
    const std::vector<std::string> words{"a", "b"};
    auto mixed = ferry::mix<int>({{numbers, 0.5}, {words, 0.5}});
    (void)mixed;
}
