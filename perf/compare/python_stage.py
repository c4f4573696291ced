#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What one trivial Python stage costs per item: ferry pipelines over `range`-like ints with and
without `.map(lambda x: x)` (the stage's call takes the GIL on an engine thread), with the
consumer taking items one by one or in batches, alternated in each repetition, in one process.
Prints µs per item (medians) and each stage's cost: the row's µs less its row without the stage.
`--tuned`: the same pipelines with the tuner on (the stage `ferry.tuned(1, threads)`, and
`autotune=ferry.Autotune()`), where the loop also reports its own CPU time to the CPU budget.

    PYTHONPATH=build/python /usr/bin/python3 perf/compare/python_stage.py --items 100000 --reps 5
"""
import argparse
import statistics
import time

import ferry


def identity(x):
    return x


def per_item_us(items, threads, executor, batch, tuned):
    """µs per item through the pipeline: `executor` None has no Python stage."""
    b = ferry.source(list(range(items)))
    if executor:
        b = b.map(identity, concurrency=ferry.tuned(1, threads) if tuned else threads,
                  executor=executor)
    if batch:
        b = b.batch(batch)
    pipe = b.build(threads=threads, autotune=ferry.Autotune() if tuned else None)
    start = time.perf_counter()
    n = 0
    for x in pipe:
        n += len(x) if batch else 1
    seconds = time.perf_counter() - start
    pipe.close()
    if n != items:
        raise SystemExit(f"delivered {n} of {items} items")
    return seconds / items * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="1,2", help="pipeline threads = the stage's concurrency")
    ap.add_argument("--batch", type=int, default=64, help="the batched rows' batch size")
    ap.add_argument("--tuned", action="store_true", help="the tuner on (ferry.tuned stages)")
    args = ap.parse_args()
    rows = [(int(t), b) for t in args.threads.split(",") for b in (0, args.batch)]
    variants = (None, "compute", "io")  # no stage; the stage on each executor
    times = {(r, v): [] for r in rows for v in variants}
    for _ in range(args.reps):
        for r in rows:
            for v in variants:
                times[(r, v)].append(per_item_us(args.items, r[0], v, r[1], args.tuned))
    tuned = ", tuned" if args.tuned else ""
    print(f"{args.items} ints, median of {args.reps}{tuned}, ferry {ferry.__version__}\n")
    print("| threads = concurrency | consumer takes | without the stage, µs/item "
          "| stage on `compute`: µs/item, its cost | stage on `io`: µs/item, its cost "
          "| items/s, stage on `compute` |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in rows:
        base = statistics.median(times[(r, None)])
        on = {v: statistics.median(times[(r, v)]) for v in variants[1:]}
        taken = f"batches of {r[1]}" if r[1] else "items"
        print(f"| {r[0]} | {taken} | {base:.2f} | {on['compute']:.2f}, {on['compute'] - base:.2f} "
              f"| {on['io']:.2f}, {on['io'] - base:.2f} | {1e6 / on['compute']:,.0f} |")

if __name__ == "__main__":
    main()
