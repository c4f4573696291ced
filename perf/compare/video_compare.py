#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""perf/compare for video: ferry from Python against PyTorch's DataLoader with PyAV and torchvision.

The job (video_loader.py): a clip of 16 frames at stride 2 from a random start of each item's
video, resized to 112 x 112 RGB, batches of 8 as torch tensors; over --files videos (--seconds
10 s, --size 1280x720, 30 fps, libx264 veryfast, a keyframe every --gop 60 frames and --bframes 2
B-frames: the videos of perf/clip_loading, made by the ffmpeg CLI), --clips clips a run. Loaders: ferry
(load_video with FrameSelection.clips(1, 16, 2), threads 1 and 2; and with --ferry steps, the same
job as demux_video on the I/O executor then decode_video on the CPU) and PyTorch's DataLoader
(workers 0, 1, 2) over PyAV calls by hand and over torchvision.io.read_video (its pyav and
video_reader backends).

Every loader loads the same clips: ferry draws each item's start once (--write-starts), the
DataLoaders load those starts, and every later ferry run checks that it draws them again. Before
timing, the script checks that they are the same frames: PyAV's clips are ferry's byte for byte,
and read_video's frames, before its resize, are ferry's at full size byte for byte (the first
--check items); it stops otherwise.

Every run is its own process (measure.run_one: peak RSS of the whole process tree, workers
included); the runs of a repetition go in a seeded random order; medians (min-max) over --reps,
with ratios to ferry's best row. Writes <out>/video_compare.md and .json. Needs the Python
package built (--python-package, default build/python), Debian's python3-torch,
python3-torchvision and python3-av, and the ffmpeg CLI.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

from measure import median_range, run_one

HERE = os.path.dirname(os.path.abspath(__file__))
LOADERS = {"pyav": ("pyav", "pyav", "PyTorch DataLoader + PyAV by hand"),
           "torchvision": ("torchvision", "pyav", "PyTorch DataLoader + read_video (pyav)"),
           "video_reader": ("torchvision", "video_reader",
                            "PyTorch DataLoader + read_video (video_reader)")}


def make_videos(folder, files, args):
    os.makedirs(folder, exist_ok=True)
    for i in range(files):
        path = os.path.join(folder, f"clip{i}.mp4")
        if os.path.exists(path):
            continue
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f",
                        "lavfi", "-i",
                        f"testsrc2=size={args.size}:rate=30:duration={args.seconds + i}", "-ss",
                        str(i), "-c:v", "libx264", "-preset", "veryfast", "-g", str(args.gop),
                        "-bf", str(args.bframes), "-pix_fmt", "yuv420p", path], check=True)


