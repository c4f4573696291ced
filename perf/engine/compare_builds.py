#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""engine_overhead from two builds, alternated: the before/after of a change to the engine.

Each round runs every build's engine_overhead once (--json), the order reversed every other
round, so that the machine's drift hits both builds alike. Reports, per build and thread count,
the median rate of each variant and the median of each run's in-process ratio ferry / tbb::flow
(the ratio the issue's goal names: every run measures its own baseline), with how busy the
machine was (engine_overhead's own reading of /proc/stat) and `uptime`.

    perf/engine/compare_builds.py --rounds 12 --items 500000 \\
        before=build-base/perf/engine_overhead:ferry,flow \\
        after=build/perf/engine_overhead:ferry,flow,flow-ungated

A build is NAME=PATH[:VARIANTS]; VARIANTS defaults to ferry,flow (a build from before
`flow-ungated` existed does not know that variant).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


def parse_build(text):
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH[:VARIANTS], got {text!r}")
    path, _, variants = rest.partition(":")
    return name, path, variants or "ferry,flow"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", type=parse_build, help="NAME=PATH[:VARIANTS]")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--items", type=int, default=500000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()

    rates = {}   # (build, threads, variant) -> items/s of every repetition
    ratios = {}  # (build, threads) -> each run's median of per-rep ferry / tbb::flow
    load = []
    for r in range(args.rounds):
        order = args.builds if r % 2 == 0 else list(reversed(args.builds))
        for name, path, variants in order:
            cmd = [path, "--items", str(args.items), "--reps", str(args.reps), "--threads",
                   args.threads, "--variants", variants, "--json"]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr[-2000:]}")
            doc = json.loads(run.stdout)
            load.append(doc["other_cpu_during"])
            for x in doc["results"]:
                rates.setdefault((name, x["threads"], x["variant"]), []).extend(x["rates"])
                if x["variant"] == "ferry" and x["paired_vs_flow"] is not None:
                    ratios.setdefault((name, x["threads"]), []).append(x["paired_vs_flow"])

    print(f"{args.rounds} rounds of {args.items} items x {args.reps} reps; other processes "
          f"used {statistics.median(load):.0%} of the CPUs (median of runs; "
          f"{min(load):.0%}-{max(load):.0%}); {os.popen('uptime').read().strip()}")
    print("\n| build | threads | variant | median items/s | min - max |")
    print("|---|---:|---|---:|---:|")
    for (name, t, v), xs in sorted(rates.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        print(f"| {name} | {t} | {v} | {statistics.median(xs) / 1e6:.3f} M | "
              f"{min(xs) / 1e6:.3f} - {max(xs) / 1e6:.3f} |")
    print("\n| build | threads | ferry / tbb::flow (median of runs) | min - max |")
    print("|---|---:|---:|---:|")
    for (name, t), xs in sorted(ratios.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"| {name} | {t} | {statistics.median(xs):.2f} | {min(xs):.2f} - {max(xs):.2f} |")


if __name__ == "__main__":
    main()
