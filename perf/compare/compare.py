#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""perf/compare: ferry against the loaders users would pick instead, on one job, in one run.

The job: read -> decode -> RandomResizedCrop(224) -> horizontal flip -> batch 32 -> collate, once
over a generated ImageNet-like JPEG set (500x375, quality 90, photo-like content). Loaders:

  ferry          tuned for the machine (threads = cores, decode concurrency = threads)
  ferry-default  every option at its default
  ferry-reduced  ferry, decoding each JPEG at the smallest DCT scale that covers its crop
  ferry-roi      ferry with ferry::ops::decode_random_resized_crop: only the crop's region of each
                 JPEG is decoded, at the smallest DCT scale that covers 224x224
  ferry-roi-fast ferry-roi with decode_options::fast (fast integer IDCT, plain upsampling)
  ferry-slots-fast ferry-roi-fast writing each crop into its slot of the batch tensor
                 (ferry::batch_slots): no image per item, no copy into the batch
  ferry-area     ferry with an antialiasing resize (interpolation::antialias), like Pillow's: the
                 like-for-like row (and ferry-roi-area: region decoding with that resize)
  sequential     a plain C++ loop making the same calls
  tbb            a hand-written tbb::parallel_pipeline making the same calls
  torch          PyTorch's DataLoader (Debian's python3-torch / torchvision / Pillow), num_workers
                 0, 1, 2, torchvision transforms on PIL images (Pillow's resize antialiases)
  libtorch       libtorch's own C++ DataLoader (torch::data::make_data_loader, workers 0, 1, 2)
                 over a Dataset that decodes, crops, resizes and flips with OpenCV, Stack<>
                 collation (compare_runner_torch, built where ferry::torch is)
  ferry-torch    ferry's best pipeline (region decode, fast IDCT) ending in .map(ferry::to_torch)
  python-*       ferry from Python (python_loader.py, the package `ferry` built beside the
                 runner): ferry-roi's and ferry-roi-fast's stages as the package's native ops,
                 the loop in Python handing each batch to torch.from_dlpack; and ferry-roi-fast
                 with one trivial Python stage per item (python-roi-fast-pystage)

End to end (with compare_runner_torch): training steps/s of one small libtorch CNN fed by
libtorch's DataLoader or by ferry-torch, loader threads and the model's intra-op threads split
from one budget of cores (--train-splits), with the fraction of wall time the training loop
waited for its next batch.

Every run is its own process. Measured per run: images/s, CPU seconds (the process and its
reaped children while loading), peak RSS of the whole process tree (sampled every 5 ms from
/proc, DataLoader workers included, the tree rescanned every 50 ms), and time to first batch.
Runs are interleaved over repetitions, each repetition in its own seeded order; medians
(min-max) are reported, with ratios to ferry.

Writes <out>/compare.md, <out>/compare.json and <out>/compare.png (images/s against threads or
workers). Run it through perf/compare/run.sh, which builds what it needs first.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

import compare_plot
from measure import median_range, run_one

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", required=True, help="path of the compare_runner executable")
    ap.add_argument("--data", required=True, help="where the JPEG set is (generated if missing)")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="1,2", help="thread counts for ferry and tbb")
    ap.add_argument("--workers", default="0,1,2", help="DataLoader num_workers values")
    ap.add_argument("--out", default="perf/compare/results")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch (not installed)")
    ap.add_argument("--torch-runner", default=None,
                    help="compare_runner_torch (default: beside --runner, used where it exists)")
    ap.add_argument("--torch-workers", default=None,
                    help="libtorch DataLoader workers (default: --workers)")
    ap.add_argument("--train-splits", default=None,
                    help="end-to-end loader:model thread splits, e.g. 0:2,1:1,2:2 (default: "
                         "from the largest of --threads, B: 0:B, l:B-l, B:B; 0 loads in the "
                         "training thread, libtorch only)")
    ap.add_argument("--no-train", action="store_true", help="skip the end-to-end rows")
    ap.add_argument("--python-package", default=None,
                    help="the folder holding the built package ferry (default: <build>/python, "
                         "the build the runner is in; used where it exists)")
    args = ap.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    threads = [int(t) for t in args.threads.split(",") if t]
    workers = [int(w) for w in args.workers.split(",") if w]
    top = max(threads)
    # The JPEG set comes from photo_set_gen, built beside the runner (the runner itself does
    # not link OpenCV's imgcodecs, whose libraries would count in its peak memory).
    generator = os.path.join(os.path.dirname(os.path.abspath(args.runner)), "photo_set_gen")
    subprocess.run([generator, args.data, str(args.images)], check=True,
                   stdout=subprocess.DEVNULL)
    # Warm the page cache so that no loader pays for the first read from disk.
    for name in sorted(os.listdir(args.data))[: args.images]:
        with open(os.path.join(args.data, name), "rb") as f:
            f.read()

    def cpp(runner, t, extra=()):
        return [args.runner, "--runner", runner, "--data", args.data, "--threads", str(t), *extra]

    torch_runner = args.torch_runner or os.path.join(
        os.path.dirname(os.path.abspath(args.runner)), "compare_runner_torch")
    have_torch_cxx = os.access(torch_runner, os.X_OK)
    if not have_torch_cxx:
        print(f"{torch_runner} not found (ferry built without libtorch): no libtorch rows",
              file=sys.stderr)
    torch_workers = [int(w) for w in (args.torch_workers or args.workers).split(",") if w]

    def cpp_torch(runner, t, extra=()):
        # OMP_NUM_THREADS=1: libtorch's intra-op threads are OpenMP's, and each DataLoader
        # worker's own tensor ops (the sample's clone, Stack's copies) would otherwise start a
        # team of one thread per core, so `workers` would not be the loader's thread count. The
        # model's threads are set with torch::set_num_threads, which overrides it.
        return ["env", "OMP_NUM_THREADS=1", torch_runner, "--runner", runner, "--data",
                args.data, "--threads", str(t), *extra]

    configs = []  # (label, loader, threads/workers, command)
    for t in threads:
        configs.append(("ferry", "ferry", t, cpp("ferry", t)))
        configs.append(("tbb::parallel_pipeline", "tbb", t, cpp("tbb", t)))
    configs.append(("ferry, reduced-scale decode", "ferry-reduced", top, cpp("ferry-reduced", top)))
    configs.append(("ferry, region decode", "ferry-roi", top, cpp("ferry-roi", top)))
    configs.append(("ferry, region decode, fast IDCT", "ferry-roi-fast", top,
                    cpp("ferry-roi-fast", top)))
    configs.append(("ferry, region decode, fast IDCT, into batch slots", "ferry-slots-fast", top,
                    cpp("ferry-slots-fast", top)))
    configs.append(("ferry, antialiasing resize", "ferry-area", top,
                    cpp("ferry", top, ["--interp", "antialias"])))
    configs.append(("ferry, region decode + antialiasing resize", "ferry-roi-area", top,
                    cpp("ferry-roi", top, ["--interp", "antialias"])))
    configs.append(("ferry, all defaults", "ferry-default", 0, cpp("ferry-default", top)))
    configs.append(("sequential loop", "sequential", 1, cpp("sequential", 1)))
    if not args.no_torch:
        for w in workers:
            configs.append(("PyTorch DataLoader", "torch", w,
                            ["/usr/bin/python3", os.path.join(here, "torch_loader.py"),
                             "--data", args.data, "--workers", str(w)]))

    python_package = args.python_package or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(args.runner))), "python")
    have_python = not args.no_torch and os.path.isdir(os.path.join(python_package, "ferry"))
    if not have_python:
        print(f"{python_package}/ferry not found (or --no-torch): no rows of ferry from Python",
              file=sys.stderr)
    else:
        def python_loader(runner, extra=()):
            return ["env", f"PYTHONPATH={python_package}", "/usr/bin/python3",
                    os.path.join(here, "python_loader.py"), "--data", args.data, "--threads",
                    str(top), "--runner", runner, *extra]

        configs.append(("ferry from Python, region decode", "python-roi", top,
                        python_loader("roi")))
        configs.append(("ferry from Python, region decode, fast IDCT", "python-roi-fast", top,
                        python_loader("roi-fast")))
        configs.append(("ferry from Python, region decode, fast IDCT, a Python stage",
                        "python-roi-fast-pystage", top,
                        python_loader("roi-fast", ["--python-stage"])))

    if have_torch_cxx:
        for w in torch_workers:
            configs.append(("libtorch DataLoader (C++, OpenCV)", "libtorch", w,
                            cpp_torch("libtorch", w)))
        configs.append(("ferry, region decode, fast IDCT, to_torch", "ferry-torch", top,
                        cpp_torch("ferry-torch", top)))
    # End to end: (label, loader, loader threads, model threads, command), run in the same
    # repetitions as the loaders, in the same shuffled order.
    splits = ([tuple(int(x) for x in s.split(":")) for s in args.train_splits.split(",") if s]
              if args.train_splits else
              [(0, top)] + [(l, top - l) for l in range(1, top)] + [(top, top)])
    train = []
    if have_torch_cxx and not args.no_train:
        for loader_t, model_t in splits:
            for runner in ("libtorch", "ferry-torch"):
                if runner == "ferry-torch" and loader_t == 0:
                    continue  # ferry always loads on threads of its own
                train.append((runner, runner, loader_t, model_t,
                              cpp_torch(runner, loader_t,
                                        ["--train", "--model-threads", str(model_t)])))
    n_load = len(configs)
    configs += [(label, loader, t, cmd) for label, loader, t, _, cmd in train]

    runs = {i: [] for i in range(len(configs))}
    for rep in range(args.reps):
        # Each repetition runs the loaders in its own (seeded) order: the process that follows
        # the DataLoader's (600 MB freed at once) starts slower, its fresh memory not yet backed
        # (measured: ferry's first batch at 1 thread 59-107 ms right after one, 48-53 ms after
        # another ferry run), so no loader should take that place in every repetition.
        order = list(range(len(configs)))
        random.Random(rep).shuffle(order)
        for i in order:
            label, _, t, cmd = configs[i]
            r = run_one(cmd)
            runs[i].append(r)
            if "steps" in r:
                print(f"rep {rep + 1}/{args.reps}  train: {label:17s} loader {t} model "
                      f"{r['model_threads']}  {r['steps_per_s']:6.2f} steps/s  "
                      f"waiting {100 * r['wait_fraction']:5.1f}%", file=sys.stderr, flush=True)
                continue
            print(f"rep {rep + 1}/{args.reps}  {label:36s} {t:>2}  "
                  f"{r['images'] / r['seconds']:8.0f} img/s  cpu {r['cpu_s']:6.2f} s  "
                  f"rss {r['tree_rss_mb']:7.1f} MB  first batch {r['first_batch_s'] * 1000:7.1f} ms",
                  file=sys.stderr, flush=True)

    rows = []
    for i, (label, loader, t, cmd) in enumerate(configs[:n_load]):
        rs = runs[i]
        rate = median_range([r["images"] / r["seconds"] for r in rs])
        rows.append({
            "label": label, "loader": loader,
            "threads": rs[0]["threads"] if loader not in ("torch", "libtorch") else t,
            "images_per_s": rate[0], "images_per_s_min": rate[1], "images_per_s_max": rate[2],
            "cpu_s_per_1000": statistics.median(1000 * r["cpu_s"] / r["images"] for r in rs),
            "peak_rss_mb": statistics.median(r["tree_rss_mb"] for r in rs),
            # What the loader itself adds: the tree's peak less the process's resident memory
            # after its imports (the Python rows and the DataLoader's report it).
            "added_rss_mb": (statistics.median(r["tree_rss_mb"] - r["base_rss_kb"] * 1024 / 1e6
                                               for r in rs) if "base_rss_kb" in rs[0] else None),
            "first_batch_ms": statistics.median(1000 * r["first_batch_s"] for r in rs),
            "command": " ".join(cmd),
        })
    # ferry's best configuration (same calls as the baselines, or region decoding) against the
    # DataLoader; the same calls against the hand-written TBB pipeline.
    ferry_best = max((r for r in rows if r["loader"] in ("ferry", "ferry-roi", "ferry-roi-fast",
                                                          "ferry-slots-fast")),
                     key=lambda r: r["images_per_s"])
    ferry_same = max((r for r in rows if r["loader"] == "ferry"), key=lambda r: r["images_per_s"])
    ferry_area = max((r for r in rows if r["loader"] in ("ferry-area", "ferry-roi-area")),
                     key=lambda r: r["images_per_s"])
    tbb_same = next(r for r in rows if r["loader"] == "tbb" and r["threads"] == ferry_same["threads"])
    torch_rows = [r for r in rows if r["loader"] == "torch"]
    torch_best = max(torch_rows, key=lambda r: r["images_per_s"]) if torch_rows else None

    train_rows = []
    for k, (label, loader, loader_t, model_t, cmd) in enumerate(train):
        rs = runs[n_load + k]
        steps = median_range([r["steps_per_s"] for r in rs])
        train_rows.append({
            "loader": loader, "loader_threads": loader_t, "model_threads": model_t,
            "steps_per_s": steps[0], "steps_per_s_min": steps[1], "steps_per_s_max": steps[2],
            "images_per_s": statistics.median(r["images"] / r["seconds"] for r in rs),
            "wait_fraction": statistics.median(r["wait_fraction"] for r in rs),
            "cpu_s_per_1000": statistics.median(1000 * r["cpu_s"] / r["images"] for r in rs),
            "command": " ".join(cmd),
        })

    os.makedirs(args.out, exist_ok=True)
    summary = {
        "images": args.images, "reps": args.reps, "cpus": os.cpu_count(),
        "ferry_best": ferry_best["label"],
        "ferry_vs_tbb": ferry_same["images_per_s"] / tbb_same["images_per_s"],
        # ferry's best row against the hand-written pipeline making the plain calls (full
        # decode, crop, resize) at the same thread count: what ferry's decode options buy.
        "ferry_best_vs_tbb": ferry_best["images_per_s"] / next(
            r for r in rows if r["loader"] == "tbb" and r["threads"] == ferry_best["threads"]
        )["images_per_s"],
    }
    if torch_best:
        summary.update({
            "ferry_vs_torch_best": ferry_best["images_per_s"] / torch_best["images_per_s"],
            "ferry_area_vs_torch_best": ferry_area["images_per_s"] / torch_best["images_per_s"],
            "ferry_area_best": ferry_area["label"],
            "ferry_rss_vs_torch_best": ferry_best["peak_rss_mb"] / torch_best["peak_rss_mb"],
            "ferry_first_batch_vs_torch_best":
                ferry_best["first_batch_ms"] / torch_best["first_batch_ms"],
            "torch_best_workers": torch_best["threads"],
            # The strictest reading: against whichever DataLoader setting did best on each.
            "ferry_rss_vs_torch_least": ferry_best["peak_rss_mb"] /
                min(r["peak_rss_mb"] for r in torch_rows),
            "ferry_first_batch_vs_torch_fastest": ferry_best["first_batch_ms"] /
                min(r["first_batch_ms"] for r in torch_rows),
        })
    libtorch_rows = [r for r in rows if r["loader"] == "libtorch"]
    libtorch_top = next((r for r in libtorch_rows if r["threads"] == top), None)
    ferry_torch = next((r for r in rows if r["loader"] == "ferry-torch"), None)
    ferry_roi_fast = next((r for r in rows if r["loader"] == "ferry-roi-fast"), None)
    if libtorch_top:
        summary.update({
            # At equal threads: ferry's best row, and ferry making the plain calls (full decode,
            # crop, resize, like the OpenCV dataset), against libtorch's DataLoader.
            "ferry_vs_libtorch": next(r for r in rows if r["loader"] == ferry_best["loader"]
                                      and r["threads"] == top)["images_per_s"] /
                libtorch_top["images_per_s"],
            "ferry_same_calls_vs_libtorch": next(
                r for r in rows if r["loader"] == "ferry" and r["threads"] == top
            )["images_per_s"] / libtorch_top["images_per_s"],
            "ferry_vs_libtorch_best": ferry_best["images_per_s"] /
                max(r["images_per_s"] for r in libtorch_rows),
            "ferry_torch_vs_ferry": ferry_torch["images_per_s"] / ferry_roi_fast["images_per_s"],
        })
    by_loader = {r["loader"]: r for r in rows}
    if have_python:
        py_fast = by_loader["python-roi-fast"]
        summary.update({
            # From Python against the C++ runner's same stages, measured in this run.
            "python_vs_cpp_roi": by_loader["python-roi"]["images_per_s"] /
                by_loader["ferry-roi"]["images_per_s"],
            "python_vs_cpp_roi_fast": py_fast["images_per_s"] /
                by_loader["ferry-roi-fast"]["images_per_s"],
            "python_stage_vs_native": by_loader["python-roi-fast-pystage"]["images_per_s"] /
                py_fast["images_per_s"],
        })
        if torch_best:
            summary.update({
                "python_vs_torch_best": py_fast["images_per_s"] / torch_best["images_per_s"],
                "python_rss_vs_torch_best": py_fast["peak_rss_mb"] / torch_best["peak_rss_mb"],
                "python_added_rss_mb": py_fast["added_rss_mb"],
                "torch_added_rss_mb": torch_best["added_rss_mb"],
                "python_added_rss_vs_torch_best": py_fast["added_rss_mb"] /
                    torch_best["added_rss_mb"],
                "python_first_batch_ms": py_fast["first_batch_ms"],
            })
    if train_rows:
        best = {ld: max((r for r in train_rows if r["loader"] == ld),
                        key=lambda r: r["steps_per_s"]) for ld in ("libtorch", "ferry-torch")}
        summary.update({
            "train_ferry_vs_libtorch": best["ferry-torch"]["steps_per_s"] /
                best["libtorch"]["steps_per_s"],
            "train_best": {ld: f"{r['loader_threads']}:{r['model_threads']}"
                           for ld, r in best.items()},
        })
    with open(os.path.join(args.out, "compare.json"), "w") as f:
        json.dump({"summary": summary, "rows": rows, "train_rows": train_rows}, f, indent=2)

    lines = [
        f"{args.images} JPEGs (500x375, q90) -> RandomResizedCrop(224) -> flip -> batch 32 -> "
        f"collate; median of {args.reps} runs; {os.cpu_count()} CPUs.",
        "",
        "| loader | threads / workers | images/s (min–max) | ferry ÷ this | CPU s / 1000 img | "
        "peak RSS, process tree | time to first batch |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        tw = "default" if r["loader"] == "ferry-default" else str(r["threads"])
        if r["loader"] == "ferry-default":
            tw = f"default ({r['threads']})"
        ratio = ferry_best["images_per_s"] / r["images_per_s"]
        lines.append(
            f"| {r['label']} | {tw} | {r['images_per_s']:.0f} ({r['images_per_s_min']:.0f}–"
            f"{r['images_per_s_max']:.0f}) | {ratio:.2f} | {r['cpu_s_per_1000']:.2f} | "
            f"{r['peak_rss_mb']:.0f} MB | {r['first_batch_ms']:.0f} ms |")
    lines.append("")
    lines.append(f"\"ferry ÷ this\" divides by ferry's best row ({ferry_best['label']}, "
                 f"{ferry_best['threads']} threads: {ferry_best['images_per_s']:.0f} images/s).")
    lines.append(f"ferry vs hand-written tbb::parallel_pipeline, same calls, at "
                 f"{ferry_same['threads']} threads: {summary['ferry_vs_tbb']:.2f}x; "
                 f"ferry's best row vs it (the plain calls: full decode, crop, resize): "
                 f"{summary['ferry_best_vs_tbb']:.2f}x.")
    if torch_best:
        lines.append(
            f"ferry vs PyTorch DataLoader at its best (num_workers={torch_best['threads']}): "
            f"{summary['ferry_vs_torch_best']:.2f}x images/s, "
            f"{summary['ferry_rss_vs_torch_best']:.2f}x the peak memory, "
            f"{summary['ferry_first_batch_vs_torch_best']:.2f}x the time to first batch; "
            f"like for like (antialiasing resize, {ferry_area['label']}): "
            f"{summary['ferry_area_vs_torch_best']:.2f}x. Against the DataLoader setting with "
            f"the least memory: {summary['ferry_rss_vs_torch_least']:.2f}x the peak memory; with "
            f"the fastest first batch: {summary['ferry_first_batch_vs_torch_fastest']:.2f}x the "
            f"time to first batch.")
    if libtorch_top:
        lines.append(
            f"ferry vs libtorch's C++ DataLoader at {top} threads (workers): "
            f"{summary['ferry_vs_libtorch']:.2f}x images/s ({ferry_best['label']}), "
            f"{summary['ferry_same_calls_vs_libtorch']:.2f}x making the plain calls (full "
            f"decode, crop, resize); against its best workers setting "
            f"{summary['ferry_vs_libtorch_best']:.2f}x. ferry ending in to_torch: "
            f"{summary['ferry_torch_vs_ferry']:.3f}x the images/s of the same pipeline without "
            f"it (ferry, region decode, fast IDCT).")
    if have_python:
        lines.append(
            f"ferry from Python (the package's native ops, batches to torch.from_dlpack) vs the "
            f"C++ runner's same stages: {summary['python_vs_cpp_roi']:.2f}x images/s (region "
            f"decode), {summary['python_vs_cpp_roi_fast']:.2f}x (region decode, fast IDCT); "
            f"one trivial Python stage per item: {summary['python_stage_vs_native']:.2f}x the "
            f"native row.")
        if torch_best:
            lines.append(
                f"ferry from Python vs PyTorch DataLoader at its best (num_workers="
                f"{torch_best['threads']}): {summary['python_vs_torch_best']:.2f}x images/s, "
                f"{summary['python_rss_vs_torch_best']:.2f}x the peak memory (both processes "
                f"import torch), first batch after {summary['python_first_batch_ms']:.0f} ms; "
                f"the memory the loader adds over its process's imports: "
                f"{summary['python_added_rss_mb']:.0f} MB against "
                f"{summary['torch_added_rss_mb']:.0f} MB "
                f"({summary['python_added_rss_vs_torch_best']:.2f}x).")
    if train_rows:
        lines += [
            "",
            f"End to end: a small libtorch CNN (3 strided convolutions, SGD) takes a training "
            f"step on every batch; loader threads and the model's intra-op threads "
            f"(torch::set_num_threads) from {top} cores; median of {args.reps} runs.",
            "",
            "| loader | loader threads | model threads | training steps/s (min–max) | images/s | "
            "waiting for data | CPU s / 1000 img |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in train_rows:
            lt = "0 (in the training thread)" if r["loader_threads"] == 0 else r["loader_threads"]
            name = ("libtorch DataLoader" if r["loader"] == "libtorch"
                    else "ferry, to_torch")
            lines.append(
                f"| {name} | {lt} | {r['model_threads']} | {r['steps_per_s']:.2f} "
                f"({r['steps_per_s_min']:.2f}–{r['steps_per_s_max']:.2f}) | "
                f"{r['images_per_s']:.0f} | {100 * r['wait_fraction']:.0f}% | "
                f"{r['cpu_s_per_1000']:.2f} |")
        lines += ["", f"Best split each: ferry {summary['train_best']['ferry-torch']} "
                      f"(loader:model), libtorch {summary['train_best']['libtorch']}; ferry's "
                      f"steps/s {summary['train_ferry_vs_libtorch']:.2f}x libtorch's."]
    md = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "compare.md"), "w") as f:
        f.write(md)
    print(md)

    compare_plot.plot(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