def check_same_frames(folder, starts, items):
    """Stops unless PyAV's clips are ferry's and read_video's frames ferry's, for `items` items."""
    import numpy as np
    from ferry import video
    from video_loader import FRAMES, SIZE, STRIDE, Clips
    paths = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".mp4"))
    checked = list(enumerate(starts[:items]))
    pyav, torchvision, video_reader = (Clips(paths, len(starts), kind, backend) for kind, backend
                                       in (("pyav", "pyav"), ("torchvision", "pyav"),
                                           ("torchvision", "video_reader")))

    def ferry_clip(i, start, **kw):
        _, rate, _ = pyav.facts[paths[i % len(paths)]]
        at = {"select": video.FrameSelection.clip(FRAMES, STRIDE), "start": float(start / rate)}
        return np.asarray(video.load_video(**at, **kw)(paths[i % len(paths)]))

    # PyAV first: once torchvision's video_reader has decoded, PyAV's calls corrupt memory (see
    # video_loader.Clips), so the video_reader backend is checked last.
    for i, start in checked:
        path = paths[i % len(paths)]
        _, rate, time_base = pyav.facts[path]
        if not np.array_equal(pyav.pyav_clip(path, start, rate, time_base).numpy(),
                              ferry_clip(i, start, resize=SIZE)):
            raise SystemExit(f"{path} from frame {start}: PyAV's clip is not ferry's")
        if not np.array_equal(torchvision.torchvision_frames(path, start, rate)
                              .permute(0, 2, 3, 1).numpy(), ferry_clip(i, start)):
            raise SystemExit(f"{path} from frame {start}: read_video (pyav) gave other frames "
                             "than ferry")
    for i, start in checked:
        path = paths[i % len(paths)]
        _, rate, _ = pyav.facts[path]
        if not np.array_equal(video_reader.torchvision_frames(path, start, rate)
                              .permute(0, 2, 3, 1).numpy(), ferry_clip(i, start)):
            raise SystemExit(f"{path} from frame {start}: read_video (video_reader) gave other "
                             "frames than ferry")
    print(f"the first {len(checked)} clips: the same frames in every loader", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--size", default="1280x720", help="the videos' WxH")
    ap.add_argument("--seconds", type=int, default=10, help="each video's length")
    ap.add_argument("--gop", type=int, default=60)
    ap.add_argument("--bframes", type=int, default=2)
    ap.add_argument("--clips", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--workers", default="0,1,2")
    ap.add_argument("--loaders", default="pyav,torchvision,video_reader",
                    help="the DataLoader rows: " + ", ".join(LOADERS) + " ('' for none)")
    ap.add_argument("--ferry", default="load_video",
                    help="ferry's rows: load_video (one stage), steps (demux_video on the I/O "
                    "executor, then decode_video on the CPU), or both: load_video,steps")
    ap.add_argument("--in-flight", type=int, help="ferry's rows: build(in_flight=...)")
    ap.add_argument("--memory-budget", type=int,
                    help="ferry's rows: build(autotune=ferry.Autotune(memory_budget=...)), bytes")
    ap.add_argument("--check", type=int, default=8, help="items whose frames are compared")
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "ferry-video-compare"))
    ap.add_argument("--python-package", default="build/python")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--only-check", metavar="STARTS", help=argparse.SUPPRESS)
    args = ap.parse_args()
    # The loaders import the package from there; torchvision's video_reader logs every FFmpeg
    # message through glog's INFO unless told not to.
    os.environ["PYTHONPATH"] = os.path.abspath(args.python_package)
    os.environ.setdefault("GLOG_minloglevel", "1")
    folder = os.path.join(args.data, f"{args.size}-{args.seconds}s-g{args.gop}-bf{args.bframes}")
    if args.only_check:
        sys.path.insert(0, os.environ["PYTHONPATH"])
        with open(args.only_check) as f:
            check_same_frames(folder, json.load(f), args.check)
        return 0
    make_videos(folder, args.files, args)
    loader = os.path.join(HERE, "video_loader.py")
    starts = os.path.join(folder, f"starts-{args.clips}.json")
    run_one([sys.executable, loader, "--data", folder, "--loader", "ferry", "--clips",
             str(args.clips), "--write-starts", starts])
    # In a process of its own: a child's peak RSS starts from its parent's (execve keeps it), and
    # the check holds full-size clips.
    subprocess.run([sys.executable, os.path.abspath(__file__), "--only-check", starts,
                    "--data", args.data, "--size", args.size, "--seconds", str(args.seconds),
                    "--gop", str(args.gop), "--bframes", str(args.bframes),
                    "--check", str(args.check), "--python-package", args.python_package],
                   check=True)

    ferry_rows = {"load_video": "ferry", "steps": "ferry-steps"}
    runs = [(ferry_rows[v], int(t)) for v in args.ferry.split(",") for t in args.threads.split(",")]
    runs += [(name, int(w)) for name in args.loaders.split(",") if name
             for w in args.workers.split(",")]
    results = {run: [] for run in runs}
    for rep in range(args.reps):
        order = list(runs)
        random.Random(rep).shuffle(order)
        for name, n in order:
            cmd = [sys.executable, loader, "--data", folder, "--clips", str(args.clips),
                   "--starts", starts]
            if name.startswith("ferry"):
                cmd += ["--loader", "ferry", "--threads", str(n)]
                cmd += ["--steps"] if name == "ferry-steps" else []
                cmd += ["--in-flight", str(args.in_flight)] if args.in_flight else []
                cmd += ["--memory-budget", str(args.memory_budget)] if args.memory_budget else []
            else:
                kind, backend, _ = LOADERS[name]
                cmd += ["--loader", kind, "--backend", backend, "--workers", str(n)]
            results[(name, n)].append(run_one(cmd))
            print(f"rep {rep}: {name} {n}: {results[(name, n)][-1]['seconds']} s",
                  file=sys.stderr)
    rows = []
    for (name, n), rs in results.items():
        decoded = [r["frames_decoded"] for r in rs if r["frames_decoded"] is not None]
        rows.append({"loader": name, "parallel": n,
                     "clips_per_s": median_range([r["clips"] / r["seconds"] for r in rs]),
                     "cpu_ms_per_clip": statistics.median(1000 * r["cpu_s"] / r["clips"]
                                                          for r in rs),
                     "peak_rss_mb": statistics.median(r["tree_rss_mb"] for r in rs),
                     "first_batch_ms": statistics.median(1000 * r["first_batch_s"] for r in rs),
                     "frames_decoded_per_clip": (statistics.median(decoded) / args.clips
                                                 if decoded else None)})
    best = max(r["clips_per_s"][0] for r in rows if r["loader"].startswith("ferry"))
    lines = ["| loader | threads / workers | clips/s (min–max) | ferry ÷ this | CPU ms per clip | "
             "peak RSS, process tree | time to first batch | frames decoded per clip |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rate, lo, hi = r["clips_per_s"]
        name = {"ferry": "ferry, load_video",
                "ferry-steps": "ferry, demux_video (I/O) + decode_video (CPU)"}.get(
                    r["loader"]) or LOADERS[r["loader"]][2]
        decoded = r["frames_decoded_per_clip"]
        lines.append(f"| {name} | {r['parallel']} | {rate:.1f} ({lo:.1f}–{hi:.1f}) | "
                     f"{best / rate:.2f} | {r['cpu_ms_per_clip']:.0f} | {r['peak_rss_mb']:.0f} MB "
                     f"| {r['first_batch_ms']:.0f} ms | "
                     f"{'—' if decoded is None else f'{decoded:.1f}'} |")
    table = "\n".join(lines)
    print(table)
    os.makedirs(args.out, exist_ok=True)
    name = "video_compare" if (args.gop, args.bframes) == (60, 2) else \
        f"video_compare-g{args.gop}-bf{args.bframes}"
    with open(os.path.join(args.out, f"{name}.md"), "w") as f:
        f.write(f"video_compare.py --files {args.files} --size {args.size} --seconds "
                f"{args.seconds} --gop {args.gop} --bframes {args.bframes} --clips {args.clips} "
                f"--reps {args.reps} --ferry {args.ferry} --loaders '{args.loaders}'"
                f"{f' --in-flight {args.in_flight}' if args.in_flight else ''}"
                f"{f' --memory-budget {args.memory_budget}' if args.memory_budget else ''}, "
                f"{os.cpu_count()} CPUs\n\n{table}\n")
    with open(os.path.join(args.out, f"{name}.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
