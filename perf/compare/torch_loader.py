#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's DataLoader doing perf/compare's job, run as its own process by compare.py.

    read -> decode (Pillow) -> RandomResizedCrop(224) -> RandomHorizontalFlip -> batch 32 -> collate

over the JPEGs of --data, once, with torchvision's transforms on PIL images (what a torchvision
user writes: RandomResizedCrop resizes with Pillow's bilinear filter, which antialiases) and
num_workers worker processes. Prints one JSON object like compare_runner's: images, seconds,
first_batch_s (from creating the DataLoader's iterator, which starts the workers, to the first
batch), cpu_s (this process and its reaped workers, from the start of the loading on), max_rss_kb
(this process alone; compare.py measures the whole process tree), base_rss_kb (resident after
the imports, before the DataLoader is made: what the loader adds is the tree's peak less this).
"""
import argparse
import json
import os
import resource
import sys
import time

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from measure import cpu_seconds, resident_kb


class JpegFolder(Dataset):
    def __init__(self, paths):
        self.paths = paths
        self.transform = transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.PILToTensor(),  # uint8, C x H x W: no float conversion, like ferry's collate
        ])

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            img = Image.open(f).convert("RGB")
        return self.transform(img)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", required=True)
    ap.add_argument("--workers", type=int, default=0)
    args = ap.parse_args()
    paths = sorted(os.path.join(args.data, n) for n in os.listdir(args.data) if n.endswith(".jpg"))
    torch.manual_seed(0)
    base_kb = resident_kb()
    loader = DataLoader(JpegFolder(paths), batch_size=32, shuffle=False, num_workers=args.workers)
    cpu0 = cpu_seconds()  # not counting Python's start and `import torch`
    t0 = time.perf_counter()
    first = None
    images = 0
    it = iter(loader)
    for batch in it:
        if first is None:
            first = time.perf_counter() - t0
        images += batch.shape[0]
    seconds = time.perf_counter() - t0
    del it  # joins the workers, so their CPU time is counted below
    if images != len(paths):
        print(f"torch_loader: delivered {images} of {len(paths)} images", file=sys.stderr)
        return 1
    cpu = cpu_seconds() - cpu0
    me = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"runner": "torch", "threads": args.workers, "images": images,
                      "seconds": round(seconds, 4), "first_batch_s": round(first, 4),
                      "cpu_s": round(cpu, 3), "max_rss_kb": me.ru_maxrss,
                      "base_rss_kb": base_kb}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
