# SPDX-License-Identifier: Apache-2.0
"""This program demonstrates training a torch video model from Python on clips ferry decodes.
It is examples/video_trainer's task from Python: 64x64 H.264 videos (3 B-frames) of a random
Fashion-MNIST item moving down, left, right or up over a noisy background, labelled by the
direction, so that only motion tells the classes apart; a small 3D CNN learns it from clips of 8
frames at stride 2.

    PYTHONPATH=build/python python3 examples/python/train_video_motion.py \
        --cache build/video-motion-cache

The items are (path, label) pairs, which ferry carries natively: load_video draws each training
clip's start inside the video (FrameSelection.clips, from the item's numbers), and each test item
is ((path, start, end), label): the middle clip, as an item window. The videos are made once
under --cache with numpy and the ffmpeg CLI, from Debian's dataset-fashion-mnist. See
examples/README.md.
"""
import argparse
import concurrent.futures
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

import ferry
from ferry import ops, video
from train_fashion_mnist import FASHION_SOURCE, read_split
from training import fit, report

DIRECTIONS = {"down": (0.0, 1.0), "left": (-1.0, 0.0), "right": (1.0, 0.0), "up": (0.0, -1.0)}
SIDE, FRAMES, FPS = 64, 24, 25  # each video: 24 frames of 64 x 64 at 25 fps
CLIP, STRIDE, SIZE = 8, 2, 32  # each clip: 8 frames at stride 2, 32 x 32 gray


def draw_video(item, direction, rng):
    """FRAMES x SIDE x SIDE uint8: `item` (28 x 28) moving in `direction`, give or take 20
    degrees, at 0.8 to 1.6 pixels per frame, from a uniform start, over a still texture with fresh
    noise in every frame; the frame wraps around, so one frame says nothing of the direction."""
    dx, dy = DIRECTIONS[direction]
    turn = rng.uniform(-1, 1) * math.radians(20)
    speed = rng.uniform(0.8, 1.6)
    vx = speed * (dx * math.cos(turn) - dy * math.sin(turn))
    vy = speed * (dx * math.sin(turn) + dy * math.cos(turn))
    x0, y0 = rng.uniform(0, SIDE, 2)
    texture = np.kron(rng.uniform(30, 110, (8, 8)), np.ones((8, 8)))  # still, blocky
    ink = np.where(item > 0, 20 + item.astype(np.int32) * 85 // 100, 0)
    frames = np.empty((FRAMES, SIDE, SIDE), np.uint8)
    for t in range(FRAMES):
        frame = np.clip(texture + rng.normal(0, 12, (SIDE, SIDE)), 0, 255)
        ys = (int(math.floor(y0 + vy * t)) + np.arange(28)) % SIDE
        xs = (int(math.floor(x0 + vx * t)) + np.arange(28)) % SIDE
        frame[np.ix_(ys, xs)] = np.maximum(frame[np.ix_(ys, xs)], ink)
        frames[t] = frame
    return frames


def encode(frames, path):
    """frames as an H.264 MP4 (libx264, 3 B-frames, one keyframe) by the ffmpeg CLI."""
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f",
                    "rawvideo", "-pix_fmt", "gray", "-s", f"{SIDE}x{SIDE}", "-r", str(FPS), "-i",
                    "-", "-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-g", str(FRAMES),
                    "-pix_fmt", "yuv420p", str(path)], input=frames.tobytes(), check=True)


