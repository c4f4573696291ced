# SPDX-License-Identifier: Apache-2.0
"""The small H.264 clip the video tests read, made with the ffmpeg CLI, and ffmpeg's own frames of
a file: the references ferry.video's ops are held to, byte for byte."""
import subprocess

import numpy as np

WIDTH, HEIGHT, FRAMES = 64, 48, 24
FFMPEG = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]


def ffmpeg_frames(path, *filters):
    """ffmpeg's frames of path as the C++ suite takes them (-vsync passthrough, bilinear swscale,
    rgb24), with optional -vf filters: raw bytes, frames x height x width x 3."""
    cmd = FFMPEG + ["-i", str(path), "-map", "0:v:0", "-vsync", "passthrough", "-sws_flags",
                    "bilinear"]
    if filters:
        cmd += ["-vf", ",".join(filters)]
    raw = subprocess.run(cmd + ["-f", "rawvideo", "-pix_fmt", "rgb24", "-"], check=True,
                         capture_output=True).stdout
    return raw


def make_clip(path):
    """Writes 24 frames of testsrc2 at 64 x 48, 25 fps, H.264 with B-frames and a keyframe every
    12 frames (as tests/video/containers.cpp makes them) to path (its container from its ending);
    returns (str(path), ffmpeg's frames of it as an array frames x height x width x 3)."""
    subprocess.run(FFMPEG + ["-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate=25",
                             "-frames:v", str(FRAMES), "-c:v", "libx264", "-preset", "veryfast",
                             "-bf", "2", "-g", "12", "-pix_fmt", "yuv420p", str(path)],
                   check=True, capture_output=True)
    frames = np.frombuffer(ffmpeg_frames(path), np.uint8).reshape(-1, HEIGHT, WIDTH, 3)
    assert len(frames) == FRAMES
    return str(path), frames
