# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the Python package's suite: image files made with Pillow, child interpreters for
what must be seen from outside (signals, shutdown), and the mark of the tests that need
ferry.video and FFmpeg's command-line tools."""
import gc
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

# Under the sanitizers (FERRY_SANITIZE; tests/python/CMakeLists.txt) this interpreter runs with
# the sanitizer's runtime preloaded, named again in FERRY_TEST_PRELOAD. The tools the tests run
# (ffmpeg, ffprobe) must not inherit it, or the sanitizer would report on them; child
# interpreters, which import ferry, get it back (child_env).
if os.environ.get("FERRY_TEST_PRELOAD"):
    os.environ.pop("LD_PRELOAD", None)


def child_env(**extra):
    """The environment of a child interpreter that imports ferry: this one's, with its package
    path and, under the sanitizers, their runtime preloaded; plus `extra`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **extra)
    if env.get("FERRY_TEST_PRELOAD"):
        env["LD_PRELOAD"] = env["FERRY_TEST_PRELOAD"]
    return env


def video_mark(tool, what):
    """The mark of a test that needs ferry.video and FFmpeg's CLI `tool` (its references are
    `what`), saying why it is skipped where it cannot run (pytest -rs shows it)."""
    import ferry
    return pytest.mark.skipif(
        not ferry._ferry.has_video or shutil.which(tool) is None,
        reason="ferry.video is not built (FERRY_VIDEO=OFF)" if not ferry._ferry.has_video else
        f"the {tool} CLI is not installed (Debian: ffmpeg): the references are {what}")


def run_counting_gil(builder, threads=2):
    """Builds `builder` with `threads` and runs it to its end: its items, and how many times ferry's
    threads took the GIL meanwhile (another test's pipeline freed now would count its takes, so
    garbage is collected first)."""
    import ferry
    gc.collect()
    before = ferry._ferry._gil_acquisitions()
    with builder.build(threads=threads) as pipe:
        items = list(pipe)
    return items, ferry._ferry._gil_acquisitions() - before


# How long a child interpreter may take before the test calls it hung. Generous: a hang bound,
# not a speed check.
CHILD_TIMEOUT = 30


def photo(width, height, seed):
    """A photo-like RGB image: smooth gradients, a few shapes and a little noise (JPEG-friendly,
    yet every pixel matters)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    img = np.empty((height, width, 3), np.float64)
    for c in range(3):
        fx, fy, phase = rng.uniform(0.01, 0.08, 2).tolist() + [rng.uniform(0, 6.28)]
        img[..., c] = 128 + 90 * np.sin(fx * x + fy * y + phase)
    cx, cy, r = rng.integers(0, width), rng.integers(0, height), rng.integers(5, 20)
    img[(x - cx) ** 2 + (y - cy) ** 2 < r * r] = rng.uniform(0, 255, 3)
    img += rng.normal(0, 4, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


@pytest.fixture(scope="session")
def image_files(tmp_path_factory):
    """24 PNG files and the same pictures as baseline JPEGs (quality 90), 64x48 to 96x72, with
    their pixels: {"png": [paths], "jpeg": [paths], "pixels": [arrays]}."""
    folder = tmp_path_factory.mktemp("images")
    out = {"png": [], "jpeg": [], "pixels": []}
    for i in range(24):
        width, height = (64, 48) if i % 2 == 0 else (96, 72)
        pixels = photo(width, height, i)
        png = folder / f"{i:02d}.png"
        jpeg = folder / f"{i:02d}.jpg"
        Image.fromarray(pixels).save(png)
        Image.fromarray(pixels).save(jpeg, quality=90)
        out["png"].append(str(png))
        out["jpeg"].append(str(jpeg))
        out["pixels"].append(pixels)
    return out


def run_child(code, timeout=CHILD_TIMEOUT, env=None, **kwargs):
    """Runs `code` in a child interpreter (this one, with ferry on its path, and `env`'s variables
    besides); returns the CompletedProcess, its output as text. A child still running at
    `timeout` is killed and the test fails: it hung."""
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                              env=child_env(**(env or {})),
                              capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child interpreter hung (killed after {timeout} s); its output: "
                    f"{e.stdout!r} {e.stderr!r}")