def motion_videos(cache, train_per_class, test_per_class):
    """The video folder under cache (made on first use): DIR/<split>/<direction>/NNN.mp4, the
    items drawn from Fashion-MNIST's first 6000 training and first 1000 test images."""
    root = Path(cache) / f"fashion-motion-{train_per_class}-{test_per_class}"
    if (root / ".complete").exists():
        return root
    if not (FASHION_SOURCE / "train-images-idx3-ubyte.gz").exists():
        sys.exit(f"Fashion-MNIST is not installed ({FASHION_SOURCE} is missing): "
                 "apt-get install dataset-fashion-mnist")
    print(f"generating {4 * (train_per_class + test_per_class)} videos in {root} (once)",
          flush=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fashion-motion-", dir=root.parent))
    jobs = []
    for split, prefix, pool, count, seed in (("train", "train", 6000, train_per_class, 1),
                                             ("test", "t10k", 1000, test_per_class, 2)):
        items = read_split(prefix)[0][:pool]
        rng = np.random.default_rng(seed)
        for direction in DIRECTIONS:
            (staging / split / direction).mkdir(parents=True)
            for i in range(count):
                frames = draw_video(items[rng.integers(len(items))], direction, rng)
                jobs.append((frames, staging / split / direction / f"{i:03d}.mp4"))
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(lambda job: encode(*job), jobs))
    (staging / ".complete").write_text("ok\n")
    staging.rename(root)
    return root


def listing(folder):
    """(path, label) pairs of folder/<direction>/*.mp4, label = the direction's index."""
    return [(str(p), label) for label, d in enumerate(DIRECTIONS)
            for p in sorted((folder / d).glob("*.mp4"))]


class Net(nn.Module):
    """A 3D CNN over (batch, 1, time, height, width): conv3d 8-16-32 with batch norm and max
    pooling, a global max, a linear layer."""

    def __init__(self, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv3d(1, 8, (3, 5, 5), padding=(1, 2, 2)), nn.BatchNorm3d(8), nn.ReLU(),
            nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(8, 16, 3, padding=1), nn.BatchNorm3d(16), nn.ReLU(), nn.MaxPool3d(2),
            nn.Conv3d(16, 32, 3, padding=1), nn.BatchNorm3d(32), nn.ReLU())
        self.classifier = nn.Linear(32, classes)

    def forward(self, x):
        return self.classifier(self.features(x).amax(dim=(2, 3, 4)))


def pipeline(items, select, batch, threads, sampling=None):
    """(x, label) items -> [clips N x 1 x 8 x 32 x 32 x 1 uint8, labels N int64] per batch: the
    labels travel beside the clips, every stage native."""
    load = video.load_video(select=select, format="gray", resize=SIZE)
    return (ferry.source(items, sampling=sampling)
            .map(load, concurrency=threads, executor="io", name="decode")
            .batch(batch)
            .map(ops.collate, name="collate")
            .build(threads=threads))


def to_model(clips, labels):
    """A batch from ferry as the model's input, batch x 1 x time x height x width in 0..1."""
    x = torch.from_dlpack(clips).float().div_(255)
    return x.reshape(x.shape[0], 1, CLIP, SIZE, SIZE), torch.from_dlpack(labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", required=True, help="where the videos are (or get) made")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--threads", type=int, default=2, help="ferry's decode threads")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    root = motion_videos(args.cache, 80, 25)
    train, test = listing(root / "train"), listing(root / "test")
    # The test items: each video's middle clip, as the window (path, start, None).
    middle = (FRAMES - ((CLIP - 1) * STRIDE + 1)) // 2 / FPS
    test = [((path, middle, None), label) for path, label in test]
    print(f"{len(train)} train / {len(test)} test videos, {len(DIRECTIONS)} classes; clips of "
          f"{CLIP} frames at stride {STRIDE}, {SIZE}x{SIZE} gray (ferry {ferry.__version__}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} torch threads)", flush=True)

    torch.manual_seed(args.seed)
    model = Net(len(DIRECTIONS))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    steps = args.epochs * math.ceil(len(train) / args.batch)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    train_pipe = pipeline(train, video.FrameSelection.clips(1, CLIP, STRIDE), args.batch,
                          args.threads, ferry.Sampling(shuffle=True, seed=args.seed))
    test_pipe = pipeline(test, video.FrameSelection.clip(CLIP, STRIDE), 50, args.threads)

    accuracy = fit(model, optimizer, train_pipe, test_pipe, to_model, args.epochs, "clips", 3,
                   schedule)
    return report(train_pipe, test_pipe, accuracy, 3, f" (chance {1 / len(DIRECTIONS):.3f})")

if __name__ == "__main__":
    sys.exit(main())
