# SPDX-License-Identifier: Apache-2.0
"""ferry.video: load_video from Python gives the frames the ffmpeg CLI decodes, byte for byte (the
rule tests/video/containers.cpp holds the C++ op to), from paths and from bytes, for each frame
selection, in a native chain that takes no GIL per item; bad files and wrong inputs are failures
that name them. And a build without a component says which CMake option builds it."""
import numpy as np
import pytest
from conftest import run_child, run_counting_gil, video_mark
from h264_clip import FRAMES, HEIGHT, WIDTH, ffmpeg_frames, make_clip

import ferry
from ferry import ops

if ferry._ferry.has_video:
    from ferry import video
needs_video = video_mark("ffmpeg", "its frames")


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """h264_clip's clip (path, ffmpeg's frames)."""
    return make_clip(tmp_path_factory.mktemp("video") / "clip.mp4")


# Every frame, read from the path by a native chain: a ferry.Tensor of uint8, frames x height x
# width x 3, equal to ffmpeg's frames byte for byte; the chain takes the GIL for no item.
@needs_video
def test_all_frames_equal_ffmpegs(clip):
    path, ref = clip
    clips, gil_takes = run_counting_gil(
        ferry.source([path] * 3).map(video.load_video(), concurrency=2))
    assert gil_takes == 0
    assert len(clips) == 3
    for c in clips:
        assert isinstance(c, ferry.Tensor) and c.shape == (FRAMES, HEIGHT, WIDTH, 3)
        np.testing.assert_array_equal(np.asarray(c), ref)


# uniform(8), clip(8, 2) and indices([...]) give ffmpeg's frames at
# the indices the selection names (uniform: np.linspace(0, T - 1, 8).round()).
@needs_video
@pytest.mark.parametrize("kind, args, want", [
    ("uniform", (8,), np.linspace(0, FRAMES - 1, 8).round().astype(int)),
    ("clip", (8, 2), list(range(0, 16, 2))),
    ("indices", ([5, 0, 23, 5],), [5, 0, 23, 5]),
])
@pytest.mark.parametrize("skip_nonref", [True, False])
def test_selections_give_ffmpegs_frames(clip, kind, args, want, skip_nonref):
    path, ref = clip
    select = getattr(video.FrameSelection, kind)(*args)
    got = np.asarray(video.load_video(select=select, strict=True, skip_nonref=skip_nonref)(path))
    assert got.shape == (len(want), HEIGHT, WIDTH, 3)
    np.testing.assert_array_equal(got, ref[list(want)])


# skip_nonref (on by default) leaves undecoded the B-frames no selected frame needs: the stage's
# counters say fewer frames decoded for clip(8, 2) than with skip_nonref=False, the same 8 kept.
@needs_video
def test_skip_nonref_decodes_fewer_frames_keeping_the_same(clip):
    path, ref = clip
    counts = {}
    for skip in (True, False):
        op = video.load_video(select=video.FrameSelection.clip(8, 2), skip_nonref=skip)
        assert ("skip_nonref=False" in repr(op)) == (not skip)
        with ferry.source([path] * 2).map(op, name="load").build(threads=1) as pipe:
            for c in pipe:
                np.testing.assert_array_equal(np.asarray(c), ref[list(range(0, 16, 2))])
            [load] = [st for st in pipe.stats().stages if st.name == "load"]
        counts[skip] = load.counters
    assert counts[True]["frames kept"] == counts[False]["frames kept"] == 16
    assert counts[True]["frames decoded"] < counts[False]["frames decoded"], counts


# A window from start=0.2 s (frame 5 at 25 fps): its frame 0 is ffmpeg's frame 5, and clip(4, 3)
# counts from there; read from bytes (ops.read_file, then load_video in memory) as from the path.
@needs_video
def test_a_window_from_bytes_counts_from_its_start(clip):
    path, ref = clip
    op = video.load_video(start=0.2, select=video.FrameSelection.clip(4, 3))
    assert repr(op) == "<ferry op load_video(select=FrameSelection.clip(4, 3), start=0.2)>"
    with ferry.source([path]).map(ops.read_file).map(op).build(threads=1) as pipe:
        [from_bytes] = list(pipe)
    np.testing.assert_array_equal(np.asarray(from_bytes), ref[[5, 8, 11, 14]])
    np.testing.assert_array_equal(np.asarray(op(path)), ref[[5, 8, 11, 14]])


