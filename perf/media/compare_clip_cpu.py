#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""clip_cpu from two or more builds, in turn: the before/after of a change to the video decoder.

Each round runs every build's clip_cpu once, the order reversed every other round, so that the
machine's drift hits the builds alike. Reports, per encoding and decoder thread count, each
build's median CPU and wall milliseconds per clip, and each build's median over the first
build's (per round, then the median). Stops if two builds' checksums differ: they decoded other
frames.

    perf/media/compare_clip_cpu.py --rounds 5 before=/tmp/base/perf/clip_cpu after=build/perf/clip_cpu
"""

import argparse
import json
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="NAME=PATH")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clips", type=int, default=48)
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    builds = [b.partition("=")[::2] for b in args.builds]
    if any(not name or not path for name, path in builds):
        ap.error("builds are NAME=PATH")

    runs = {name: [] for name, _ in builds}  # name -> [ {key: row} per round ]
    for r in range(args.rounds):
        order = builds if r % 2 == 0 else list(reversed(builds))
        for name, path in order:
            out = subprocess.run([path, "--clips", str(args.clips), "--threads", args.threads],
                                 check=True, capture_output=True, text=True).stdout
            rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            runs[name].append({(row["encoding"], row["threads"]): row for row in rows})
        print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)

    first = builds[0][0]
    print("| encoding | decoder threads | " +
          " | ".join(f"{n}: CPU ms, wall ms per clip" for n, _ in builds) + " | " +
          " | ".join(f"{n} ÷ {first}: CPU, wall" for n, _ in builds[1:]) + " |")
    print("|---|---:|" + "---:|" * (2 * len(builds) - 1))
    for key in runs[first][0]:
        sums = {runs[n][r][key]["checksum"] for n, _ in builds for r in range(args.rounds)}
        if len(sums) != 1:
            sys.exit(f"{key}: the builds decoded different frames (checksums {sorted(sums)})")
        cells = []
        for n, _ in builds:
            cpu = statistics.median(run[key]["cpu_ms"] for run in runs[n])
            wall = statistics.median(run[key]["wall_ms"] for run in runs[n])
            cells.append(f"{cpu:.1f}, {wall:.1f}")
        for n, _ in builds[1:]:
            ratio = [runs[n][r][key]["cpu_ms"] / runs[first][r][key]["cpu_ms"]
                     for r in range(args.rounds)]
            wall = [runs[n][r][key]["wall_ms"] / runs[first][r][key]["wall_ms"]
                    for r in range(args.rounds)]
            cells.append(f"**{statistics.median(ratio):.3f}**, {statistics.median(wall):.3f}")
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
