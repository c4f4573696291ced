// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.video`'s two steps apart: `Packets` (ferry::packets), the `demux_video(...)` factory (a
/// native op from a path or bytes to the packets of a window) and the `decode_video(...)` factory
/// (a native op from packets to the clip), so that a pipeline gives reading and decoding their
/// own stages, concurrency and executors.
#include <pybind11/stl.h>

#include <cstdint>
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
#include "video_options.hpp"

namespace ferry::python {
namespace {

/// The packets `demux_video` reads of `v` (a path, bytes, or a windowed tuple).
value demux(value&& v, const ferry::demux_options& options) {
    return value(call_on_media_item(
        std::move(v), "demux_video", options,
        [](ferry::demux_options& o, double start, std::optional<double> end) {
            o.start = start;
            o.end = end;
        },
        [](const auto& in, const ferry::demux_options& o) {
            return ferry::ops::demux_video(in, o);
        }));
}

/// The packets `v` holds: native ones, or a `Packets` object a Python stage passed on (read with
/// the GIL). Else a `ferry::invalid_argument` naming what it holds.
ferry::packets take_packets(value&& v) {
    if (v.holds<ferry::packets>()) return std::move(v.as<ferry::packets>());
    if (v.holds<py_ref>()) {
        gil_hold gil;
        py::handle o(v.as<py_ref>().get());
        if (py::isinstance<ferry::packets>(o)) return o.cast<ferry::packets>();
    }
    throw ferry::invalid_argument(
        "decode_video expects ferry.video.Packets (what demux_video gives), got " + kind_of(v));
}

std::string packets_text(const ferry::packets& p) {
    std::string out = "<ferry.video.Packets " + p.codec() + " " + std::to_string(p.width()) + "x" +
                      std::to_string(p.height()) + ", " + std::to_string(p.frames()) +
                      " frames in " + std::to_string(p.size()) + " packets (" +
                      std::to_string(p.bytes()) + " bytes) of " + p.source();
    if (p.truncated()) out += ", truncated: " + p.truncation();
    return out + ">";
}

}  // namespace

void bind_video_steps(py::module_& video) {
    py::class_<ferry::packets>(video, "Packets", R"doc(
The compressed packets of one video stream's window (ferry::packets), what demux_video gives and
decode_video takes: held natively, shared by copies (immutable), never converted per packet.
Made only by demux_video.)doc")
        .def("__len__", &ferry::packets::size,
             "Packets held, from the keyframe at or before the window's start.")
        .def_property_readonly("nbytes", &ferry::packets::bytes, "Compressed bytes held.")
        .def_property_readonly(
            "frames", &ferry::packets::frames,
            "Frames in the window that decode: counted from the packets' timestamps where every "
            "packet has one (MP4, MOV, Matroska, WebM, MPEG-TS, ...), else by decoding them once; "
            "never the container's header. With max_frames, at most that many.")
        .def_property_readonly("stream", &ferry::packets::stream,
                               "The stream's index in its container.")
        .def_property_readonly("codec", &ferry::packets::codec,
                               "The codec's short name: 'h264', 'vp9', 'mpeg4', ...")
        .def_property_readonly("width", &ferry::packets::width,
                               "Frame width as the stream declares it.")
        .def_property_readonly("height", &ferry::packets::height,
                               "Frame height as the stream declares it.")
        .def_property_readonly("frame_rate", &ferry::packets::frame_rate,
                               "Average frame rate (0.0 when unknown).")
        .def_property_readonly(
            "source",
            [](const ferry::packets& p) { return to_python(value(std::string(p.source()))); },
            "What the packets came from: the path, or '<memory>'.")
        .def_property_readonly("truncated", &ferry::packets::truncated,
                               "True when the input was cut or damaged: these are the packets "
                               "that could be read (strict=False).")
        .def_property_readonly("truncation", &ferry::packets::truncation,
                               "Why truncated, e.g. 'the container declares 444 frames, the data "
                               "holds 68'; '' when it is not.")
        .def("__repr__", &packets_text);

    video.def(
        "demux_video",
        [](double start, const std::optional<double>& end, int stream, std::int64_t max_frames,
           double timeout, std::uint64_t max_pixels, bool strict, bool snap_to_keyframe) {
            std::vector<std::string> args;
            ferry::demux_options o = demux_options_of(
                {start, end, stream, max_frames, timeout, max_pixels, strict, snap_to_keyframe},
                "demux_video", args);
            if (strict) args.push_back("strict=True");
            return py::cast(py_op{std::make_shared<const native_op>(
                native_op{call_text("demux_video", args),
                          [o](value&& v) { return demux(std::move(v), o); }})});
        },
        py::kw_only(), py::arg("start") = 0.0, py::arg("end") = py::none(), py::arg("stream") = -1,
        py::arg("max_frames") = 0, py::arg("timeout") = 10.0, py::arg("max_pixels") = 64'000'000ULL,
        py::arg("strict") = false, py::arg("snap_to_keyframe") = false, R"doc(
A native op: ferry::ops::demux_video on a path (str or os.PathLike), bytes (ferry.Bytes or a
bytes-like object) or a tuple (source, start, end) in seconds (the item's own window, which
replaces the op's start and end), giving the window's compressed packets as a ferry.video.Packets
for decode_video: reading without decoding, so that a pipeline gives reading and decoding their
own stages (demux on the I/O executor, decode on the CPU). The keywords are
ferry::demux_options' fields: start and end (the window in seconds; end None: to the stream's
end), stream (-1: FFmpeg's best video stream), max_frames (stop reading once this many frames of
the window are certain; 0: read the whole window. load_video derives it from its selection: give
it here for clip selections, e.g. 31 for FrameSelection.clip(16, 2) from the window's start),
timeout (seconds a read may deliver nothing), max_pixels (the declared frame size), strict (a
cut or damaged file is a ferry.DecodeError instead of the packets that could be read),
snap_to_keyframe (the window's start moves back to the keyframe at or before it). Errors as
load_video's: ferry.IOError (missing file, stalled read), ferry.DecodeError (not a video, over a
limit), naming the file.)doc");

    video.def(
        "decode_video",
        [](const ferry::frame_selection& select, const std::string& format,
           const std::optional<video_size>& resize, const std::string& filter, int threads,
           std::uint64_t max_pixels, std::uint64_t max_bytes, bool strict, bool skip_nonref,
           bool with_indices, bool with_times) {
            std::vector<std::string> args;
            ferry::video_decode_options o =
                decode_options_of({select, format, resize, filter, threads, max_pixels, max_bytes,
                                   strict, skip_nonref},
                                  "decode_video", args);
            if (with_indices) args.push_back("with_indices=True");
            if (with_times) args.push_back("with_times=True");
            // Random clips draw their starts from the item of the stage's call.
            const bool wants_item = select.mode() == ferry::frame_selection::kind::clips;
            return py::cast(py_op{std::make_shared<const native_op>(
                native_op{call_text("decode_video", args),
                          [o, with = clip_extras{with_indices, with_times}](value&& v) {
                              return clip_value(
                                  ferry::ops::decode_video(take_packets(std::move(v)), o), with);
                          },
                          wants_item})});
        },
        py::kw_only(), py::arg("select") = ferry::frame_selection::all(), py::arg("format") = "rgb",
        py::arg("resize") = py::none(), py::arg("filter") = "bilinear", py::arg("threads") = 0,
        py::arg("max_pixels") = 64'000'000ULL, py::arg("max_bytes") = 4ULL << 30,
        py::arg("strict") = false, py::arg("skip_nonref") = true, py::arg("with_indices") = false,
        py::arg("with_times") = false, R"doc(
A native op: ferry::ops::decode_video on a ferry.video.Packets (what demux_video gives), giving
the selected frames of the window as load_video gives them: a ferry.Tensor of uint8, frames x
height x width x channels (clips x frames x ... for FrameSelection.clips and clips_at), or the
tuple (clip, [indices], [times]) with with_indices and with_times. The keywords are
ferry::video_decode_options' fields, as load_video takes them: select, format, resize, filter,
threads (0: ferry chooses, the pipeline's threads over this stage's concurrency), max_pixels (the
decoded frame size), max_bytes (the clip's size), strict, skip_nonref. demux_video then
decode_video gives the frames load_video gives with the same keywords, byte for byte. Errors:
ferry.DecodeError (too few frames for the selection, a damaged stream with strict=True, over a
limit), naming the file; ferry.InvalidArgument for an item that is not Packets.)doc");
}

}  // namespace ferry::python
