// SPDX-License-Identifier: Apache-2.0
/// \file
/// The `ferry::video_clip` value type.
#include <type_traits>

#include "ferry/error.hpp"
#include "ferry/video.hpp"

namespace ferry {

// --- video_clip ----------------------------------------------------------------------------------

video_clip::video_clip(int frames, int width, int height, frame_format format)
    : frames_(frames), width_(width), height_(height), format_(format) {
    if (frames <= 0 || width <= 0 || height <= 0) {
        throw invalid_argument("video_clip: " + std::to_string(frames) + " frames of " +
                               std::to_string(width) + "x" + std::to_string(height) +
                               " is not a positive size");
    }
    if (format == frame_format::rgba) {  // images' only (ferry/pixels.hpp)
        throw invalid_argument("video_clip: format rgba is not one of video's (rgb, bgr, gray)");
    }
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(frame_bytes(), static_cast<std::size_t>(frames), &bytes)) {
        throw invalid_argument("video_clip: size overflows");
    }
    buf_ = detail::owned_buffer<scale_slack>(bytes);
}

// Moves stay noexcept (std::vector<video_clip> moves, rather than copies, when it grows).
static_assert(std::is_nothrow_move_constructible_v<video_clip> &&
              std::is_nothrow_move_assignable_v<video_clip>);

buffer video_clip::release() noexcept {
    frames_ = width_ = height_ = clips_ = 0;
    indices_.clear();
    timestamps_.clear();
    return buf_.release();
}

void video_clip::set_frame_info(std::vector<std::int64_t> indices, std::vector<double> timestamps,
                                double frame_rate) {
    indices_ = std::move(indices);
    timestamps_ = std::move(timestamps);
    frame_rate_ = frame_rate;
}

void video_clip::set_batch(int clips) {
    if (clips <= 0 || frames_ % clips != 0) {
        throw invalid_argument("video_clip::set_batch: " + std::to_string(frames_) +
                               " frames are not " + std::to_string(clips) +
                               " clips of equal length");
    }
    clips_ = clips;
}

tensor video_clip::to_tensor() && {
    if (empty()) throw invalid_argument("video_clip::to_tensor: the clip is empty");
    std::vector<std::int64_t> shape{frames_, height_, width_, channels()};
    if (batch()) shape = {clips(), clip_frames(), height_, width_, channels()};
    return tensor(release(), dtype::u8, std::move(shape));
}

tensor video_clip::to_tensor() const& {
    return video_clip(*this).to_tensor();
}

}  // namespace ferry
