# SPDX-License-Identifier: Apache-2.0
"""ferry.video.probe_video: what ffprobe reads from the same files (duration, frame count and rate,
size, codecs, every stream, keyframe times), from paths and from bytes; audio-only files with
require_video=False; bad inputs and options are failures that name them."""
import json
import subprocess

import pytest
from conftest import video_mark

import ferry

if ferry._ferry.has_video:
    from ferry import video
needs_video = video_mark("ffprobe", "its readings")

FFMPEG = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]


def ffprobe(path, *args):
    out = subprocess.run(["ffprobe", "-v", "error", "-of", "json", *args, str(path)],
                         check=True, capture_output=True).stdout
    return json.loads(out)


@pytest.fixture(scope="module")
def movie(tmp_path_factory):
    """3 s of testsrc2 at 96 x 64, 25 fps, H.264 with a keyframe every 20 frames, beside a 44.1 kHz
    stereo AAC track."""
    path = tmp_path_factory.mktemp("probe") / "movie.mp4"
    subprocess.run(FFMPEG + ["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25:duration=3",
                             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=3",
                             "-ac", "2", "-c:v", "libx264", "-g", "20", "-keyint_min", "20",
                             "-pix_fmt", "yuv420p", "-c:a", "aac", str(path)],
                   check=True, capture_output=True)
    return path


# The video's numbers and every stream are ffprobe's; the keyframes are the times of the packets
# ffprobe flags K; bytes give what the path gives.
@needs_video
def test_a_movie_reads_as_ffprobe_reads_it(movie):
    ref = ffprobe(movie, "-show_streams", "-show_format")
    keys = ffprobe(movie, "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags",
                   "-show_packets")
    info = video.probe_video(str(movie), keyframes=True)
    assert isinstance(info, video.VideoInfo)
    v = next(s for s in ref["streams"] if s["codec_type"] == "video")
    assert info.stream == v["index"]
    assert info.codec == v["codec_name"] == "h264"
    assert (info.width, info.height) == (96, 64)
    assert info.pixel_format == v["pix_fmt"] == "yuv420p"
    assert info.frame_rate == 25.0
    assert info.frames == int(v["nb_frames"]) == 75 and info.frames_from == "header"
    assert info.duration == pytest.approx(float(v["duration"]), abs=1e-6)
    assert info.duration_from == "header"
    assert info.format == ref["format"]["format_name"]
    assert [(s.index, s.type, s.codec) for s in info.streams] == [
        (s["index"], s["codec_type"], s["codec_name"]) for s in ref["streams"]]
    a = info.streams[1]
    assert isinstance(a, video.StreamInfo)
    assert (a.sample_rate, a.channels) == (44100, 2)
    assert a.duration == pytest.approx(float(ref["streams"][1]["duration"]), abs=1e-6)
    want = [float(p["pts_time"]) for p in keys["packets"] if p["flags"].startswith("K")]
    assert want == [0.0, 0.8, 1.6, 2.4]
    assert info.keyframes == pytest.approx(want, abs=1e-9)
    assert info.keyframes_from == "index" and not info.keyframes_capped
    assert "75 frames (header) at 25 fps" in repr(info)
    from_bytes = video.probe_video(movie.read_bytes())
    assert (from_bytes.frames, from_bytes.duration, len(from_bytes.streams)) == (
        info.frames, info.duration, 2)
    assert from_bytes.keyframes == []  # not asked for
    capped = video.probe_video(movie, keyframes=True, max_keyframes=2)
    assert capped.keyframes == pytest.approx(want[:2]) and capped.keyframes_capped


# A file without video: a DecodeError naming what it holds, or with require_video=False its
# streams, whose duration is ffprobe's (what a random audio window needs).
@needs_video
def test_audio_only_files_give_their_streams(tmp_path):
    path = tmp_path / "tone.flac"
    subprocess.run(FFMPEG + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=22050:"
                             "duration=2.5", "-c:a", "flac", str(path)],
                   check=True, capture_output=True)
    with pytest.raises(ferry.DecodeError, match="no video stream \\(audio flac\\)"):
        video.probe_video(path)
    info = video.probe_video(path, require_video=False)
    assert info.stream == -1 and info.frames == 0
    [s] = info.streams
    assert (s.type, s.codec, s.sample_rate, s.channels) == ("audio", "flac", 22050, 1)
    ref = ffprobe(path, "-show_streams")["streams"][0]
    assert s.duration == pytest.approx(float(ref["duration"]), abs=1e-6) == 2.5


# A missing file is an IOError, junk a DecodeError, an int or a bad timeout a ValueError.
@needs_video
def test_bad_inputs_and_options_name_themselves(tmp_path):
    with pytest.raises(ferry.IOError, match="No such file"):
        video.probe_video(str(tmp_path / "missing.mp4"))
    with pytest.raises(ferry.DecodeError, match="cannot open the container"):
        video.probe_video(b"x" * 5000)
    with pytest.raises(ValueError, match="probe_video expects a path .* got an int"):
        video.probe_video(7)
    with pytest.raises(ValueError, match="timeout is a positive number of seconds"):
        video.probe_video(str(tmp_path / "missing.mp4"), timeout=0)
