// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the transform cases share (transforms.cpp, tensors.cpp): a photo-like test image, OpenCV
/// references, the resize sizes swept.
#pragma once

#include <opencv2/imgproc.hpp>
#include <vector>

#include "support.hpp"

// Named, not anonymous: data test cases are templates with external linkage.
namespace transforms_test {

using namespace ops_test;

/// A photo-like 97 x 61 RGB image (and the same pixels as a cv::Mat).
inline const cv::Mat& test_mat() {
    static const cv::Mat m = swap_red_blue(photo(97, 61, 3, 21));
    return m;
}
inline ferry::image test_image(ferry::pixel_format format = ferry::pixel_format::rgb) {
    if (format == ferry::pixel_format::gray) return to_image(photo(97, 61, 1, 22), format);
    if (format == ferry::pixel_format::rgba)
        return to_image(swap_red_blue(photo(97, 61, 4, 23)), format);
    return to_image(test_mat(), format);
}

inline cv::Mat cv_resize(const cv::Mat& m, int width, int height, int interp) {
    cv::Mat out;
    cv::resize(m, out, cv::Size(width, height), 0, 0, interp);
    return out;
}

inline const std::vector<ferry::image_size> resize_sizes{{48, 30}, {33, 17}, {150, 100},
                                                         {1, 1},   {97, 20}, {200, 61}};

/// An allocator that records its calls and hands out memory it owns; `released` is set when the
/// last owner of a buffer it made goes.
struct recording_allocator {
    struct state {
        int calls = 0;
        std::size_t requested = 0;
        std::byte* last = nullptr;
        std::shared_ptr<bool> released = std::make_shared<bool>(false);
    };
    std::shared_ptr<state> st = std::make_shared<state>();

    ferry::allocator get() const {
        return [st = st](std::size_t n) {
            ++st->calls;
            st->requested = n;
            auto mem = std::make_shared<std::vector<std::byte>>(n);
            st->last = mem->data();
            ferry::buffer b;
            b.data = mem->data();
            b.size = n;
            auto flag = st->released;
            b.owner = std::shared_ptr<void>(mem.get(), [mem, flag](void*) mutable {
                *flag = true;
                mem.reset();
            });
            return b;
        };
    }
};

/// True when `box` lies inside an image of `size`, with a positive area.
inline bool inside(const ferry::crop_box& box, ferry::image_size size) {
    return box.x >= 0 && box.y >= 0 && box.width > 0 && box.height > 0 &&
           box.x + box.width <= size.width && box.y + box.height <= size.height;
}

}  // namespace transforms_test
