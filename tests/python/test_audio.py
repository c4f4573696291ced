# SPDX-License-Identifier: Apache-2.0
"""ferry.video.decode_audio: the samples the ffmpeg CLI decodes (float32, channels x samples), from
paths and from bytes, resampled and mixed as asked, windows of exactly their length, in a native
chain that takes no GIL per item; bad files, wrong inputs and meaningless options are failures
that name them."""
import subprocess

import numpy as np
import pytest
from conftest import run_counting_gil, video_mark

import ferry
from ferry import ops

if ferry._ferry.has_video:
    from ferry import video
needs_video = video_mark("ffmpeg", "its samples")

FFMPEG = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
RATE, SECONDS = 44100, 2


@pytest.fixture(scope="module")
def tone(tmp_path_factory):
    """2 s of stereo FLAC at 44.1 kHz (440 Hz left, 1000 Hz right), and ffmpeg's samples of it
    as float32, channels x samples (FLAC is lossless and s16 -> float exact: the same bits)."""
    path = tmp_path_factory.mktemp("audio") / "tone.flac"
    subprocess.run(FFMPEG + ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate={RATE}:"
                             f"duration={SECONDS}", "-f", "lavfi", "-i",
                             f"sine=frequency=1000:sample_rate={RATE}:duration={SECONDS}",
                             "-filter_complex", "[0:a][1:a]amerge=inputs=2", "-c:a", "flac",
                             str(path)], check=True, capture_output=True)
    raw = subprocess.run(FFMPEG + ["-i", str(path), "-f", "f32le", "-"], check=True,
                         capture_output=True).stdout
    ref = np.frombuffer(raw, np.float32).reshape(-1, 2).T
    assert ref.shape == (2, RATE * SECONDS)
    return str(path), ref


def frequency(x, rate):
    """A sine's frequency from its zero crossings."""
    crossings = np.nonzero(np.diff(np.signbit(x)))[0]
    return (len(crossings) - 1) / 2 / ((crossings[-1] - crossings[0]) / rate)


# The whole file, read by a native chain from paths: ffmpeg's samples, bit for bit, and no GIL
# taken for any item.
@needs_video
def test_whole_files_are_ffmpegs_samples(tone):
    path, ref = tone
    got, gil_takes = run_counting_gil(
        ferry.source([path] * 3).map(video.decode_audio(), concurrency=2))
    assert gil_takes == 0
    assert len(got) == 3
    for a in got:
        assert isinstance(a, ferry.Tensor) and a.shape == (2, RATE * SECONDS)
        np.testing.assert_array_equal(np.asarray(a), ref)


# A window [start, end) at 16 kHz mono, from bytes: exactly (end - start) x 16000 samples, the two
# tones mixed into one channel; at the native rate a window is the whole file's samples there.
@needs_video
def test_windows_resample_and_mix_to_exact_lengths(tone):
    path, ref = tone
    with open(path, "rb") as f:
        data = f.read()
    a = np.asarray(video.decode_audio(sample_rate=16000, channels=1, start=0.5, end=1.25)(data))
    assert a.dtype == np.float32 and a.shape == (1, 12000)
    spectrum = np.abs(np.fft.rfft(a[0]))
    peaks = sorted(np.argsort(spectrum)[-2:] * 16000 / len(a[0]))
    assert abs(peaks[0] - 440) < 3 and abs(peaks[1] - 1000) < 3
    native = np.asarray(video.decode_audio(start=0.5, end=1.25)(path))
    np.testing.assert_array_equal(native, ref[:, 22050:55125])
    up = np.asarray(video.decode_audio(sample_rate=48000, channels=2, end=1.0)(path))
    assert up.shape == (2, 48000)
    assert abs(frequency(up[1], 48000) - 1000) < 5
    assert repr(video.decode_audio(sample_rate=16000, channels=1, start=0.5, end=1.25)) == (
        "<ferry op decode_audio(sample_rate=16000, channels=1, start=0.5, end=1.25)>")


