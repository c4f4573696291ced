// SPDX-License-Identifier: Apache-2.0
/// \file
/// The video ops' keywords as ferry::video's options, and the clip as the value the ops give.
#include "video_options.hpp"

#include <pybind11/pybind11.h>

#include <cmath>
#include <cstring>

#include "convert.hpp"
#include "ferry/error.hpp"

namespace ferry::python {
namespace {

[[noreturn]] void bad_keyword(std::string_view op, std::string_view keyword,
                              const std::string& what) {
    throw ferry::invalid_argument(std::string(op) + "(" + std::string(keyword) + "): " + what);
}

ferry::frame_size frame_size_of(const video_size& s, std::string_view op) {
    const auto [h, w] = std::holds_alternative<int>(s)
                            ? std::pair<int, int>{std::get<int>(s), std::get<int>(s)}
                            : std::get<std::pair<int, int>>(s);
    if (h <= 0 || w <= 0) {
        bad_keyword(op, "resize=...",
                    "sizes are positive (height, width), got (" + std::to_string(h) + ", " +
                        std::to_string(w) + ")");
    }
    return {w, h};
}

ferry::frame_format video_format_of(const std::string& name, std::string_view op) {
    if (name == "rgb") return ferry::frame_format::rgb;
    if (name == "bgr") return ferry::frame_format::bgr;
    if (name == "gray") return ferry::frame_format::gray;
    bad_keyword(op, "format=...", "format must be 'rgb', 'bgr' or 'gray', got '" + name + "'");
}

ferry::scale_filter scale_filter_of(const std::string& name, std::string_view op) {
    static const std::pair<const char*, ferry::scale_filter> table[] = {
        {"nearest", ferry::scale_filter::nearest},
        {"bilinear", ferry::scale_filter::bilinear},
        {"bicubic", ferry::scale_filter::bicubic},
        {"area", ferry::scale_filter::area},
        {"lanczos", ferry::scale_filter::lanczos}};
    for (const auto& [n, f] : table) {
        if (name == n) return f;
    }
    bad_keyword(
        op, "filter=...",
        "filter must be 'nearest', 'bilinear', 'bicubic', 'area' or 'lanczos', got '" + name + "'");
}

/// How Python writes the float `x`: "0.2".
std::string float_text(double x) {
    return py::repr(py::float_(x)).cast<std::string>();
}

/// `values`, one per frame of `clip`, as a tensor of `type` shaped as its frames: `[frames]`,
/// or `[clips, frames]` for a batch.
template <class T>
ferry::tensor per_frame(const std::vector<T>& values, ferry::dtype type,
                        const ferry::video_clip& clip) {
    std::vector<std::int64_t> shape{static_cast<std::int64_t>(values.size())};
    if (clip.batch()) shape = {clip.clips(), clip.clip_frames()};
    ferry::tensor t(type, std::move(shape));
    std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
    return t;
}

}  // namespace

ferry::demux_options demux_options_of(const demux_keywords& k, std::string_view op,
                                      std::vector<std::string>& args) {
    ferry::demux_options o;
    if (!(k.start >= 0.0) || !std::isfinite(k.start) ||
        (k.end && !(*k.end > k.start && std::isfinite(*k.end)))) {
        bad_keyword(op, "start=..., end=...",
                    "the window is start >= 0 seconds up to a finite end after it (None: the "
                    "stream's end), got start " +
                        std::to_string(k.start) + (k.end ? ", end " + std::to_string(*k.end) : ""));
    }
    o.start = k.start;
    if (k.start != 0.0) args.push_back("start=" + float_text(k.start));
    o.end = k.end;
    if (k.end) args.push_back("end=" + float_text(*k.end));
    o.stream = k.stream;
    if (k.stream < -1) {
        bad_keyword(op, "stream=...",
                    "stream is a stream's index, or -1 (FFmpeg's best video stream), got " +
                        std::to_string(k.stream));
    }
    if (k.stream != -1) args.push_back("stream=" + std::to_string(k.stream));
    if (k.max_frames < 0) {
        bad_keyword(op, "max_frames=...",
                    "max_frames is 0 (no limit, or from the selection) or more, got " +
                        std::to_string(k.max_frames));
    }
    o.max_frames = k.max_frames;
    if (k.max_frames != 0) args.push_back("max_frames=" + std::to_string(k.max_frames));
    if (!(k.timeout > 0.0) || !std::isfinite(k.timeout)) {
        bad_keyword(op, "timeout=...",
                    "timeout is a positive number of seconds, got " + std::to_string(k.timeout));
    }
    o.timeout = ceil_millis(k.timeout);
    o.max_pixels = k.max_pixels;
    o.strict = k.strict;
    o.snap_to_keyframe = k.snap_to_keyframe;
    if (k.snap_to_keyframe) args.push_back("snap_to_keyframe=True");
    return o;
}

ferry::video_decode_options decode_options_of(const decode_keywords& k, std::string_view op,
                                              std::vector<std::string>& args) {
    ferry::video_decode_options o;
    o.select = k.select;
    if (k.select.mode() != ferry::frame_selection::kind::all) {
        args.push_back("select=" + selection_text(k.select));
    }
    o.format = video_format_of(k.format, op);
    if (k.format != "rgb") args.push_back("format='" + k.format + "'");
    if (k.resize) {
        o.resize = frame_size_of(*k.resize, op);
        args.push_back("resize=(" + std::to_string(o.resize.height) + ", " +
                       std::to_string(o.resize.width) + ")");
    }
    o.filter = scale_filter_of(k.filter, op);
    if (k.filter != "bilinear") args.push_back("filter='" + k.filter + "'");
    if (k.threads < 0 || k.threads > 64) {
        bad_keyword(
            op, "threads=...",
            "decoder threads are 0 (ferry chooses) to 64, got " + std::to_string(k.threads));
    }
    o.threads = k.threads;
    if (k.threads != 0) args.push_back("threads=" + std::to_string(k.threads));
    o.max_pixels = k.max_pixels;
    o.max_bytes = k.max_bytes;
    o.strict = k.strict;
    if (k.strict) args.push_back("strict=True");
    o.skip_nonref = k.skip_nonref;
    if (!k.skip_nonref) args.push_back("skip_nonref=False");
    return o;
}

std::string selection_text(const ferry::frame_selection& s) {
    const auto list = [&] {
        std::string out = "[";
        for (std::size_t i = 0; i < s.frames().size(); ++i) {
            out += (i ? ", " : "") + std::to_string(s.frames()[i]);
        }
        return out + "]";
    };
    switch (s.mode()) {
        case ferry::frame_selection::kind::all:
            return "FrameSelection.all()";
        case ferry::frame_selection::kind::uniform:
            return "FrameSelection.uniform(" + std::to_string(s.count()) + ")";
        case ferry::frame_selection::kind::clip:
            return "FrameSelection.clip(" + std::to_string(s.count()) + ", " +
                   std::to_string(s.stride()) + ")";
        case ferry::frame_selection::kind::indices:
            return "FrameSelection.indices(" + list() + ")";
        case ferry::frame_selection::kind::clips:
            return "FrameSelection.clips(" + std::to_string(s.clips()) + ", " +
                   std::to_string(s.count()) + ", " + std::to_string(s.stride()) + ")";
        case ferry::frame_selection::kind::clips_at:
            return "FrameSelection.clips_at(" + list() + ", " + std::to_string(s.count()) + ", " +
                   std::to_string(s.stride()) + ")";
    }
    return "FrameSelection(?)";
}

std::string call_text(std::string_view op, const std::vector<std::string>& args) {
    std::string name = std::string(op) + "(";
    for (std::size_t i = 0; i < args.size(); ++i) name += (i ? ", " : "") + args[i];
    return name + ")";
}

value clip_value(ferry::video_clip&& c, clip_extras with) {
    if (!with.indices && !with.times) return value(std::move(c).to_tensor());
    ferry::tensor indices = per_frame(c.indices(), ferry::dtype::i64, c);
    ferry::tensor times = per_frame(c.timestamps(), ferry::dtype::f64, c);
    ferry::tensor clip = std::move(c).to_tensor();
    if (with.indices && with.times) {
        return value(value_tuple{
            {value(std::move(clip)), value(std::move(indices)), value(std::move(times))}});
    }
    return value(value_tuple{
        {value(std::move(clip)), value(with.indices ? std::move(indices) : std::move(times))}});
}

}  // namespace ferry::python