# FrameSelection.clips(3, 4, 2) in a pipeline gives one tensor 3 x 4 x H x W x 3 per video: each
# clip is the clip clip(4, 2) loads alone from its start (found among ffmpeg's frames, which all
# differ), the starts are the item's (a second run gives the same), and clips_at(those starts) gives
# the same bytes.
@needs_video
def test_clips_are_the_clips_loaded_alone(clip):
    path, ref = clip
    op = video.load_video(select=video.FrameSelection.clips(3, 4, 2))
    assert repr(op) == "<ferry op load_video(select=FrameSelection.clips(3, 4, 2))>"

    def run():
        with ferry.source([path] * 2).map(op).build(threads=1) as pipe:
            return [np.asarray(c) for c in pipe]

    first, again = run(), run()
    assert len(first) == 2
    for batch, same in zip(first, again):
        assert batch.shape == (3, 4, HEIGHT, WIDTH, 3)
        np.testing.assert_array_equal(batch, same)
        starts = []
        for c in batch:
            [s] = [s for s in range(FRAMES - 6) if np.array_equal(c, ref[s:s + 7:2])]
            starts.append(s)
            alone = video.load_video(select=video.FrameSelection.clip(4, 2), start=s / 25)(path)
            np.testing.assert_array_equal(c, np.asarray(alone))
        at = video.load_video(select=video.FrameSelection.clips_at(starts, 4, 2))(path)
        np.testing.assert_array_equal(np.asarray(at), batch)
    # with_indices and with_times say where the clips fell: each frame's index in the window and
    # its time (25 fps from 0), the frames ffmpeg gives at those indices.
    op = video.load_video(select=video.FrameSelection.clips(3, 4, 2), with_indices=True,
                          with_times=True)
    assert repr(op).endswith("with_indices=True, with_times=True)>")
    with ferry.source([path] * 2).map(op).build(threads=1) as pipe:
        got = list(pipe)
    for (batch, indices, times), same in zip(got, first):
        batch, indices, times = np.asarray(batch), np.asarray(indices), np.asarray(times)
        np.testing.assert_array_equal(batch, same)
        assert indices.dtype == np.int64 and indices.shape == (3, 4)
        assert times.dtype == np.float64 and times.shape == (3, 4)
        assert (np.diff(indices, axis=1) == 2).all()
        np.testing.assert_array_equal(batch, ref[indices])
        np.testing.assert_allclose(times, indices / 25, atol=1e-9)
    clip_op = video.load_video(select=video.FrameSelection.clip(4, 3), start=0.2,
                               with_indices=True)
    frames, indices = clip_op(path)
    assert np.asarray(indices).tolist() == [0, 3, 6, 9]
    np.testing.assert_array_equal(np.asarray(frames), ref[[5, 8, 11, 14]])


# format and resize act inside the decode step: BGR is RGB reversed, gray has one channel, and a
# resize gives the size asked for as (height, width), the pixels of ffmpeg's bilinear scale
# exactly (both are swscale with SWS_BILINEAR).
@needs_video
def test_format_and_resize(clip):
    path, ref = clip
    sel = video.FrameSelection.indices([7])
    rgb = np.asarray(video.load_video(select=sel)(path))
    bgr = np.asarray(video.load_video(select=sel, format="bgr")(path))
    np.testing.assert_array_equal(bgr, rgb[..., ::-1])
    gray = np.asarray(video.load_video(select=sel, format="gray")(path))
    assert gray.shape == (1, HEIGHT, WIDTH, 1)
    small = np.asarray(video.load_video(resize=(40, 32))(path))
    assert small.shape == (FRAMES, 40, 32, 3)
    scaled = np.frombuffer(ffmpeg_frames(path, "scale=32:40"), np.uint8).reshape(-1, 40, 32, 3)
    np.testing.assert_array_equal(small, scaled)


