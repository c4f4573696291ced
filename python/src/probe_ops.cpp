// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.video.probe_video(source, ...)`: ferry::ops::probe_video from Python, the GIL released
/// while it reads; its results `VideoInfo` and `StreamInfo`, read-only.
#include <pybind11/stl.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

#include "convert.hpp"
#include "ferry/error.hpp"
#include "ferry/video_probe.hpp"
#include "io_ops.hpp"

namespace ferry::python {
namespace {

std::string stream_text(const ferry::stream_info& s) {
    std::ostringstream os;
    os << "<StreamInfo " << s.index << ": " << ferry::to_string(s.type) << ' '
       << (s.codec.empty() ? "?" : s.codec);
    if (s.type == ferry::stream_type::video) {
        os << ' ' << s.width << 'x' << s.height << " at " << s.frame_rate << " fps";
    } else if (s.type == ferry::stream_type::audio) {
        os << ' ' << s.sample_rate << " Hz, " << s.channels << " channels";
    }
    os << ", " << s.duration << " s>";
    return os.str();
}

std::string info_text(const ferry::video_info& v) {
    std::ostringstream os;
    os << "<VideoInfo " << v.format;
    if (v.stream >= 0) {
        os << ": stream " << v.stream << ' ' << v.codec << ' ' << v.width << 'x' << v.height << ", "
           << v.frames << " frames (" << ferry::to_string(v.frames_from) << ") at " << v.frame_rate
           << " fps";
    } else {
        os << ": no video";
    }
    os << ", " << v.duration << " s, " << v.streams.size() << " streams";
    if (!v.keyframes.empty()) os << ", " << v.keyframes.size() << " keyframes";
    os << '>';
    return os.str();
}

ferry::video_info probe(const py::object& source, bool keyframes, bool require_video,
                        double timeout, std::size_t max_keyframes) {
    if (!(timeout > 0.0) || !std::isfinite(timeout)) {
        throw ferry::invalid_argument(
            "probe_video(timeout=...): timeout is a positive number of seconds, got " +
            std::to_string(timeout));
    }
    const ferry::video_probe_options o{.timeout = ceil_millis(timeout),
                                       .require_video = require_video,
                                       .keyframes = keyframes,
                                       .max_keyframes = max_keyframes};
    // Read with the GIL (a str, an os.PathLike, a bytes-like object); probed without it.
    auto in = take_path_or_bytes(source_element(source), "probe_video");
    py::gil_scoped_release released;
    return std::visit([&](const auto& x) { return ferry::ops::probe_video(x, o); }, in);
}

}  // namespace

void bind_probe_ops(py::module_& video) {
    using ferry::stream_info;
    using ferry::video_info;
    py::class_<stream_info>(video, "StreamInfo", R"doc(
One stream of a container as its header describes it (ferry::stream_info), read-only: index (the
stream to pass as stream=), type ("video", "audio", "subtitle", "data", "attachment", "unknown"),
codec (FFmpeg's short name), start and duration (seconds), frames (frames or packets the header
states), bit_rate, width, height, frame_rate and pixel_format (video), sample_rate and channels
(audio), attached_picture (a cover image). Unknown numbers are 0, unknown names "".)doc")
        .def_readonly("index", &stream_info::index)
        .def_property_readonly("type",
                               [](const stream_info& s) { return ferry::to_string(s.type); })
        .def_readonly("codec", &stream_info::codec)
        .def_readonly("start", &stream_info::start)
        .def_readonly("duration", &stream_info::duration)
        .def_readonly("frames", &stream_info::frames)
        .def_readonly("bit_rate", &stream_info::bit_rate)
        .def_readonly("width", &stream_info::width)
        .def_readonly("height", &stream_info::height)
        .def_readonly("frame_rate", &stream_info::frame_rate)
        .def_readonly("pixel_format", &stream_info::pixel_format)
        .def_readonly("sample_rate", &stream_info::sample_rate)
        .def_readonly("channels", &stream_info::channels)
        .def_readonly("attached_picture", &stream_info::attached_picture)
        .def("__repr__", &stream_text);

    py::class_<video_info>(video, "VideoInfo", R"doc(
What probe_video reads from a container (ferry::video_info), read-only: format (FFmpeg's
container name); stream (the best video stream's index, -1 with none), duration and start
(seconds, in the stream times load_video's start counts in), frame_rate, frames (an estimate:
the header's count or duration x rate; frames_from says which: "header", "duration x rate",
"unknown"), codec, width, height, pixel_format, bit_rate, duration_from ("header", "timestamps",
"bit rate", "unknown"); streams (every stream, a list of StreamInfo); with keyframes=True,
keyframes (each keyframe's time in seconds, ascending), keyframes_from ("index", "packets",
"decoding") and keyframes_capped (more than max_keyframes).)doc")
        .def_readonly("format", &video_info::format)
        .def_readonly("stream", &video_info::stream)
        .def_readonly("duration", &video_info::duration)
        .def_readonly("start", &video_info::start)
        .def_readonly("frame_rate", &video_info::frame_rate)
        .def_readonly("frames", &video_info::frames)
        .def_property_readonly("frames_from",
                               [](const video_info& v) { return ferry::to_string(v.frames_from); })
        .def_readonly("codec", &video_info::codec)
        .def_readonly("width", &video_info::width)
        .def_readonly("height", &video_info::height)
        .def_readonly("pixel_format", &video_info::pixel_format)
        .def_readonly("bit_rate", &video_info::bit_rate)
        .def_readonly("streams", &video_info::streams)
        .def_property_readonly(
            "duration_from", [](const video_info& v) { return ferry::to_string(v.duration_from); })
        .def_readonly("keyframes", &video_info::keyframes)
        .def_property_readonly(
            "keyframes_from",
            [](const video_info& v) { return ferry::to_string(v.keyframes_from); })
        .def_readonly("keyframes_capped", &video_info::keyframes_capped)
        .def("__repr__", &info_text);

    video.def("probe_video", &probe, py::arg("source"), py::kw_only(), py::arg("keyframes") = false,
              py::arg("require_video") = true, py::arg("timeout") = 10.0,
              py::arg("max_keyframes") = ferry::video_probe_options{}.max_keyframes, R"doc(
ferry::ops::probe_video on a path (str or os.PathLike) or bytes: a VideoInfo from the container's
header and index, no video decoded (at most one frame, for the pixel format), the GIL released
while it reads. keyframes=True also lists every keyframe's time (from MP4's index; else every
packet read, not decoded; kept in the keyframe cache per path, size and modification time);
require_video=False gives a file without video (audio only) its streams, stream -1, instead of a
ferry.DecodeError; timeout (seconds a read may deliver nothing: ferry.IOError); max_keyframes.
Errors: ferry.IOError (missing file, stalled read), ferry.DecodeError (not a container, no video
stream), naming the file.)doc");
}

}  // namespace ferry::python
