// SPDX-License-Identifier: Apache-2.0
/// \file
/// The keywords of `ferry.video`'s ops as ferry::video's options: what `load_video`,
/// `demux_video` and `decode_video` share, checked once, each error naming the op it was given
/// to, and the clip as the tensor (or tuple) the ops give.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ferry/video.hpp"
#include "value.hpp"

namespace ferry::python {

/// A frame size as Python gives it: an int (square) or (height, width), as the image ops take it.
using video_size = std::variant<int, std::pair<int, int>>;

/// `demux_options`' fields as Python gives them (seconds as floats).
struct demux_keywords {
    double start = 0.0;
    std::optional<double> end;
    int stream = -1;
    std::int64_t max_frames = 0;
    double timeout = 10.0;
    std::uint64_t max_pixels = 64'000'000;
    bool strict = false;
    bool snap_to_keyframe = false;
};

/// `video_decode_options`' fields as Python gives them (names for the enums).
struct decode_keywords {
    ferry::frame_selection select = ferry::frame_selection::all();
    std::string format = "rgb";
    std::optional<video_size> resize;
    std::string filter = "bilinear";
    int threads = 0;
    std::uint64_t max_pixels = 64'000'000;
    std::uint64_t max_bytes = 4ULL << 30;
    bool strict = false;
    bool skip_nonref = true;
};

/// `k` as `demux_options`, checked (`ferry::invalid_argument` naming `op` and the keyword:
/// "demux_video(start=..., end=...): the window is ..."); appends to `args` each keyword that
/// differs from its default as Python writes it ("start=0.2"), but `strict` (its caller's).
[[nodiscard]] ferry::demux_options demux_options_of(const demux_keywords& k, std::string_view op,
                                                    std::vector<std::string>& args);

/// `k` as `video_decode_options`, checked as `demux_options_of` checks; `args` gets
/// "select=FrameSelection.clip(4, 3)", "resize=(112, 112)", ..., "strict=True".
[[nodiscard]] ferry::video_decode_options decode_options_of(const decode_keywords& k,
                                                            std::string_view op,
                                                            std::vector<std::string>& args);

/// How Python writes `s`: "FrameSelection.clip(8, 4)".
[[nodiscard]] std::string selection_text(const ferry::frame_selection& s);

/// "op(a, b)": an op's name from its keywords.
[[nodiscard]] std::string call_text(std::string_view op, const std::vector<std::string>& args);

/// What a video op gives besides the clip.
struct clip_extras {
    bool indices = false;  ///< each frame's index in the window, int64
    bool times = false;    ///< each frame's presentation time in seconds, float64
};

/// `c` as the value a video op gives: its tensor, or with `extras` the tuple (clip, [indices],
/// [times]), each shaped as the clip's frames (`[frames]`, or `[clips, frames]` for a batch).
[[nodiscard]] value clip_value(ferry::video_clip&& c, clip_extras with);

}  // namespace ferry::python
