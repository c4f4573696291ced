// SPDX-License-Identifier: Apache-2.0
/// \file
/// photo_set_gen: writes perf/compare's JPEG set (perf/common/photo_set.hpp) and nothing else. A
/// program of its own so that compare_runner, whose peak memory perf/compare reports, links only
/// what a ferry user's loader links: OpenCV's imgcodecs (which encodes the set) loads GDAL and ~130
/// more shared libraries, 43 MB of resident memory before the first image.
///
///   photo_set_gen DIR COUNT [--ffcv]    prints {"generated": COUNT}
///
/// `--ffcv`: the FFCV-like set (ffcv00000.jpg, ...: the longer side 512, quality 90) instead of
/// the ImageNet-like one (img00000.jpg, ...: 500x375, quality 90).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "common/photo_set.hpp"

int main(int argc, char** argv) {
    const bool ffcv = argc == 4 && std::string_view(argv[3]) == "--ffcv";
    if ((argc != 3 && !ffcv) || std::atoi(argv[2]) < 1) {
        std::cerr << "usage: photo_set_gen DIR COUNT [--ffcv]\n";
        return 2;
    }
    const auto paths = ferry_perf::photo_set(argv[1], std::atoi(argv[2]), ffcv);
    std::printf("{\"generated\": %zu}\n", paths.size());
    return 0;
}
