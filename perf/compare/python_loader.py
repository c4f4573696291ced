#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ferry from Python doing perf/compare's job, run as its own process by compare.py.

    read -> decode_random_resized_crop(224, flip=0.5) -> batch 32 -> collate -> torch.from_dlpack

over the JPEGs of --data, once, with the Python package's native ops: the same stages as
compare_runner's ferry-roi (--runner roi) and ferry-roi-fast (--runner roi-fast) rows (read on 2
I/O threads, decode with concurrency = threads, ferry's threads = threads), the loop and the
DLPack hand-over in Python. --python-stage adds one trivial Python stage per item after the
decode (lambda img: img, concurrency = threads): what a Python function in the pipeline costs.
The crops are drawn from each item's seed (ferry's item_rng), not compare_runner's rng_for: the
same distribution, other boxes. Prints one JSON object like compare_runner's: runner, threads,
images, seconds, first_batch_s (from building the pipeline to the first batch), cpu_s (this
process while loading, not counting Python's start and the imports), max_rss_kb, base_rss_kb
(resident after the imports, before the pipeline is built: what the loader adds is the peak less
this).
"""
import argparse
import json
import os
import resource
import sys
import time

import torch

import ferry
from ferry import image, ops

from measure import cpu_seconds, resident_kb

BATCH = 32
SIDE = 224


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runner", choices=["roi", "roi-fast"], default="roi-fast")
    ap.add_argument("--python-stage", action="store_true")
    args = ap.parse_args()
    paths = sorted(os.path.join(args.data, n) for n in os.listdir(args.data) if n.endswith(".jpg"))
    base_kb = resident_kb()
    cpu0 = cpu_seconds(children=False)
    t0 = time.perf_counter()
    b = (ferry.source(paths)
         .map(ops.read_file, concurrency=2, executor="io", name="read")
         .map(image.decode_random_resized_crop(SIDE, flip=0.5, fast=args.runner == "roi-fast"),
              concurrency=args.threads, name="decode"))
    if args.python_stage:
        b = b.map(lambda img: img, concurrency=args.threads, name="python")
    pipe = b.batch(BATCH).map(ops.collate, name="collate").build(threads=args.threads)
    first = None
    images = 0
    for x in pipe:
        t = torch.from_dlpack(x)
        if first is None:
            first = time.perf_counter() - t0
        images += t.shape[0]
    seconds = time.perf_counter() - t0
    pipe.close()
    if images != len(paths):
        print(f"python_loader: delivered {images} of {len(paths)} images", file=sys.stderr)
        return 1
    cpu = cpu_seconds(children=False) - cpu0
    name = "python-" + args.runner + ("-pystage" if args.python_stage else "")
    print(json.dumps({"runner": name, "threads": args.threads, "images": images,
                      "seconds": round(seconds, 4), "first_batch_s": round(first, 4),
                      "cpu_s": round(cpu, 3),
                      "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "base_rss_kb": base_kb}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
