// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for `probe_image` and `decode_image`: any input must give an image or a
/// `ferry::decode_error` (any other exception escapes and counts as a crash), never a crash,
/// a leak or an out-of-bounds access. The last byte also picks the options (the whole input is
/// decoded, so the seed files stay valid images), so the scaled-decode, gray, RGBA and lenient
/// paths are fuzzed too, and region decoding (`decode_options::crop`, a box inside the image as
/// its header tells it) and `decode_random_resized_crop`; the byte before it picks `fast`,
/// `scale_slack` and `check_rest`.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <span>
#include <utility>

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
    // The byte before picks the speed options: fast IDCT, a scale slack, the full check below a
    // region.
    const std::uint8_t speed = size >= 2 ? data[size - 2] : 0;
    options.fast = (speed & 0x01) != 0;
    options.scale_slack = (speed & 0x02) != 0 ? 0.3 : 0.0;
    options.check_rest = (speed & 0x04) != 0;
    std::optional<ferry::image_info> info;
    try {
        info = ferry::ops::probe_image(bytes);
    } catch (const ferry::decode_error&) {
    }
    // Region decoding (the libjpeg path for JPEG): a box inside the image as the header tells it.
    if ((selector & 0x40) != 0 && info && info->width > 0 && info->height > 0) {
        int w = info->width;
        int h = info->height;
        if (options.apply_orientation && info->orientation >= 5) std::swap(w, h);
        options.crop = ferry::crop_box{w / 3, h / 4, std::max(1, w / 2), std::max(1, h / 2)};
    }
    if ((selector & 0x80) != 0) {
        try {
            std::mt19937_64 rng(selector);
            const ferry::image img =
                ferry::ops::decode_random_resized_crop(bytes, 9, 7, rng,
                                                       {.max_pixels = options.max_pixels,
                                                        .strict = options.strict,
                                                        .scale_slack = options.scale_slack,
                                                        .fast = options.fast,
                                                        .check_rest = options.check_rest});
            if (img.width() != 9 || img.height() != 7) std::abort();
        } catch (const ferry::decode_error&) {
        }
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
