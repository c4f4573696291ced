// SPDX-License-Identifier: Apache-2.0
/// \file
/// photo_set_gen: writes perf/compare's JPEG set (perf/common/photo_set.hpp) and nothing else. A
/// program of its own so that compare_runner, whose peak memory perf/compare reports, links only
/// what a ferry user's loader links: OpenCV's imgcodecs (which encodes the set) loads GDAL and ~130
/// more shared libraries, 43 MB of resident memory before the first image.
///
///   photo_set_gen DIR COUNT     prints {"generated": COUNT}
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "common/photo_set.hpp"

int main(int argc, char** argv) {
    if (argc != 3 || std::atoi(argv[2]) < 1) {
        std::cerr << "usage: photo_set_gen DIR COUNT\n";
        return 2;
    }
    const auto paths = ferry_perf::photo_set(argv[1], std::atoi(argv[2]));
    std::printf("{\"generated\": %zu}\n", paths.size());
    return 0;
}
