// SPDX-License-Identifier: Apache-2.0
/// \file
/// The package managers' test program: a tiny pipeline through an installed ferry, checked.
/// Exits non-zero when the delivered values, their order or the stats are wrong.

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

#include <ferry/ferry.hpp>

int main() {
    std::vector<int> numbers(20);
    std::iota(numbers.begin(), numbers.end(), 1);

    // Squares of the even numbers from 1 to 20, in batches of 4: 10 values in 3 batches.
    auto pipe = ferry::from(numbers)
                    .filter([](int x) { return x % 2 == 0; })
                    .map([](int x) { return std::int64_t{x} * x; }, {.concurrency = 2})
                    .batch(4)
                    .build({.threads = 2});

    std::vector<std::int64_t> got;
    std::size_t batches = 0;
    for (const auto& batch : pipe) {
        ++batches;
        got.insert(got.end(), batch.begin(), batch.end());
    }

    const std::vector<std::int64_t> want = {4, 16, 36, 64, 100, 144, 196, 256, 324, 400};
    const ferry::pipeline_stats stats = pipe.stats();
    if (got != want || batches != 3 || stats.produced != 20 || stats.delivered != 10) {
        std::fprintf(stderr, "ferry test package: FAILED (%zu values in %zu batches)\n", got.size(),
                     batches);
        return 1;
    }
    std::printf("ferry test package: ferry %s OK (%zu values in %zu batches)\n", ferry::version,
                got.size(), batches);
    return 0;
}
