// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry::image: decodes a BMP assembled in memory, flips it and
/// batches it, through `find_package(ferry COMPONENTS image)`. Exits non-zero on any mismatch.

#include <cstdint>
#include <cstdio>
#include <vector>

#include <ferry/image.hpp>

int main() {
    // A 2x2 24-bit BMP, rows bottom-up, each padded to 8 bytes:
    //   top row: red, green; bottom row: blue, white.
    const std::vector<std::uint8_t> bmp = {
        'B', 'M', 70,  0,   0,   0, 0, 0, 0, 0, 54, 0, 0, 0,                     // file header
        40,  0,   0,   0,   2,   0, 0, 0, 2, 0, 0,  0, 1, 0, 24, 0, 0, 0, 0, 0,  // info header ...
        16,  0,   0,   0,   0,   0, 0, 0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0, 0, 255,
        0,   0,   255, 255, 255, 0, 0,     // bottom row (BGR): blue, white, padding
        0,   0,   255, 0,   255, 0, 0, 0,  // top row: red, green, padding
    };
    const ferry::image img = ferry::ops::decode_image(std::as_bytes(std::span(bmp)));
    const ferry::image flipped = ferry::ops::horizontal_flip(img);
    const ferry::tensor batch = ferry::ops::collate(std::vector<ferry::image>{img, flipped});
    const bool ok = img.width() == 2 && img.height() == 2 && img.at(0, 0, 0) == 255 &&
                    img.at(1, 0, 1) == 255 && img.at(0, 1, 2) == 255 && img.at(1, 1, 0) == 255 &&
                    flipped.at(1, 0, 0) == 255 &&
                    batch.shape() == std::vector<std::int64_t>{2, 2, 2, 3};
    if (!ok) {
        std::fprintf(stderr, "package test (image): FAILED: decoded pixels or batch shape\n");
        return 1;
    }
    std::puts("package test (image): ok");
    return 0;
}