# samples=N gives every window exactly N samples: one that runs past the file's end holds ffmpeg's
# samples, then silence; windows of one length collate into one tensor, where the same windows
# without it do not; the stage counts the silence as "padded samples".
@needs_video
def test_windows_of_a_fixed_length_collate(tone):
    path, ref = tone
    op = video.decode_audio(start=1.5, end=2.5, samples=44100)
    assert repr(op) == "<ferry op decode_audio(start=1.5, end=2.5, samples=44100)>"
    tail = np.asarray(op(path))
    assert tail.shape == (2, 44100)
    np.testing.assert_array_equal(tail[:, :22050], ref[:, 66150:])
    assert not tail[:, 22050:].any()
    starts = [0.0, 0.5, 1.25, 1.75]

    with (ferry.source(starts)
          .map(lambda s: video.decode_audio(start=s, end=s + 1, samples=44100)(path),
               name="audio")
          .batch(4).map(ops.collate).build(threads=1)) as pipe:
        [batch] = list(pipe)
        [audio] = [st for st in pipe.stats().stages if st.name == "audio"]
    got = np.asarray(batch)
    assert got.shape == (4, 2, 44100)
    for i, s in enumerate(starts):
        first = int(s * RATE)
        kept = min(RATE, RATE * SECONDS - first)
        np.testing.assert_array_equal(got[i, :, :kept], ref[:, first:first + kept])
        assert not got[i, :, kept:].any()
    assert audio.counters["padded samples"] == 11025 + 33075
    # with_length: each window with the samples that decoded, collated into their lengths.
    op = video.decode_audio(start=1.5, end=2.5, samples=44100, with_length=True)
    assert repr(op).endswith("samples=44100, with_length=True)>")
    alone, n = op(path)
    assert n == 22050 and np.asarray(alone).shape == (2, 44100)
    with (ferry.source(starts)
          .map(lambda s: video.decode_audio(start=s, end=s + 1, samples=44100,
                                            with_length=True)(path))
          .batch(4).map(ops.collate).build(threads=1)) as pipe:
        [(batch, lengths)] = list(pipe)
    assert np.asarray(lengths).tolist() == [44100, 44100, 33075, 11025]
    np.testing.assert_array_equal(np.asarray(batch), got)
    # The native op's tuples collate natively too (no Python stage between them).
    with (ferry.source([path] * 3)
          .map(video.decode_audio(start=1.5, samples=44100, with_length=True))
          .batch(3).map(ops.collate).build(threads=1)) as pipe:
        [(batch, lengths)] = list(pipe)
    assert np.asarray(lengths).tolist() == [22050] * 3
    np.testing.assert_array_equal(np.asarray(batch)[:, :, :22050], np.stack([ref[:, 66150:]] * 3))
    with (ferry.source(starts)
          .map(lambda s: video.decode_audio(start=s, end=s + 1)(path))
          .batch(4).map(ops.collate, on_error="skip").build(threads=1,
                                                           max_epoch_failure_rate=1.0)) as pipe:
        assert list(pipe) == []
        [failure] = pipe.failures()
    assert "collate" in failure.message, failure.message


# random_window=0.5 in a pipeline: each item's window starts where its numbers put it (with_start
# says where, in samples), holds ffmpeg's samples from there, and is the same on a second run;
# called outside a pipeline, there is no item to draw from.
@needs_video
def test_random_windows_are_the_items_and_ffmpegs_samples(tone):
    path, ref = tone
    op = video.decode_audio(random_window=0.5, with_length=True, with_start=True)
    assert repr(op) == ("<ferry op decode_audio(random_window=0.5, with_length=True, "
                        "with_start=True)>")

    def run():
        with ferry.source([path] * 12).map(op, concurrency=2).build(threads=2) as pipe:
            return list(pipe)

    first, again = run(), run()
    starts = [s for _, _, s in first]
    assert starts == [s for _, _, s in again]
    assert len(set(starts)) >= 10
    for audio, n, s in first:
        assert n == RATE // 2 and 0 <= s <= RATE * SECONDS - RATE // 2
        np.testing.assert_array_equal(np.asarray(audio), ref[:, s:s + n])
    with pytest.raises(ValueError, match="random_window draws its start from the item's numbers"):
        op(path)


# A missing file is an io failure, junk a decode failure naming FFmpeg's reason, an int a failure
# naming what the op expects; a window past the data a DecodeError saying so.
@needs_video
def test_bad_inputs_fail_naming_them(tone, tmp_path):
    path, _ = tone
    junk = tmp_path / "junk.flac"
    junk.write_bytes(b"x" * 4000)
    missing = str(tmp_path / "missing.flac")
    with (ferry.source([path, missing, str(junk), 7])
          .map(video.decode_audio(end=0.1), on_error="skip", name="audio")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        got = list(pipe)
        failures = {f.item: f for f in pipe.failures()}
    assert len(got) == 1
    assert sorted(failures) == [1, 2, 3]
    assert failures[1].code == "io" and "No such file" in failures[1].message
    assert failures[2].code == "decode" and "Invalid data found" in failures[2].message
    assert failures[3].message == ("decode_audio expects a path (str or os.PathLike) or bytes "
                                   "(ferry.Bytes or a bytes-like object), got an int")
    with pytest.raises(ferry.DecodeError, match="no audio in the window starting at 9.000 s"):
        video.decode_audio(start=9.0)(path)


# Options that cannot mean anything are ValueErrors when the op is made.
@needs_video
@pytest.mark.parametrize("kwargs, words", [
    ({"sample_rate": -1}, "the rate is 0 \\(the stream's\\) to 768000 Hz, got -1"),
    ({"sample_rate": 2_000_000_000}, "to 768000 Hz"),
    ({"channels": 65}, "channels are 0 \\(the stream's\\) to 64, got 65"),
    ({"stream": -2}, "stream is -1"),
    ({"max_samples": -1}, "max_samples is 0"),
    ({"samples": -1}, "samples is 0 \\(as many as decode\\) up to max_samples, got -1"),
    ({"samples": 1001, "max_samples": 1000}, "up to max_samples, got 1001"),
    ({"random_window": -1.0}, "random_window is 0 \\(none\\) or a positive length"),
    ({"random_window": float("inf")}, "random_window is 0 \\(none\\) or a positive length"),
    ({"start": float("nan")}, "up to a finite end after it"),
    ({"start": 2.0, "end": 1.0}, "up to a finite end after it"),
    ({"end": float("inf")}, "up to a finite end after it"),
    ({"timeout": 0}, "timeout is a positive number of seconds"),
])
def test_bad_options_are_value_errors(kwargs, words):
    with pytest.raises(ValueError, match=words):
        video.decode_audio(**kwargs)
