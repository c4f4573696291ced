// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.video`: `FrameSelection` (ferry::frame_selection) and the `load_video(...)` factory, a
/// native op from a path or bytes to a ferry.Tensor clip (frames x height x width x channels, or
/// clips x frames x ... for `clips`).
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ferry/video.hpp"
#include "io_ops.hpp"
#include "media_item.hpp"
#include "video_options.hpp"

namespace ferry::python {
namespace {

/// The clip `load_video` makes of `v` (a path, bytes, or a windowed tuple: `media_item.hpp`).
value load_clip(value&& v, const ferry::video_options& options, clip_extras with) {
    return clip_value(call_on_media_item(
                          std::move(v), "load_video", options,
                          [](ferry::video_options& o, double start, std::optional<double> end) {
                              o.demux.start = start;
                              o.demux.end = end;
                          },
                          [](const auto& in, const ferry::video_options& o) {
                              return ferry::ops::load_video(in, o);
                          }),
                      with);
}

}  // namespace

void bind_video_ops(py::module_& video) {
    py::class_<ferry::frame_selection>(video, "FrameSelection", R"doc(
Which frames load_video and decode_video return (ferry::frame_selection). Frame indices count
the frames of the demuxed window that decode, in presentation order (0: the first frame at or
after start): the frames the ffmpeg CLI writes with -vsync passthrough. A selection that needs
more frames than decode is a ferry.DecodeError.

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
        .def_property_readonly(
            "frames_needed", &ferry::frame_selection::frames_needed,
            "The frames needed from the window's start, 0 for every frame (all, uniform, clips): "
            "what load_video tells the demuxer so that it stops reading at the last one. Give it "
            "to demux_video(max_frames=...), which does not see decode_video's selection.")
        .def("__repr__", &selection_text);

    video.def(
        "load_video",
        [](const ferry::frame_selection& select, const std::string& format,
           const std::optional<video_size>& resize, const std::string& filter, double start,
           const std::optional<double>& end, int stream, std::int64_t max_frames, double timeout,
           int threads, std::uint64_t max_pixels, std::uint64_t max_bytes, bool strict,
           bool skip_nonref, bool snap_to_keyframe, bool with_indices, bool with_times) {
            std::vector<std::string> args;
            ferry::video_options o;
            o.decode = decode_options_of({select, format, resize, filter, threads, max_pixels,
                                          max_bytes, strict, skip_nonref},
                                         "load_video", args);
            o.demux = demux_options_of(
                {start, end, stream, max_frames, timeout, max_pixels, strict, snap_to_keyframe},
                "load_video", args);
            if (with_indices) args.push_back("with_indices=True");
            if (with_times) args.push_back("with_times=True");
            // Random clips draw their starts from the item of the stage's call.
            const bool wants_item = select.mode() == ferry::frame_selection::kind::clips;
            return py::cast(py_op{std::make_shared<const native_op>(
                native_op{call_text("load_video", args),
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
