#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""perf/compare/scaling.py: how ferry's images/s and CPU per image change with the thread count.

perf/compare's job (read -> decode -> RandomResizedCrop(224) -> flip -> batch 32 -> collate) at
each of --threads (default 1, 2, 4, ... up to the machine's CPUs), through compare_runner:

  ferry-roi-fast  ferry's best pipeline (only the crop's region decoded, fast IDCT)
  ferry-slots-fast  the same, each crop written into its slot of the batch (ferry::batch_slots)
  ferry           ferry making the plain calls (full decode, crop, resize)
  tbb             a hand-written tbb::parallel_pipeline making the plain calls

on the ImageNet-like set (500x375, quality 90) or, with --set ffcv, an FFCV-like one (the longer
side 512, quality 90), which it reports per core next to FFCV's published figure (another
machine and another loader: a reference point, not a ratio). Runs are interleaved over
repetitions in a seeded order; medians (min-max). Writes <out>/scaling[-ffcv].{md,json,png}:
images/s and CPU seconds per 1000 images against threads. perf/compare/scaling.sh builds what
it needs and runs it within a time budget.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import median_range, run_one  # noqa: E402

LOADERS = [("ferry-roi-fast", "ferry, region decode, fast IDCT"),
           ("ferry-slots-fast", "ferry, region decode into batch slots, fast IDCT"),
           ("ferry", "ferry, plain calls"),
           ("tbb", "tbb::parallel_pipeline, plain calls")]
# FFCV's published ImageNet loading rate (ffcv docs/benchmarks.rst): 512 px, quality 90,
# RandomResizedCrop 224 + flip, on a 96-vCPU machine.
FFCV_PER_VCPU = 326


