// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry: builds a small pipeline through `find_package(ferry)` and
/// checks what it delivers. Exits non-zero on any mismatch.

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <ferry/ferry.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "package test: FAILED: %s\n", what);
        ++failures;
    }
}

}  // namespace

int main() {
    const std::string expected_version = std::to_string(FERRY_VERSION_MAJOR) + "." +
                                         std::to_string(FERRY_VERSION_MINOR) + "." +
                                         std::to_string(FERRY_VERSION_PATCH);
    check(expected_version == ferry::version, "ferry::version matches the FERRY_VERSION_* macros");

    std::vector<int> numbers(100);
    std::iota(numbers.begin(), numbers.end(), 0);

    // Squares of the odd numbers below 100, in batches of 8: 50 values, the last batch short.
    auto pipe = ferry::from(numbers)
                    .filter([](int x) { return x % 2 == 1; })
                    .map([](int x) { return std::int64_t{x} * x; }, {.concurrency = 2})
                    .batch(8)
                    .build({.threads = 2});

    std::vector<std::int64_t> got;
    std::size_t batches = 0;
    for (const auto& batch : pipe) {
        ++batches;
        got.insert(got.end(), batch.begin(), batch.end());
    }

    std::vector<std::int64_t> want;
    for (int x : numbers)
        if (x % 2 == 1) want.push_back(std::int64_t{x} * x);

    check(got == want, "delivered values and order");
    check(batches == 7, "number of batches (50 items in batches of 8)");

    const ferry::pipeline_stats stats = pipe.stats();
    check(stats.produced == 100, "stats: produced == 100");
    check(stats.delivered == 50, "stats: delivered == 50");
    check(stats.filtered == 50, "stats: filtered == 50");
    check(stats.failed == 0, "stats: failed == 0");

    // The error hierarchy is usable from outside (its out-of-line parts live in the library).
    check(std::string(ferry::to_string(ferry::errc::decode)) == "decode", "ferry::to_string(errc)");

    if (failures != 0) return 1;
    std::printf("package test: ferry %s OK (%zu values in %zu batches)\n", ferry::version,
                got.size(), batches);
    return 0;
}
