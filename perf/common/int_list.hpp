// SPDX-License-Identifier: Apache-2.0
/// \file
/// The benchmarks' comma-separated integer options (`--concurrency 1,8,64,256`).
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace ferry_perf {

/// "1,8,64" as {1, 8, 64}; throws std::invalid_argument on an item that is not a number.
inline std::vector<int> parse_int_list(const std::string& s) {
    std::vector<int> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
    return out;
}

}  // namespace ferry_perf
