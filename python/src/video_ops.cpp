// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.video`: `FrameSelection` (ferry::frame_selection) and the `load_video(...)` factory, a
/// native op from a path or bytes to a ferry.Tensor clip (frames x height x width x channels, or
/// clips x frames x ... for `clips`).
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "convert.hpp"
#include "ferry/error.hpp"
#include "ferry/video.hpp"
#include "io_ops.hpp"
#include "media_item.hpp"

namespace ferry::python {
namespace {

/// A frame size as Python gives it: an int (square) or (height, width), as the image ops take it.
using video_size = std::variant<int, std::pair<int, int>>;

ferry::frame_size frame_size_of(const video_size& s) {
    const auto [h, w] = std::holds_alternative<int>(s)
                            ? std::pair<int, int>{std::get<int>(s), std::get<int>(s)}
                            : std::get<std::pair<int, int>>(s);
    if (h <= 0 || w <= 0) {
        throw ferry::invalid_argument(
            "load_video(resize=...): sizes are positive (height, width), got (" +
            std::to_string(h) + ", " + std::to_string(w) + ")");
    }
    return {w, h};
}

ferry::frame_format video_format_of(const std::string& name) {
    if (name == "rgb") return ferry::frame_format::rgb;
    if (name == "bgr") return ferry::frame_format::bgr;
    if (name == "gray") return ferry::frame_format::gray;
    throw ferry::invalid_argument(
        "load_video(format=...): format must be 'rgb', 'bgr' or "
        "'gray', got '" +
        name + "'");
}

ferry::scale_filter scale_filter_of(const std::string& name) {
    static const std::pair<const char*, ferry::scale_filter> table[] = {
        {"nearest", ferry::scale_filter::nearest},
        {"bilinear", ferry::scale_filter::bilinear},
        {"bicubic", ferry::scale_filter::bicubic},
        {"area", ferry::scale_filter::area},
        {"lanczos", ferry::scale_filter::lanczos}};
    for (const auto& [n, f] : table) {
        if (name == n) return f;
    }
    throw ferry::invalid_argument(
        "load_video(filter=...): filter must be 'nearest', 'bilinear', 'bicubic', 'area' or "
        "'lanczos', got '" +
        name + "'");
}

/// Seconds as Python gives them, as the milliseconds `demux_options::timeout` takes.
std::chrono::milliseconds video_timeout_of(double seconds) {
    if (!(seconds > 0.0) || !std::isfinite(seconds)) {
        throw ferry::invalid_argument(
            "load_video(timeout=...): timeout is a positive number of seconds, got " +
            std::to_string(seconds));
    }
    return ceil_millis(seconds);
}

std::string selection_text(const ferry::frame_selection& s) {
    switch (s.mode()) {
        case ferry::frame_selection::kind::all:
            return "FrameSelection.all()";
        case ferry::frame_selection::kind::uniform:
            return "FrameSelection.uniform(" + std::to_string(s.count()) + ")";
        case ferry::frame_selection::kind::clip:
            return "FrameSelection.clip(" + std::to_string(s.count()) + ", " +
                   std::to_string(s.stride()) + ")";
        case ferry::frame_selection::kind::indices: {
            std::string out = "FrameSelection.indices([";
            for (std::size_t i = 0; i < s.frames().size(); ++i) {
                out += (i ? ", " : "") + std::to_string(s.frames()[i]);
            }
            return out + "])";
        }
        case ferry::frame_selection::kind::clips:
            return "FrameSelection.clips(" + std::to_string(s.clips()) + ", " +
                   std::to_string(s.count()) + ", " + std::to_string(s.stride()) + ")";
        case ferry::frame_selection::kind::clips_at: {
            std::string out = "FrameSelection.clips_at([";
            for (std::size_t i = 0; i < s.frames().size(); ++i) {
                out += (i ? ", " : "") + std::to_string(s.frames()[i]);
            }
            return out + "], " + std::to_string(s.count()) + ", " + std::to_string(s.stride()) +
                   ")";
        }
    }
    return "FrameSelection(?)";
}

/// The clip `load_video` makes of `v`: a path (a str, or a Python str or os.PathLike) is read by
/// FFmpeg from the file, bytes (ferry.Bytes, or any bytes-like object) from memory.
/// What the op gives besides the clip.
struct clip_extras {
    bool indices = false;  ///< each frame's index in the window, int64
    bool times = false;    ///< each frame's presentation time in seconds, float64
};

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

/// The clip as a tensor; with `extras`, the tuple (clip, [indices], [times]).
value load_clip(value&& v, const ferry::video_options& options, clip_extras with) {
    media_item item = take_media_item(std::move(v), "load_video");
    ferry::video_options scratch;
    const ferry::video_options& o =
        item_options(item, options, scratch, [](auto& copy, double start, auto end) {
            copy.demux.start = start;  // the item's window replaces the op's
            copy.demux.end = end;
        });
    ferry::video_clip c =
        std::visit([&](const auto& in) { return ferry::ops::load_video(in, o); }, item.source);
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

}  // namespace

void bind_video_ops(py::module_& video) {
    py::class_<ferry::frame_selection>(video, "FrameSelection", R"doc(
Which frames load_video returns (ferry::frame_selection). Frame indices count the frames of the
demuxed window that decode, in presentation order (0: the first frame at or after start): the
frames the ffmpeg CLI writes with -vsync passthrough. A selection that needs more frames than
decode is a ferry.DecodeError.

    FrameSelection.all()                 # every frame
    FrameSelection.indices([0, 10, 20])  # these frames, in this order
    FrameSelection.uniform(8)            # 8 frames spread over the clip, first and last
    FrameSelection.clip(8, 4)            # frames 0, 4, 8, ..., 28 of the window)doc")
        .def_static("all", &ferry::frame_selection::all, "Every frame of the window.")
        .def_static("indices", &ferry::frame_selection::indices, py::arg("frames"),
                    "The given frames, in the given order (repeats allowed).")
        .def_static("uniform", &ferry::frame_selection::uniform, py::arg("count"),
                    "count frames at round(i * (T - 1) / (count - 1)) of a window of T frames "
                    "(np.linspace(0, T - 1, count).round()).")
        .def_static("clip", &ferry::frame_selection::clip, py::arg("count"), py::arg("stride") = 1,
                    "count frames stride apart from the window's first frame; with "
                    "load_video(start=t): count frames at stride from t, reading only the packets "
                    "they need.")
        .def_static(
            "clips",
            [](int count, int frames, int stride) {
                return ferry::frame_selection::clips(count, frames, stride);
            },
            py::arg("count"), py::arg("frames"), py::arg("stride") = 1,
            "count clips of frames frames stride apart, decoded in one pass and returned as one "
            "tensor count x frames x height x width x channels, in the order drawn: each start "
            "drawn uniformly from [0, T - (frames - 1) * stride - 1] (T: the window's frames), "
            "with replacement, from the item's numbers (ferry.item_rng(): the same clips for the "
            "same item and epoch, after a resume too). Each clip is the one clip(frames, stride) "
            "gives from its start.")
        .def_static("clips_at", &ferry::frame_selection::clips_at, py::arg("starts"),
                    py::arg("frames"), py::arg("stride") = 1,
                    "clips(...) from the given window frames, in the given order.")
        .def("__repr__", &selection_text);

    video.def(
        "load_video",
        [](const ferry::frame_selection& select, const std::string& format,
           const std::optional<video_size>& resize, const std::string& filter, double start,
           const std::optional<double>& end, int stream, std::int64_t max_frames, double timeout,
           int threads, std::uint64_t max_pixels, std::uint64_t max_bytes, bool strict,
           bool skip_nonref, bool snap_to_keyframe, bool with_indices, bool with_times) {
            ferry::video_options o;
            std::vector<std::string> args;
            o.decode.select = select;
            if (select.mode() != ferry::frame_selection::kind::all) {
                args.push_back("select=" + selection_text(select));
            }
            o.decode.format = video_format_of(format);
            if (format != "rgb") args.push_back("format='" + format + "'");
            if (resize) {
                o.decode.resize = frame_size_of(*resize);
                args.push_back("resize=(" + std::to_string(o.decode.resize.height) + ", " +
                               std::to_string(o.decode.resize.width) + ")");
            }
            o.decode.filter = scale_filter_of(filter);
            if (filter != "bilinear") args.push_back("filter='" + filter + "'");
            if (!(start >= 0.0) || !std::isfinite(start) ||
                (end && !(*end > start && std::isfinite(*end)))) {
                throw ferry::invalid_argument(
                    "load_video(start=..., end=...): the window is start >= 0 seconds up to a "
                    "finite end after it (None: the stream's end), got start " +
                    std::to_string(start) + (end ? ", end " + std::to_string(*end) : ""));
            }
            o.demux.start = start;
            if (start != 0.0) {
                args.push_back("start=" + py::repr(py::float_(start)).cast<std::string>());
            }
            o.demux.end = end;
            if (end) args.push_back("end=" + py::repr(py::float_(*end)).cast<std::string>());
            o.demux.stream = stream;
            if (stream != -1) args.push_back("stream=" + std::to_string(stream));
            if (max_frames < 0) {
                throw ferry::invalid_argument(
                    "load_video(max_frames=...): max_frames is 0 (from "
                    "the selection) or more, got " +
                    std::to_string(max_frames));
            }
            o.demux.max_frames = max_frames;
            o.demux.timeout = video_timeout_of(timeout);
            if (threads < 0 || threads > 64) {
                throw ferry::invalid_argument(
                    "load_video(threads=...): decoder threads are 0 (ferry chooses) to 64, "
                    "got " +
                    std::to_string(threads));
            }
            o.decode.threads = threads;
            if (threads != 0) args.push_back("threads=" + std::to_string(threads));
            o.demux.max_pixels = max_pixels;
            o.decode.max_pixels = max_pixels;
            o.decode.max_bytes = max_bytes;
            o.demux.strict = strict;
            o.decode.strict = strict;
            if (strict) args.push_back("strict=True");
            o.decode.skip_nonref = skip_nonref;
            if (!skip_nonref) args.push_back("skip_nonref=False");
            o.demux.snap_to_keyframe = snap_to_keyframe;
            if (snap_to_keyframe) args.push_back("snap_to_keyframe=True");
            if (with_indices) args.push_back("with_indices=True");
            if (with_times) args.push_back("with_times=True");
            std::string name = "load_video(";
            for (std::size_t i = 0; i < args.size(); ++i) name += (i ? ", " : "") + args[i];
            name += ")";
            // Random clips draw their starts from the item of the stage's call.
            const bool wants_item = select.mode() == ferry::frame_selection::kind::clips;
            return py::cast(py_op{std::make_shared<const native_op>(
                native_op{std::move(name),
                          [o, with = clip_extras{with_indices, with_times}](value&& v) {
                              return load_clip(std::move(v), o, with);
                          },
                          wants_item})});
        },
        py::kw_only(), py::arg("select") = ferry::frame_selection::all(), py::arg("format") = "rgb",
        py::arg("resize") = py::none(), py::arg("filter") = "bilinear", py::arg("start") = 0.0,
        py::arg("end") = py::none(), py::arg("stream") = -1, py::arg("max_frames") = 0,
        py::arg("timeout") = 10.0, py::arg("threads") = 0, py::arg("max_pixels") = 64'000'000ULL,
        py::arg("max_bytes") = 4ULL << 30, py::arg("strict") = false, py::arg("skip_nonref") = true,
        py::arg("snap_to_keyframe") = false, py::arg("with_indices") = false,
        py::arg("with_times") = false,
        R"doc(
A native op: ferry::ops::load_video on a path (str or os.PathLike: read from the file) or bytes
(ferry.Bytes or a bytes-like object: read from memory), or a tuple (source, start, end) in
seconds (end None: to the stream's end): the item's own window, which replaces the op's start
and end; giving the clip as a ferry.Tensor of uint8, frames x height x width x channels (clips x
frames x height x width x channels for FrameSelection.clips and clips_at; torch.from_dlpack(x)
shares it). The keywords are
ferry::video_options' fields, flat: select (a FrameSelection; all frames by default), format
('rgb', 'bgr', 'gray'), resize ((height, width) or an int: frames scaled by swscale inside the
decode step), filter (swscale's 'nearest', 'bilinear', 'bicubic', 'area', 'lanczos'), start and
end (the window in seconds; end None: to the stream's end), stream (-1: FFmpeg's best video
stream), max_frames (0: what the selection needs), timeout (seconds a read may deliver nothing),
threads (decoder threads; 0: ferry chooses, the pipeline's threads over the stage's
concurrency, so a stage with fewer calls than threads decodes each on several), max_pixels (both the declared and the decoded frame size), max_bytes
(the clip's size), strict (a cut or damaged file is a ferry.DecodeError instead of the frames
that decode), skip_nonref (frames no selected frame needs are not decoded; False decodes every
frame from the keyframe: the same pixels, slower), snap_to_keyframe (the window's start, and each start of
FrameSelection.clips and clips_at, moves back to the keyframe at or before it, so no frame before
a clip is decoded: faster, but clips start only on keyframes — randomness traded for speed),
with_indices and with_times (the op gives the tuple (clip, [indices], [times]): each frame's index
in the window, int64, and presentation time in seconds, float64, shaped frames, or clips x frames:
where random clips fell, for labels that follow time). Errors: ferry.IOError (missing file, stalled read), ferry.DecodeError (not a
video, too few frames for the selection, over a limit), naming the file.)doc");
}

}  // namespace ferry::python
