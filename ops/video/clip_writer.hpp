// SPDX-License-Identifier: Apache-2.0
/// \file
/// The clip `decode_video` fills: its buffer, allocated at the first frame's size (or the resize
/// target) within `max_bytes`, and each decoded frame scaled and converted by swscale straight
/// into the slots that show it. Internal to ops/video/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ffmpeg.hpp"

namespace ferry::ops::av {

class clip_writer {
  public:
    /// `source` names the input in errors; both must outlive the writer.
    clip_writer(const video_decode_options& opt, const std::string& source)
        : opt_(opt), source_(source) {}

    /// Writes `f`, the decode of frame `frame`, into every slot of `slots` that shows it (the
    /// first through swscale, repeats by copy), allocating the clip of `slots.size()` frames at
    /// the first call. Returns the first such slot. A frame over `max_pixels`, a clip over
    /// `max_bytes` and a format swscale cannot convert throw.
    std::size_t write(const AVFrame* f, const std::vector<std::int64_t>& slots, std::int64_t frame);

    /// Refuses, before any frame is decoded, a clip of `frames` frames that cannot fit
    /// `max_bytes` at the resize target, else at `width` x `height` (the stream's declared size;
    /// 1 x 1 where it declares none). The same error `write` gives at the first frame.
    void check_size(std::uint64_t frames, int width, int height) const;

    [[nodiscard]] video_clip& clip() noexcept { return clip_; }
    /// Back to no clip and no scaler, for a decode that starts over.
    void reset() {
        clip_ = video_clip();
        sws_.reset();
    }

  private:
    void allocate(const AVFrame* f, std::size_t frames);
    /// `frames` frames of `w` x `h` at the output format, in bytes; over `max_bytes` throws.
    void fit(std::uint64_t frames, int w, int h) const;
    void prepare_scaler(const AVFrame* f);

    const video_decode_options& opt_;
    const std::string& source_;
    video_clip clip_;
    sws_ptr sws_;
    int src_width_ = 0;
    int src_height_ = 0;
    int src_format_ = -1;
    int colour_ = -1;  ///< colorspace * 2 + full range, as last set on the scaler
};

}  // namespace ferry::ops::av