# A missing file is ferry.IOError naming it, bytes that are no video ferry.DecodeError with
# FFmpeg's reason, a selection past the frames that decode a DecodeError naming the frame, and
# an item that is neither a path nor bytes a failure naming what load_video expects and got;
# under "skip" the good clips still arrive.
@needs_video
def test_bad_inputs_fail_naming_them(clip, tmp_path):
    path, ref = clip
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"x" * 4000)
    missing = str(tmp_path / "missing.mp4")
    with (ferry.source([path, missing, str(junk), 7, path])
          .map(video.load_video(select=video.FrameSelection.indices([0])), on_error="skip",
               name="video")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        got = list(pipe)
        failures = {f.item: f for f in pipe.failures()}
    assert len(got) == 2
    assert sorted(failures) == [1, 2, 3]
    assert failures[1].code == "io" and missing in failures[1].message
    assert "No such file" in failures[1].message
    assert failures[2].code == "decode" and "Invalid data found" in failures[2].message
    assert failures[3].message == ("load_video expects a path (str or os.PathLike) or bytes "
                                   "(ferry.Bytes or a bytes-like object), got an int")
    with pytest.raises(ferry.DecodeError, match="frame 30"):
        video.load_video(select=video.FrameSelection.indices([30]))(path)


# Options ferry::video refuses are ValueErrors when the op is made: rgba, a size of 0, an unknown
# filter, a window that ends before it starts.
@needs_video
def test_bad_options_are_value_errors():
    with pytest.raises(ValueError, match="format must be 'rgb', 'bgr' or 'gray', got 'rgba'"):
        video.load_video(format="rgba")
    with pytest.raises(ValueError, match="sizes are positive"):
        video.load_video(resize=0)
    with pytest.raises(ValueError, match="filter must be"):
        video.load_video(filter="cubic")
    with pytest.raises(ValueError, match="the window is start"):
        video.load_video(start=2.0, end=1.0)
    for start, end in [(float("nan"), None), (float("inf"), None), (0.0, float("inf")),
                       (0.0, float("nan"))]:
        with pytest.raises(ValueError, match="up to a finite end after it"):
            video.load_video(start=start, end=end)
    with pytest.raises(ValueError, match="positive"):
        video.FrameSelection.uniform(0)


# Where a component is not built (simulated in a child interpreter whose module says so), the
# package says which CMake option builds it: ferry.<name> is an AttributeError, importing
# ferry.<name> an ImportError, each naming FERRY_<NAME>.
@pytest.mark.parametrize("name", ["video", "http", "shards"])
def test_a_component_not_built_names_the_option_that_builds_it(name):
    r = run_child(f"""
        import importlib.machinery, importlib.util, sys
        spec = importlib.util.find_spec("ferry")  # the package's folder, not imported yet
        folder = spec.submodule_search_locations[0]
        path = importlib.machinery.FileFinder(folder, (
            importlib.machinery.ExtensionFileLoader,
            importlib.machinery.EXTENSION_SUFFIXES)).find_spec("_ferry").origin
        native = importlib.util.spec_from_file_location("ferry._ferry", path)
        module = importlib.util.module_from_spec(native)
        native.loader.exec_module(module)
        module.has_{name} = False
        sys.modules["ferry._ferry"] = module
        import ferry
        assert "{name}" not in ferry.__all__
        try:
            ferry.{name}
        except AttributeError as e:
            print("attribute:", e)
        try:
            import ferry.{name}
        except ImportError as e:
            print("import:", e)
    """)
    assert r.returncode == 0, r.stderr
    option = f"-DFERRY_{name.upper()}=ON"
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r.stdout
    assert lines[0].startswith(f"attribute: ferry.{name} is not in this build of ferry")
    assert lines[1].startswith(f"import: ferry.{name} is not in this build of ferry")
    assert all(option in line for line in lines), r.stdout


# snap_to_keyframe moves the window's start back to the keyframe before it: a clip asked for at
# 0.6 s (frame 15) starts at the keyframe at 0.48 s (frame 12; the fixture has one every 12
# frames), ffmpeg's frames 12-15 byte for byte; without it the clip starts at frame 15.
@needs_video
def test_snap_to_keyframe_starts_the_clip_at_the_keyframe_before(clip):
    path, ref = clip
    select = video.FrameSelection.clip(4)
    snapped = video.load_video(select=select, start=0.6, snap_to_keyframe=True)
    assert "snap_to_keyframe=True" in repr(snapped)
    assert np.array_equal(np.asarray(snapped(path)), ref[12:16])
    plain = video.load_video(select=select, start=0.6)
    assert np.array_equal(np.asarray(plain(path)), ref[15:19])


# snap_to_keyframe moves each start of FrameSelection.clips_at and .clips back to the keyframe at
# or before it too (the fixture's keyframes are frames 0 and 12): clips_at([3, 15, 20, 12], 4)
# gives ffmpeg's frames 0-3 and then 12-15 three times, in the order given; clips(3, 4, 2) in a
# pipeline starts every clip at frame 0 or 12, with the same clips on a second run.
@needs_video
def test_snap_to_keyframe_moves_each_clip_start_to_the_keyframe_before(clip):
    path, ref = clip
    at = video.load_video(select=video.FrameSelection.clips_at([3, 15, 20, 12], 4),
                          snap_to_keyframe=True)(path)
    np.testing.assert_array_equal(np.asarray(at),
                                  np.stack([ref[0:4], ref[12:16], ref[12:16], ref[12:16]]))
    op = video.load_video(select=video.FrameSelection.clips(3, 4, 2), snap_to_keyframe=True)

    def run():
        with ferry.source([path] * 4).map(op).build(threads=1) as pipe:
            return [np.asarray(c) for c in pipe]

    first, again = run(), run()
    assert len(first) == 4
    for batch, same in zip(first, again):
        assert batch.shape == (3, 4, HEIGHT, WIDTH, 3)
        np.testing.assert_array_equal(batch, same)
        for c in batch:
            starts = [s for s in range(FRAMES - 6) if np.array_equal(c, ref[s:s + 7:2])]
            assert starts in ([0], [12]), f"a clip starts at frame(s) {starts}, not a keyframe"


# threads=0 (the default) lets ferry choose the decoder threads; a negative count is refused by
# name, and a chosen count shows in the op's name.
@needs_video
def test_decoder_threads_default_to_ferrys_choice(clip):
    path, ref = clip
    assert "threads" not in repr(video.load_video())
    assert "threads=3" in repr(video.load_video(threads=3))
    assert np.array_equal(np.asarray(video.load_video(threads=3)(path)), ref)
    for threads in (-1, 65):
        with pytest.raises(ferry.InvalidArgument, match="threads are 0 \\(ferry chooses\\) to 64"):
            video.load_video(threads=threads)