def default_threads():
    n, out = os.cpu_count() or 1, []
    t = 1
    while t < n:
        out.append(t)
        t *= 2
    return out + [n]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", required=True, help="path of the compare_runner executable")
    ap.add_argument("--data", required=True, help="where the JPEG set is (generated if missing)")
    ap.add_argument("--set", choices=("imagenet", "ffcv"), default="imagenet")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default=None, help="e.g. 1,2,4,8,16 (default: powers of 2 "
                                                     "up to the CPUs, and the CPUs)")
    ap.add_argument("--loaders", default=",".join(name for name, _ in LOADERS))
    ap.add_argument("--out", default="perf/compare/results")
    args = ap.parse_args()

    threads = ([int(t) for t in args.threads.split(",") if t] if args.threads
               else default_threads())
    names = dict(LOADERS)
    loaders = [name for name in args.loaders.split(",") if name]
    for name in loaders:
        if name not in names:
            raise SystemExit(f"unknown loader {name!r} (one of {', '.join(names)})")
    generator = os.path.join(os.path.dirname(os.path.abspath(args.runner)), "photo_set_gen")
    gen = [generator, args.data, str(args.images)] + (["--ffcv"] if args.set == "ffcv" else [])
    subprocess.run(gen, check=True, stdout=subprocess.DEVNULL)
    prefix = "ffcv" if args.set == "ffcv" else "img"
    files = sorted(f for f in os.listdir(args.data) if f.startswith(prefix) and f.endswith(".jpg"))
    if len(files) != args.images:
        raise SystemExit(f"{args.data} holds {len(files)} {prefix}*.jpg files, not --images "
                         f"{args.images}: give each set and size a folder of its own")
    for name in files:  # warm the page cache
        with open(os.path.join(args.data, name), "rb") as f:
            f.read()

    configs = [(name, t) for name in loaders for t in threads]
    runs = {c: [] for c in configs}
    for rep in range(args.reps):
        order = list(configs)
        random.Random(rep).shuffle(order)
        for name, t in order:
            r = run_one([args.runner, "--runner", name, "--data", args.data, "--threads", str(t)])
            runs[(name, t)].append(r)
            print(f"rep {rep + 1}/{args.reps}  {names[name]:36s} {t:>3}  "
                  f"{r['images'] / r['seconds']:8.0f} img/s  cpu {r['cpu_s']:6.2f} s",
                  file=sys.stderr, flush=True)

    rows = []
    for name, t in configs:
        rs = runs[(name, t)]
        rate = median_range([r["images"] / r["seconds"] for r in rs])
        rows.append({
            "loader": name, "label": names[name], "threads": t,
            "images": min(r["images"] for r in rs),  # every run delivered them all?
            "images_per_s": rate[0], "images_per_s_min": rate[1], "images_per_s_max": rate[2],
            "images_per_s_per_thread": rate[0] / t,
            "cpu_s_per_1000": statistics.median(1000 * r["cpu_s"] / r["images"] for r in rs),
        })
        # Per core, whatever the threads: images per CPU-second of the whole process.
        rows[-1]["images_per_cpu_s"] = 1000 / rows[-1]["cpu_s_per_1000"]
    for r in rows:
        one = next((x for x in rows if x["loader"] == r["loader"] and x["threads"] == 1), None)
        r["speedup"] = r["images_per_s"] / one["images_per_s"] if one else None

    what = ("FFCV-like JPEGs (longer side 512, q90)" if args.set == "ffcv"
            else "ImageNet-like JPEGs (500x375, q90)")
    lines = [
        f"{args.images} {what} -> RandomResizedCrop(224) -> flip -> batch 32 -> collate; "
        f"median of {args.reps} runs; {os.cpu_count()} CPUs.",
        "",
        "| loader | threads | images/s (min–max) | images/s per thread | speed-up over 1 thread "
        "| CPU s / 1000 img | images per CPU-second |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        up = f"{r['speedup']:.2f}×" if r["speedup"] else "—"
        lines.append(f"| {r['label']} | {r['threads']} | {r['images_per_s']:.0f} "
                     f"({r['images_per_s_min']:.0f}–{r['images_per_s_max']:.0f}) | "
                     f"{r['images_per_s_per_thread']:.0f} | {up} | {r['cpu_s_per_1000']:.2f} | "
                     f"{r['images_per_cpu_s']:.0f} |")
    summary = {"set": args.set, "images": args.images, "reps": args.reps,
               "cpus": os.cpu_count(), "threads": threads}
    best = [r for r in rows if r["loader"] == loaders[0]]
    if args.set == "ffcv" and best:
        summary["ffcv_published_per_vcpu"] = FFCV_PER_VCPU
        summary["per_thread"] = {r["threads"]: r["images_per_s_per_thread"] for r in best}
        summary["per_cpu_s"] = {r["threads"]: r["images_per_cpu_s"] for r in best}
        lines += ["", f"{best[0]['label']}: " + ", ".join(
            f"{r['images_per_s_per_thread']:.0f} images/s per thread ({r['images_per_cpu_s']:.0f} "
            f"per CPU-second) at {r['threads']}" for r in best) + f". FFCV's published figure: {FFCV_PER_VCPU} images/s per vCPU "
            "(ImageNet at 512 px, quality 90, RandomResizedCrop 224 + flip, 96 vCPUs; ffcv "
            "docs/benchmarks.rst): another machine, another loader and real photos, so a "
            "reference point rather than a ratio."]
    md = "\n".join(lines) + "\n"
    stem = "scaling-ffcv" if args.set == "ffcv" else "scaling"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, stem + ".json"), "w") as f:
        json.dump({"summary": summary, "rows": rows}, f, indent=2)
    with open(os.path.join(args.out, stem + ".md"), "w") as f:
        f.write(md)
    print(md)
    plot(rows, loaders, names, what, os.path.join(args.out, stem + ".png"))
    return 0


def plot(rows, loaders, names, what, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)
        return
    fig, (rate, cpu) = plt.subplots(1, 2, figsize=(10, 4))
    for name, style in zip(loaders, ("o-", "D-", "s--", "^:")):
        pts = sorted((r["threads"], r["images_per_s"], r["cpu_s_per_1000"])
                     for r in rows if r["loader"] == name)
        xs = [p[0] for p in pts]
        rate.plot(xs, [p[1] for p in pts], style, label=names[name])
        cpu.plot(xs, [p[2] for p in pts], style, label=names[name])
    for ax, label in ((rate, "images/s"), (cpu, "CPU s per 1000 images")):
        ax.set_xlabel("threads")
        ax.set_ylabel(label)
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    rate.legend(fontsize=8)
    fig.suptitle(f"{what}: RandomResizedCrop 224, flip, batch 32 ({os.cpu_count()} CPUs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
