// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for `probe_image` and `decode_image`: any input must give an image or a
/// `ferry::decode_error` (any other exception escapes and counts as a crash), never a crash,
/// a leak or an out-of-bounds access. The last byte also picks the options (the whole input is
/// decoded, so the seed files stay valid images), so the scaled-decode, gray, RGBA and lenient
/// paths are fuzzed too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "ferry/error.hpp"
#include "ferry/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::uint8_t selector = data[size - 1];
    const auto bytes = std::as_bytes(std::span<const std::uint8_t>(data, size));
    ferry::decode_options options;
    options.max_pixels = 1U << 22;  // keep each input's work small
    options.format = static_cast<ferry::pixel_format>(selector % 4);
    if ((selector & 0x04) != 0) options.resize = {7, 5};
    if ((selector & 0x08) != 0) options.reduce_to = {3, 3};
    options.strict = (selector & 0x10) == 0;
    options.apply_orientation = (selector & 0x20) == 0;
    try {
        (void)ferry::ops::probe_image(bytes);
    } catch (const ferry::decode_error&) {
    }
    try {
        const ferry::image img = ferry::ops::decode_image(bytes, options);
        // A decoded image is whole: touch every byte (ASan checks the size claims).
        unsigned sum = 0;
        for (const std::uint8_t v : img.data()) sum += v;
        if (img.data().size() != static_cast<std::size_t>(img.width()) *
                                     static_cast<std::size_t>(img.height()) *
                                     static_cast<std::size_t>(img.channels())) {
            std::abort();
        }
        (void)sum;
    } catch (const ferry::decode_error&) {
    }
    return 0;
}
