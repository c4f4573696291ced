# SPDX-License-Identifier: Apache-2.0
"""ferry.video's two steps apart: demux_video reads a window's packets (ferry.video.Packets, which
say what they hold as ffprobe counts it) and decode_video decodes them, in stages of their own, to
the frames load_video gives and the ffmpeg CLI decodes, byte for byte; a native chain from paths
through both takes no GIL per item; packets pass through a Python stage and stay native; labels,
random clips and cut files behave as load_video's; wrong inputs and keywords are errors naming
the op."""
import json
import subprocess

import numpy as np
import pytest
from conftest import run_counting_gil, video_mark
from h264_clip import FRAMES, HEIGHT, WIDTH, make_clip

import ferry
from ferry import ops

if ferry._ferry.has_video:
    from ferry import video
needs_video = video_mark("ffprobe", "its packet lists and frames")


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """h264_clip's clip (path, ffmpeg's frames)."""
    return make_clip(tmp_path_factory.mktemp("video_steps") / "clip.mp4")


def ffprobe_packets(path):
    """ffprobe's packets of the first video stream: [(pts, size, keyframe)] in file order."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_packets",
                          "-show_entries", "packet=pts,size,flags", "-of", "json", str(path)],
                         check=True, capture_output=True, text=True).stdout
    return [(int(p["pts"]), int(p["size"]), p["flags"].startswith("K"))
            for p in json.loads(out)["packets"]]


# demux_video on the I/O executor, then decode_video in a stage of its own: ffmpeg's frames at the
# indices the selection names, the same bytes load_video gives with the same keywords; the chain
# takes the GIL for no item, and the decode stage counts its frames as load_video's does.
@needs_video
def test_demux_then_decode_gives_load_videos_frames(clip):
    path, ref = clip
    demux = video.demux_video(start=0.2)
    decode = video.decode_video(select=video.FrameSelection.clip(4, 3))
    assert repr(demux) == "<ferry op demux_video(start=0.2)>"
    assert repr(decode) == "<ferry op decode_video(select=FrameSelection.clip(4, 3))>"
    clips, gil_takes = run_counting_gil(
        ferry.source([path] * 3)
        .map(demux, concurrency=2, executor="io", name="demux")
        .map(decode, concurrency=2, name="decode"))
    assert gil_takes == 0
    assert len(clips) == 3
    alone = video.load_video(start=0.2, select=video.FrameSelection.clip(4, 3))(path)
    for c in clips:
        assert isinstance(c, ferry.Tensor) and c.shape == (4, HEIGHT, WIDTH, 3)
        np.testing.assert_array_equal(np.asarray(c), ref[[5, 8, 11, 14]])
        np.testing.assert_array_equal(np.asarray(c), np.asarray(alone))
    # Every frame from bytes (ops.read_file, then demux in memory), skip_nonref or not: ffmpeg's.
    for skip in (True, False):
        op = video.decode_video(skip_nonref=skip)
        assert ("skip_nonref=False" in repr(op)) == (not skip)
        with (ferry.source([path]).map(ops.read_file).map(video.demux_video())
              .map(op, name="decode").build(threads=1)) as pipe:
            [every] = list(pipe)
            [stage] = [s for s in pipe.stats().stages if s.name == "decode"]
        np.testing.assert_array_equal(np.asarray(every), ref)
        assert stage.counters["frames kept"] == FRAMES


# Packets say what they hold: as many packets and compressed bytes as ffprobe lists from the
# keyframe at or before the window's start, the window's frames, the codec, size, rate and source.
# A window from 0.6 s (frame 15) holds the packets from the keyframe at frame 12 and 9 frames;
# max_frames=4 stops at 4.
@needs_video
def test_packets_say_what_they_hold(clip):
    path, ref = clip
    listed = ffprobe_packets(path)
    assert len(listed) == FRAMES
    whole = video.demux_video()(path)
    assert isinstance(whole, video.Packets)
    assert len(whole) == FRAMES and whole.frames == FRAMES
    assert whole.nbytes == sum(size for _, size, _ in listed)
    assert (whole.codec, whole.width, whole.height, whole.stream) == ("h264", WIDTH, HEIGHT, 0)
    assert whole.frame_rate == pytest.approx(25.0)
    assert whole.source == path
    assert not whole.truncated and whole.truncation == ""
    assert repr(whole) == (f"<ferry.video.Packets h264 {WIDTH}x{HEIGHT}, {FRAMES} frames in "
                           f"{FRAMES} packets ({whole.nbytes} bytes) of {path}>")
    window = video.demux_video(start=0.6)(path)
    assert window.frames == FRAMES - 15
    # The packets from the keyframe at 0.48 s (frame 12) on, whatever their order in the file.
    [key] = [pts for pts, _, k in listed if k and pts > 0]
    assert len(window) == sum(1 for pts, _, _ in listed if pts >= key)
    assert video.demux_video(start=0.6, max_frames=4)(path).frames == 4
    # A selection says how many frames to read for it; decoding those packets gives load_video's.
    sel = video.FrameSelection
    selections = (sel.clip(4, 3), sel.indices([5, 2]), sel.clips_at([3, 7], 4, 2), sel.all(),
                  sel.uniform(3), sel.clips(2, 4))
    assert [s.frames_needed for s in selections] == [10, 6, 14, 0, 0, 0]
    few = video.demux_video(start=0.2, max_frames=sel.clip(4, 3).frames_needed)(path)
    assert few.frames == 10 and len(few) < len(whole)
    np.testing.assert_array_equal(np.asarray(video.decode_video(select=sel.clip(4, 3))(few)),
                                  ref[[5, 8, 11, 14]])
    np.testing.assert_array_equal(np.asarray(video.decode_video()(window)), ref[15:])
    with pytest.raises(TypeError):
        video.Packets()


# A Python stage between the steps sees a ferry.video.Packets (with its label: a Python stage
# gets the whole item) and may pass it on: decode_video takes it back natively. A labelled item
# ((path, label)) keeps its label through both steps, and an item that is not packets is a
# failure naming what decode_video expects and what it got.
@needs_video
def test_packets_pass_through_python_and_labels_stay(clip):
    path, ref = clip
    seen = []

    def look(item):
        p, label = item
        seen.append((type(p).__name__, p.frames, label))
        return [p, label]

    with (ferry.source([(path, 3), (path, 5)])
          .map(video.demux_video(max_frames=2))
          .map(look)
          .map(video.decode_video(select=video.FrameSelection.indices([1])))
          .build(threads=1)) as pipe:
        got = list(pipe)
    assert seen == [("Packets", 2, 3), ("Packets", 2, 5)]
    assert [label for _, label in got] == [3, 5]
    for c, _ in got:
        np.testing.assert_array_equal(np.asarray(c), ref[[1]])
    with (ferry.source([path, "not packets"])
          .map(video.decode_video(), on_error="skip", name="decode")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        assert list(pipe) == []
        failures = pipe.failures()
    assert [f.item for f in failures] == [0, 1]
    assert failures[0].message == ("decode_video expects ferry.video.Packets (what demux_video "
                                   "gives), got a str")


# FrameSelection.clips in decode_video draws its starts from the item, as load_video does: the
# same items give the same clips through the two steps as through load_video, with the indices
# and times that say where they fell.
@needs_video
def test_random_clips_are_load_videos(clip):
    path, ref = clip
    select = video.FrameSelection.clips(3, 4, 2)

    def run(*ops_):
        builder = ferry.source([path] * 4)
        for op in ops_:
            builder = builder.map(op)
        with builder.build(threads=2) as pipe:
            return list(pipe)

    split = run(video.demux_video(), video.decode_video(select=select, with_indices=True))
    fused = run(video.load_video(select=select, with_indices=True))
    assert len(split) == len(fused) == 4
    for (a, ia), (b, ib) in zip(split, fused):
        np.testing.assert_array_equal(np.asarray(ia), np.asarray(ib))
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(np.asarray(a), ref[np.asarray(ia)])


# A cut file (an MP4 whose index comes first, cut at four fifths, inside the packets):
# demux_video gives the packets that could be read, truncated and saying why; decode gives the
# frames that decode (ffmpeg's first frames); strict=True makes either step a DecodeError naming
# the file.
@needs_video
def test_a_cut_file_is_truncated_or_strict(clip, tmp_path):
    path, ref = clip
    whole = tmp_path / "clip.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", path, "-c", "copy",
                    "-movflags", "+faststart", str(whole)], check=True)
    data = whole.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[:len(data) * 4 // 5])
    p = video.demux_video()(str(cut))
    assert p.truncated and "is incomplete" in p.truncation, repr(p)
    assert repr(p).endswith(f", truncated: {p.truncation}>")
    assert 0 < p.frames < FRAMES
    frames = np.asarray(video.decode_video()(p))
    assert 0 < len(frames) <= p.frames
    np.testing.assert_array_equal(frames, ref[:len(frames)])
    with pytest.raises(ferry.DecodeError, match="cut.mp4"):
        video.demux_video(strict=True)(str(cut))
    with pytest.raises(ferry.DecodeError, match="cut.mp4"):
        video.decode_video(strict=True)(p)


# A memory budget counts each item at its largest form: here the whole file's packets, which
# wait for decode_video, not the one 8 x 8 frame the item leaves as.
@needs_video
def test_a_memory_budget_counts_the_packets(clip):
    path, _ = clip
    packets = video.demux_video()(path).nbytes
    assert packets > 8 * 8 * 3 * 4
    counted = 0
    with (ferry.source([path] * 40)
          .map(video.demux_video(), executor="io", name="demux")
          .map(video.decode_video(select=video.FrameSelection.indices([0]), resize=8),
               name="decode")
          .build(threads=1, autotune=ferry.Autotune(memory_budget=64 * packets))) as pipe:
        for frame in pipe:
            assert np.asarray(frame).shape == (1, 8, 8, 3)
            counted = max(counted, pipe.stats().bytes_in_flight)
    assert counted >= packets, f"the budget counted {counted} bytes, packets hold {packets}"
    assert counted <= 64 * packets


# Keywords either step refuses are ValueErrors when the op is made, naming the op and keyword.
@needs_video
def test_bad_keywords_name_the_op():
    with pytest.raises(ValueError, match=r"demux_video\(start=..., end=...\): the window is"):
        video.demux_video(start=-1.0)
    with pytest.raises(ValueError, match=r"demux_video\(stream=...\): stream is"):
        video.demux_video(stream=-2)
    with pytest.raises(ValueError, match=r"demux_video\(max_frames=...\)"):
        video.demux_video(max_frames=-1)
    with pytest.raises(ValueError, match=r"demux_video\(timeout=...\): timeout is a positive"):
        video.demux_video(timeout=0)
    with pytest.raises(ValueError, match=r"decode_video\(format=...\): format must be"):
        video.decode_video(format="rgba")
    with pytest.raises(ValueError, match=r"decode_video\(resize=...\): sizes are positive"):
        video.decode_video(resize=(0, 4))
    with pytest.raises(ValueError, match=r"decode_video\(threads=...\): decoder threads"):
        video.decode_video(threads=65)
