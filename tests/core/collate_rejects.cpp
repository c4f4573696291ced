// SPDX-License-Identifier: Apache-2.0
/// \file
/// Must NOT compile: `map(ferry::ops::collate)` over batches of samples whose label type has no
/// ferry dtype (`FERRY_REJECTED_LABEL`: bool, an unsigned 64-bit integer, a string). The ctests
/// `core.collate_rejects_*` compile it with each and expect the static_assert's message.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ferry/collate.hpp"
#include "ferry/ferry.hpp"

int main() {
    using sample = std::pair<ferry::tensor, FERRY_REJECTED_LABEL>;
    auto b = ferry::from(std::vector<sample>{}).batch(4).map(ferry::ops::collate);
    (void)b;
}
