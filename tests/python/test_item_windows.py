# SPDX-License-Identifier: Apache-2.0
"""An item's own window: load_video and decode_audio take a tuple (source, start, end) in seconds
(end None: to the stream's end), as an annotated segment list gives them, and load that window of
the source: the frames and samples the ffmpeg CLI decodes there, the same as the op made with
start= and end=; random clips and random audio windows fall inside it; a pair (x, label) keeps
its label; a segment list takes no GIL per item; a window that means nothing fails its item
naming what is wrong, and the other items go on."""
import subprocess

import numpy as np
import pytest
from conftest import run_counting_gil, video_mark

import ferry

if ferry._ferry.has_video:
    from ferry import video
needs_video = video_mark("ffmpeg", "its frames and samples")

WIDTH, HEIGHT, FRAMES, FPS = 64, 48, 50, 25
RATE = 16000
FFMPEG = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    """2 s of testsrc2 at 25 fps (H.264 with B-frames, a keyframe every 12 frames) and 2 s of a
    440 Hz tone as 16 kHz mono WAV, with ffmpeg's frames and samples of them."""
    folder = tmp_path_factory.mktemp("windows")
    clip, wav = str(folder / "clip.mp4"), str(folder / "tone.wav")
    subprocess.run(FFMPEG + ["-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate={FPS}",
                             "-frames:v", str(FRAMES), "-c:v", "libx264", "-preset", "veryfast",
                             "-bf", "2", "-g", "12", "-pix_fmt", "yuv420p", clip],
                   check=True, capture_output=True)
    subprocess.run(FFMPEG + ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate={RATE}:"
                             "duration=2", "-c:a", "pcm_s16le", wav], check=True,
                   capture_output=True)
    raw = subprocess.run(FFMPEG + ["-i", clip, "-vsync", "passthrough", "-sws_flags", "bilinear",
                                   "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], check=True,
                         capture_output=True).stdout
    frames = np.frombuffer(raw, np.uint8).reshape(-1, HEIGHT, WIDTH, 3)
    assert len(frames) == FRAMES
    raw = subprocess.run(FFMPEG + ["-i", wav, "-f", "f32le", "-"], check=True,
                         capture_output=True).stdout
    samples = np.frombuffer(raw, np.float32).reshape(1, -1)
    assert samples.shape == (1, 2 * RATE)
    return clip, frames, wav, samples


# Items (path, start, end), (path, start, None) and a plain path, in one chain: each clip is
# ffmpeg's frames of its window ([start, end), frame k at k / 25 s), and the same as the op made
# with that start= and end=.
@needs_video
def test_each_items_window_gives_ffmpegs_frames_there(media):
    clip, ref, _, _ = media
    items = [(clip, 0.4, None), (clip, 0.4, 1.2), (clip, 1, None), clip, (clip, 0.0, 0.2)]
    want = [range(10, FRAMES), range(10, 30), range(25, FRAMES), range(0, FRAMES), range(0, 5)]
    with ferry.source(items).map(video.load_video(), name="video").build(threads=1) as pipe:
        got = [np.asarray(c) for c in pipe]
    assert len(got) == len(items)
    for item, frames, indices in zip(items, got, want):
        np.testing.assert_array_equal(frames, ref[list(indices)], err_msg=str(item[1:]))
    alone = video.load_video(start=0.4, end=1.2)(clip)
    np.testing.assert_array_equal(np.asarray(alone), got[1])


# The item's window replaces the op's: an op made with start=1.0 loads (path, 0.0, 0.2) from 0.
# A pair (x, label) with an int label is a labelled item, natively and without the GIL: the op
# loads x (a path or a window) and the label stays beside the clip; ferry.zip of paths and labels
# makes such pairs. A pair is never read as a window.
@needs_video
def test_the_items_window_replaces_the_ops_and_pairs_keep_their_labels(media):
    clip, ref, _, _ = media
    op = video.load_video(select=video.FrameSelection.clip(3, 2), start=1.0)
    np.testing.assert_array_equal(np.asarray(op((clip, 0.0, 0.2))), ref[[0, 2, 4]])
    np.testing.assert_array_equal(np.asarray(op(clip)), ref[[25, 27, 29]])
    labelled = [(clip, 3), ((clip, 0.0, 0.2), 7)]
    got, gil_takes = run_counting_gil(ferry.source(labelled).map(op))
    assert gil_takes == 0
    assert [type(x) for x in got] == [tuple, tuple] and [y for _, y in got] == [3, 7]
    np.testing.assert_array_equal(np.asarray(got[0][0]), ref[[25, 27, 29]])
    np.testing.assert_array_equal(np.asarray(got[1][0]), ref[[0, 2, 4]])
    zipped = ferry.zip(ferry.source([clip, clip]), ferry.source([0, 1]))
    with zipped.map(op).build(threads=1) as pipe:
        got = list(pipe)
    assert [y for _, y in got] == [0, 1]
    for c, _ in got:
        np.testing.assert_array_equal(np.asarray(c), ref[[25, 27, 29]])


# FrameSelection.clips draws its starts inside each item's window: every frame's time lies in
# [start, end), each frame is ffmpeg's frame at that time, and each clip keeps its stride.
@needs_video
def test_random_clips_fall_inside_the_items_window(media):
    clip, ref, _, _ = media
    windows = [(0.0, 0.8), (0.8, 1.6), (1.2, None)]
    items = [(clip, *w) for w in windows] * 4
    op = video.load_video(select=video.FrameSelection.clips(2, 3, 2), with_indices=True,
                          with_times=True)
    with ferry.source(items).map(op).build(threads=2) as pipe:
        got = list(pipe)
    assert len(got) == len(items)
    for (_, start, end), (clips, indices, times) in zip(items, got):
        clips, times = np.asarray(clips), np.asarray(times)
        assert clips.shape == (2, 3, HEIGHT, WIDTH, 3) and times.shape == (2, 3)
        assert (times >= start - 1e-9).all() and (times < (end or 2.0)).all(), (start, end, times)
        frame = np.rint(times * FPS).astype(int)
        assert (np.diff(frame, axis=1) == 2).all()
        np.testing.assert_array_equal(clips, ref[frame])
        # The indices count from the window's first frame.
        np.testing.assert_array_equal(np.asarray(indices), frame - round(start * FPS))


# A list of (path, start, end) segments becomes native when the source is made: the chain takes
# the GIL for no item, and a failing item is named by its path.
@needs_video
def test_segment_lists_take_no_gil_per_item(media):
    clip, ref, wav, samples = media
    segments = [(wav, 0.25 * i, 0.25 * i + 0.5) for i in range(6)]
    got, gil_takes = run_counting_gil(
        ferry.source(segments).map(video.decode_audio(), concurrency=2, executor="io"))
    assert gil_takes == 0
    for i, a in enumerate(got):
        np.testing.assert_array_equal(np.asarray(a), samples[:, 4000 * i:4000 * i + 8000])
    clips, gil_takes = run_counting_gil(
        ferry.source([(clip, 0.4, 0.6), (clip, 1, 1.2)]).map(video.load_video()))
    assert gil_takes == 0
    np.testing.assert_array_equal(np.asarray(clips[1]), ref[25:30])
    with (ferry.source([(wav, 0.0, 0.5), ("missing.wav", 0.0, 0.5)])
          .map(video.decode_audio(), on_error="skip")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        assert len(list(pipe)) == 1
        [failure] = pipe.failures()
    assert failure.input == "missing.wav" and failure.code == "io"


# decode_audio reads the item's window: ffmpeg's samples of [start, end), the same as the op made
# with start= and end=; with samples=n, n of them (the rest silence past the file's end).
@needs_video
def test_audio_items_give_their_windows_samples(media):
    _, _, wav, ref = media
    items = [(wav, 0.5, 1.25), (wav, 1.5, None), (wav, 1.75, None)]
    with ferry.source(items).map(video.decode_audio(), name="audio").build(threads=1) as pipe:
        got = [np.asarray(a) for a in pipe]
    np.testing.assert_array_equal(got[0], ref[:, 8000:20000])
    np.testing.assert_array_equal(got[1], ref[:, 24000:])
    np.testing.assert_array_equal(got[2], ref[:, 28000:])
    np.testing.assert_array_equal(
        got[0], np.asarray(video.decode_audio(start=0.5, end=1.25)(wav)))
    fixed = np.asarray(video.decode_audio(samples=8000)((wav, 1.75, None)))
    assert fixed.shape == (1, 8000)
    np.testing.assert_array_equal(fixed[:, :4000], ref[:, 28000:])
    assert not fixed[:, 4000:].any()


# A window that means nothing fails its own item (on_error="skip"), naming what is wrong; the
# other items are delivered.
@needs_video
def test_bad_item_windows_fail_naming_them(media):
    clip, ref, wav, _ = media
    bad = [((clip,), "a tuple item is the window (source, start, end) (end None: to the "
                     "stream's end), got a tuple of 1"),
           ((clip, 0.5), "got a tuple of 2 (a pair (x, label) keeps its label where its label "
                         "is an int)"),
           ((clip, -0.5, None), "starts at -0.5 s: a start is 0 or more seconds"),
           ((clip, 1.0, 0.5), "ends at 0.5 s, not after its start 1 s"),
           ((clip, 1.0, float("nan")), "ends at nan s, not after its start 1 s"),
           ((clip, "1.0", None), "has a str for its start, not a number of seconds"),
           ((clip, True, None), "has a Python bool for its start, not a number of seconds"),
           ((clip, 0.0, "end"), "has a str for its end, not a number of seconds or None"),
           ((clip, 0, 1, 2), "got a tuple of 4")]
    items = [(clip, 0.0, 0.2)] + [b for b, _ in bad] + [(clip, 0.4, 0.6)]
    with (ferry.source(items)
          .map(video.load_video(), on_error="skip", name="video")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        got = [np.asarray(c) for c in pipe]
        failures = {f.item: f for f in pipe.failures()}
    assert len(got) == 2
    np.testing.assert_array_equal(got[0], ref[0:5])
    np.testing.assert_array_equal(got[1], ref[10:15])
    assert sorted(failures) == list(range(1, len(bad) + 1))
    for i, (_, message) in enumerate(bad, start=1):
        assert failures[i].code == "invalid_argument", failures[i]
        assert failures[i].message.startswith("load_video: "), failures[i].message
        assert message in failures[i].message, failures[i].message
    # decode_audio names itself.
    with pytest.raises(ferry.InvalidArgument, match="^decode_audio: .* not after its start"):
        video.decode_audio()((wav, 1.0, 1.0))


# random_window draws each item's window inside the item's own span and stays in it: 0.25 s
# windows of (wav, 0.5, 1.5) start in [0.5, 1.25] s and are ffmpeg's samples there; a span
# shorter than the window is all of it, padded to samples=; a span past the stream fails its
# item naming the span.
@needs_video
def test_random_windows_fall_inside_the_items_span(media):
    _, _, wav, ref = media
    op = video.decode_audio(random_window=0.25, samples=4000, with_length=True, with_start=True)
    items = [(wav, 0.5, 1.5)] * 24 + [(wav, 1.0, 1.1), (wav, 3.0, 4.0)]
    with (ferry.source(items).map(op, on_error="skip", name="audio")
          .build(threads=2, max_epoch_failure_rate=1.0)) as pipe:
        got = list(pipe)
        failures = pipe.failures()
    assert len(got) == 25
    starts = []
    for audio, length, start in got[:24]:
        assert 8000 <= start <= 20000 and length == 4000, (start, length)
        np.testing.assert_array_equal(np.asarray(audio), ref[:, start:start + 4000])
        starts.append(start)
    assert min(starts) < 10000 and max(starts) > 18000 and len(set(starts)) > 16
    audio, length, start = got[24]
    assert start == 16000 and length == 1600
    np.testing.assert_array_equal(np.asarray(audio)[:, :1600], ref[:, 16000:17600])
    assert not np.asarray(audio)[:, 1600:].any()
    [failure] = failures
    assert failure.item == 25 and failure.code == "decode"
    assert "the span from 3.000 s to 4.000 s holds none of the stream" in failure.message
