# SPDX-License-Identifier: Apache-2.0
"""This program demonstrates training a torch model from Python on image files fed by ferry.
It trains a small CNN on Fashion-MNIST's PNG files: native stages read and decode them without
the GIL, batches reach torch by DLPack, and the labels travel through the pipeline beside the
images.

    PYTHONPATH=build/python python3 examples/python/train_fashion_mnist.py \
        --cache build/fashion-mnist-cache

The data is an image folder, DIR/train/<class>/*.png and DIR/test/<class>/*.png: --data DIR, or
--cache DIR, where DIR/fashion-mnist is unpacked from Debian's dataset-fashion-mnist on first
use (the same tree the C++ image_trainer makes). See examples/README.md.
"""
import argparse
import gzip
import struct
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn

import ferry
from ferry import image, ops
from training import fit, report

FASHION_SOURCE = Path("/usr/share/datasets/fashion-mnist")
FASHION_CLASSES = ["t-shirt_top", "trouser", "pullover", "dress", "coat", "sandal", "shirt",
                   "sneaker", "bag", "ankle_boot"]
# Fashion-MNIST's training-set pixel mean and standard deviation, on the 0..1 scale.
MEAN, STD = 0.2860, 0.3530


def read_split(prefix):
    """One IDX split of Debian's Fashion-MNIST ("train" or "t10k"): (images n x 28 x 28 uint8,
    labels n uint8)."""
    import numpy as np

    with gzip.open(FASHION_SOURCE / f"{prefix}-images-idx3-ubyte.gz") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        pixels = np.frombuffer(f.read(), np.uint8)
    with gzip.open(FASHION_SOURCE / f"{prefix}-labels-idx1-ubyte.gz") as f:
        label_magic, label_count = struct.unpack(">II", f.read(8))
        labels = np.frombuffer(f.read(), np.uint8)
    if magic != 0x803 or label_magic != 0x801 or label_count != n or \
            pixels.size < n * rows * cols:
        raise RuntimeError(f"unexpected IDX headers in {FASHION_SOURCE}")
    return pixels[:n * rows * cols].reshape(n, rows, cols), labels


def unpack_split(prefix, out):
    """Writes one IDX split (images and labels) as out/<class>/<index>.png."""
    from PIL import Image

    pixels, labels = read_split(prefix)
    n = len(labels)
    for c in FASHION_CLASSES:
        (out / c).mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.fromarray(pixels[i]).save(out / FASHION_CLASSES[labels[i]] / f"{i:05d}.png")


def fashion_mnist(cache):
    """The Fashion-MNIST image folder under cache, unpacked there on first use."""
    root = Path(cache) / "fashion-mnist"
    if (root / ".complete").exists():
        return root
    if not (FASHION_SOURCE / "train-images-idx3-ubyte.gz").exists():
        sys.exit(f"Fashion-MNIST is not installed ({FASHION_SOURCE} is missing): "
                 "apt-get install dataset-fashion-mnist, or give --data DIR")
    print(f"unpacking Fashion-MNIST into {root} (once)", flush=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fashion-mnist-", dir=root.parent))
    unpack_split("train", staging / "train")
    unpack_split("t10k", staging / "test")
    (staging / ".complete").write_text("ok\n")
    staging.rename(root)
    return root


class Net(nn.Module):
    """Two convolutions and two linear layers: about 0.91 test accuracy after 5 epochs."""

    def __init__(self, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3),
            nn.Linear(128, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def pipeline(files, batch, threads, sampling=None):
    """files (LabelledFiles) -> [images N x 28 x 28 x 1 uint8, labels N int64] per batch, every
    stage native: read and decode run in ferry's threads without the GIL."""
    return (ferry.source(files, sampling=sampling)
            .map(ops.read_file, concurrency=4, executor="io", name="read")
            .map(image.decode_image(format="gray", resize=28), concurrency=threads,
                 name="decode")
            .batch(batch)
            .map(ops.collate, name="collate")
            .build(threads=threads, in_flight=8 * batch))


def to_model(images, labels):
    """A batch from ferry as the model's input: the same memory (DLPack), then normalised."""
    x = torch.from_dlpack(images).permute(0, 3, 1, 2).float().div_(255)
    return x.sub_(MEAN).div_(STD), torch.from_dlpack(labels)


def subset(files, n):
    """At most n of files, every class represented: an evenly strided slice of the listing
    (which goes class by class)."""
    if n <= 0 or n >= len(files):
        return files
    return files[::len(files) // n][:n]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data", help="an image folder with train/ and test/ subfolders")
    where.add_argument("--cache", help="where Fashion-MNIST is (or gets) unpacked")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=2, help="ferry's compute threads")
    parser.add_argument("--max-items", type=int, default=0, help="train on at most this many")
    parser.add_argument("--max-test-items", type=int, default=0)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    root = Path(args.data) if args.data else fashion_mnist(args.cache)
    train = subset(ferry.sources.image_folder(root / "train"), args.max_items)
    test = subset(ferry.sources.image_folder(root / "test"), args.max_test_items)
    if train.classes != test.classes:
        sys.exit(f"train/ and test/ name different classes: {train.classes} vs {test.classes}")
    print(f"{len(train)} train / {len(test)} test images, {len(train.classes)} classes "
          f"(ferry {ferry.__version__}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch threads)", flush=True)

    torch.manual_seed(args.seed)
    model = Net(len(train.classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_pipe = pipeline(train, args.batch, args.threads,
                          ferry.Sampling(shuffle=True, seed=args.seed))
    test_pipe = pipeline(test, 256, args.threads)

    accuracy = fit(model, optimizer, train_pipe, test_pipe, to_model, args.epochs, "img", 4)
    return report(train_pipe, test_pipe, accuracy, 4)

if __name__ == "__main__":
    sys.exit(main())
