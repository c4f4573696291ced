// SPDX-License-Identifier: Apache-2.0
/// \file
/// perf/compare's job, shared by its C++ runners (compare_runner, compare_runner_torch): the
/// batch and crop sizes, each sample's randomness, and ferry's decode -> RandomResizedCrop(224)
/// -> flip in the four ways the runners decode.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <utility>

#include "ferry/batch_slots.hpp"
#include "ferry/image.hpp"

namespace ferry_perf {

inline constexpr int compare_batch_size = 32;
inline constexpr int compare_side = 224;

/// One sample's randomness: the same for every runner (the crop box is drawn first, torchvision's
/// way, then one draw for the flip).
inline std::mt19937_64 rng_for(std::size_t index) {
    return std::mt19937_64(0x5EEDULL ^ (index * 0x9E3779B97F4A7C15ULL));
}

/// How the decode stage gets from the file to the crop.
enum class decode_mode {
    full,      ///< decode_image, then random_resized_crop
    reduced,   ///< the box from the header, a reduced-scale decode_image, crop, resize
    roi,       ///< decode_random_resized_crop: only the crop is decoded
    roi_fast,  ///< roi with the fast IDCT and plain upsampling
};

/// roi, written into the item's slot of `slots` (decode_random_resized_crop_into) and flipped
/// there: the same draws, the same pixels, no image of its own.
inline ferry::image_slot transform_into(const ferry::bytes& b, std::size_t index,
                                        ferry::interpolation interp, ferry::image_slot slot,
                                        bool fast) {
    std::mt19937_64 rng = rng_for(index);
    slot = ferry::ops::decode_random_resized_crop_into(b, std::move(slot), rng,
                                                       {.interp = interp, .fast = fast});
    if ((rng() & 1) != 0) slot = ferry::ops::horizontal_flip(std::move(slot));
    return slot;
}

/// decode -> random resized crop -> flip, as every ferry runner does it.
inline ferry::image transform(const ferry::bytes& b, std::size_t index, ferry::interpolation interp,
                              decode_mode mode) {
    constexpr int side = compare_side;
    std::mt19937_64 rng = rng_for(index);
    ferry::image img;
    ferry::crop_box box;
    if (mode == decode_mode::roi || mode == decode_mode::roi_fast) {
        img = ferry::ops::decode_random_resized_crop(
            b, side, side, rng, {.interp = interp, .fast = mode == decode_mode::roi_fast});
    } else if (mode == decode_mode::reduced) {
        // Draw the crop on the full-size geometry, then decode at the smallest scale at which
        // the crop still has at least 224x224 pixels, and scale the box to that decode.
        const ferry::image_info info = ferry::ops::probe_image(b);
        box = ferry::ops::random_resized_crop_box({info.width, info.height}, rng);
        const int need_w = (info.width * side + box.width - 1) / box.width;
        const int need_h = (info.height * side + box.height - 1) / box.height;
        img = ferry::ops::decode_image(
            b, {.reduce_to = {std::min(need_w, info.width), std::min(need_h, info.height)}});
        if (img.width() != info.width) {
            const double sx = static_cast<double>(img.width()) / info.width;
            const double sy = static_cast<double>(img.height()) / info.height;
            const int x0 = static_cast<int>(box.x * sx);
            const int y0 = static_cast<int>(box.y * sy);
            const int x1 =
                std::min(img.width(), static_cast<int>(std::ceil((box.x + box.width) * sx)));
            const int y1 =
                std::min(img.height(), static_cast<int>(std::ceil((box.y + box.height) * sy)));
            box = {x0, y0, std::max(1, x1 - x0), std::max(1, y1 - y0)};
        }
        img = ferry::ops::resize(ferry::ops::crop(img, box), side, side, interp);
    } else {
        img = ferry::ops::decode_image(b);
        img = ferry::ops::random_resized_crop(img, side, side, rng, {.interp = interp});
    }
    if ((rng() & 1) != 0) img = ferry::ops::horizontal_flip(std::move(img));
    return img;
}

/// User + system CPU seconds of this process so far.
inline double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace ferry_perf
