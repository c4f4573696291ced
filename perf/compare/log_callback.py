#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What another library's FFmpeg log callback costs ferry's video loading from Python.

FFmpeg has one log callback per process. ferry installs its own at its first decode; PyAV
installs one when imported (`import torchvision` imports PyAV where python3-av is installed), and
that one takes the GIL for every FFmpeg message. This script loads clips through a ferry pipeline
(clip(16, 2) at 3.3 s, 112 x 112, two I/O threads) while the consumer spends 20 ms in Python per
clip (a training step's Python work, holding the GIL), with PyAV imported --av never, before
ferry's first decode (as a script's imports at its top) or after it. Run each in its own process,
alternated:

    for i in 1 2 3 4 5; do for w in never before after; do
        PYTHONPATH=build/python /usr/bin/python3 perf/compare/log_callback.py --av $w --data DIR
    done; done

DIR: a folder of .mp4 files (video_compare.py's, e.g. $TMPDIR/ferry-video-compare/1280x720-10s-g60-bf2).
Prints one line: the setting and clips/s.
"""
import argparse
import glob
import importlib
import os
import sys
import time


def busy(seconds):
    """Pure Python work holding the GIL for `seconds`."""
    t, x = time.perf_counter(), 0
    while time.perf_counter() - t < seconds:
        for i in range(1000):
            x += i
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--av", choices=["never", "before", "after"], required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--clips", type=int, default=32)
    args = ap.parse_args()
    if args.av == "before":
        importlib.import_module("av")
    import ferry
    from ferry import video
    paths = sorted(glob.glob(os.path.join(args.data, "*.mp4")))
    op = video.load_video(select=video.FrameSelection.clip(16, 2), start=3.3, resize=112)
    op(paths[0])  # ferry's first decode: its log callback is installed
    if args.av == "after":
        importlib.import_module("av")
    items = [paths[i % len(paths)] for i in range(args.clips)]
    t0, n = time.perf_counter(), 0
    with ferry.source(items).map(op, concurrency=2, executor="io").build(threads=1) as pipe:
        for _ in pipe:
            busy(0.02)
            n += 1
    print(f"PyAV imported {args.av}: {n / (time.perf_counter() - t0):.2f} clips/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
