#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""perf.compare_scaling: scaling.py on a small FFCV-like set. The set is what it says (JPEGs whose
longer side is 512, the shapes mixed), every run delivered every image, each (loader, threads)
has its row with a rate and CPU per image, and the report states FFCV's figure with its setup.

    scaling_check.py RUNNER WORK
"""
import json
import os
import subprocess
import sys

from PIL import Image


def main():
    runner, work = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    data, out = os.path.join(work, "ffcv"), os.path.join(work, "out")
    images = 48
    subprocess.run([sys.executable, os.path.join(here, "..", "scaling.py"), "--runner", runner,
                    "--data", data, "--set", "ffcv", "--images", str(images), "--reps", "1",
                    "--threads", "1,2", "--loaders", "ferry-roi-fast,tbb", "--out", out],
                   check=True)
    sizes = set()
    for name in sorted(os.listdir(data)):
        with Image.open(os.path.join(data, name)) as im:
            assert im.format == "JPEG", name
            assert max(im.size) == 512, (name, im.size)
            sizes.add(im.size)
    assert len(sizes) >= 4, sizes  # landscape, portrait, square, wide
    with open(os.path.join(out, "scaling-ffcv.json")) as f:
        report = json.load(f)
    rows = report["rows"]
    assert [(r["loader"], r["threads"]) for r in rows] == [
        ("ferry-roi-fast", 1), ("ferry-roi-fast", 2), ("tbb", 1), ("tbb", 2)], rows
    for r in rows:
        assert r["images"] == images, r
        assert r["images_per_s"] > 0 and r["cpu_s_per_1000"] > 0, r
        assert abs(r["images_per_s_per_thread"] * r["threads"] - r["images_per_s"]) < 1e-6, r
    assert report["summary"]["ffcv_published_per_vcpu"] == 326
    with open(os.path.join(out, "scaling-ffcv.md")) as f:
        md = f.read()
    assert "326 images/s per vCPU" in md and "96 vCPUs" in md, md
    print("scaling_check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
