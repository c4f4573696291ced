#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""perf.compare_video: video_compare.py on two small videos. Every loader delivers every clip (a
run that does not stops the script), each row has its rate, CPU and memory, ferry decodes fewer
frames per clip than PyAV by hand (skip_nonref) while the frames are the same, ferry's two steps
apart (demux_video, decode_video) draw the same clips and decode as many frames, and the script's
same-frames check stops on a loader that loads other frames.

    video_compare_check.py WORK   (PYTHONPATH: the built package)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))


def main():
    work = sys.argv[1]
    out, data = os.path.join(work, "out"), os.path.join(work, "videos")
    clips = 16
    common = ["--files", "2", "--size", "320x180", "--seconds", "4", "--data", data]
    subprocess.run([sys.executable, os.path.join(HERE, "..", "video_compare.py"), *common,
                    "--clips", str(clips), "--reps", "1", "--workers", "0,2",
                    "--loaders", "pyav,torchvision,video_reader", "--ferry", "load_video,steps",
                    "--check", "4", "--out", out,
                    "--python-package", os.environ["PYTHONPATH"]], check=True)
    with open(os.path.join(out, "video_compare.json")) as f:
        rows = json.load(f)
    assert [(r["loader"], r["parallel"]) for r in rows] == [
        ("ferry", 1), ("ferry", 2), ("ferry-steps", 1), ("ferry-steps", 2), ("pyav", 0),
        ("pyav", 2), ("torchvision", 0),
        ("torchvision", 2), ("video_reader", 0), ("video_reader", 2)], rows
    for r in rows:
        assert r["clips_per_s"][0] > 0 and r["cpu_ms_per_clip"] > 0 and r["peak_rss_mb"] > 0, r
    decoded = {(r["loader"], r["parallel"]): r["frames_decoded_per_clip"] for r in rows}
    # 31 frames span a clip; both decode from the keyframe before it; ferry skips the B-frames
    # nothing selected needs.
    assert 31 <= decoded[("pyav", 0)] and decoded[("ferry", 1)] < decoded[("pyav", 0)], decoded
    assert decoded[("ferry", 1)] == decoded[("ferry", 2)], decoded
    # demux_video then decode_video (each run checked that it drew load_video's starts) decodes
    # the same frames.
    assert decoded[("ferry-steps", 1)] == decoded[("ferry-steps", 2)] == decoded[("ferry", 1)]

    # The check itself: a PyAV loader one frame late is caught.
    import video_compare
    import video_loader
    folder = os.path.join(data, "320x180-4s-g60-bf2")
    with open(os.path.join(folder, f"starts-{clips}.json")) as f:
        starts = json.load(f)
    right = video_loader.Clips.pyav_clip
    video_loader.Clips.pyav_clip = lambda self, path, start, *a: right(self, path, start + 1, *a)
    try:
        video_compare.check_same_frames(folder, starts, 2)
    except SystemExit as e:
        assert "PyAV's clip is not ferry's" in str(e), e
    else:
        raise AssertionError("a PyAV clip one frame late passed the same-frames check")
    print("video_compare_check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
