# SPDX-License-Identifier: Apache-2.0
"""Native video ops (ferry::video, FFmpeg), to pass to Builder.map: each item is decoded in C++,
without the GIL.

load_video(*, select=FrameSelection.all(), format='rgb', resize=None, ...): a path (str or
    os.PathLike) or bytes -> ferry.Tensor, the clip as uint8 frames x height x width x channels.
FrameSelection: which frames (all(), indices([...]), uniform(n), clip(n, stride)).
demux_video(*, start=0.0, end=None, max_frames=0, ...): a path or bytes -> Packets, the window's
    compressed packets, read without decoding (an I/O stage).
decode_video(*, select=FrameSelection.all(), format='rgb', resize=None, ...): Packets ->
    ferry.Tensor, the clip load_video gives with the same keywords (a CPU stage).
Packets: what demux_video gives (len(), nbytes, frames, codec, width, height, frame_rate, ...).
decode_audio(*, sample_rate=0, channels=0, start=0.0, end=None, ...): a path or bytes ->
    ferry.Tensor, the audio as float32 channels x samples, resampled by swresample.
probe_video(source, *, keyframes=False, require_video=True, ...): a path or bytes -> VideoInfo
    (duration, frame rate, frame count, every stream as a StreamInfo, keyframe times), called
    directly, not passed to map.
"""
from ferry import _ferry

if not _ferry.has_video:
    raise ImportError(
        "ferry.video is not in this build of ferry: its C++ component ferry::video was not "
        "built; configure ferry with -DFERRY_VIDEO=ON (it needs FFmpeg 5.1+: libavformat-dev, "
        "libavcodec-dev, libswscale-dev, libswresample-dev) and build the target ferry_python")

FrameSelection = _ferry.video.FrameSelection
load_video = _ferry.video.load_video
demux_video = _ferry.video.demux_video
decode_video = _ferry.video.decode_video
Packets = _ferry.video.Packets
decode_audio = _ferry.video.decode_audio
probe_video = _ferry.video.probe_video
VideoInfo = _ferry.video.VideoInfo
StreamInfo = _ferry.video.StreamInfo

__all__ = ["FrameSelection", "load_video", "demux_video", "decode_video", "Packets", "decode_audio",
           "probe_video", "VideoInfo", "StreamInfo"]
