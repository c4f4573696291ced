#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""perf/compare for audio: ferry from Python against PyTorch's DataLoader with torchaudio.

The job (audio_loader.py): a random 4 s window of each item's file, resampled to 16 kHz mono,
exactly 64000 samples, batches of 32 as torch tensors; over --files files per codec (60 s of a
tone with noise, 44.1 kHz stereo, made by the ffmpeg CLI: FLAC, WAV, MP3), --windows windows a
run. Loaders: ferry (decode_audio with random_window and samples, threads 1 and 2) and PyTorch's
DataLoader (torchaudio.load with an offset, torchaudio.transforms.Resample; workers 0, 1, 2).

Every run is its own process (measure.run_one: peak RSS of the whole process tree, workers
included); the runs of a repetition go in a seeded random order; medians (min-max) over --reps,
with ratios to ferry's best row of the codec. Writes <out>/audio_compare.md and .json. Needs the
Python package built (--python-package, default build/python), Debian's python3-torch and
python3-torchaudio, and the ffmpeg CLI.
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
CODECS = {"FLAC": ("flac", ["-c:a", "flac"]),
          "WAV": ("wav", ["-c:a", "pcm_s16le"]),
          "MP3": ("mp3", ["-c:a", "libmp3lame", "-b:a", "128k"])}


def make_files(folder, ext, args, files):
    os.makedirs(folder, exist_ok=True)
    for i in range(files):
        path = os.path.join(folder, f"tone{i}.{ext}")
        if os.path.exists(path):
            continue
        source = (f"aevalsrc=0.5*sin({220 + 55 * i}*2*PI*t)+0.1*random(0)|"
                  f"0.4*sin({330 + 55 * i}*2*PI*t)+0.1*random(1):s=44100:d=60")
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f",
                        "lavfi", "-i", source, *args, path], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--windows", type=int, default=512)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--workers", default="0,1,2")
    ap.add_argument("--codecs", default="FLAC,WAV,MP3")
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "ferry-audio-compare"))
    ap.add_argument("--python-package", default="build/python")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    # The loaders import the package from there.
    os.environ["PYTHONPATH"] = os.path.abspath(args.python_package)
    runs = []
    for codec in args.codecs.split(","):
        ext, enc = CODECS[codec]
        folder = os.path.join(args.data, ext)
        make_files(folder, ext, enc, args.files)
        for t in args.threads.split(","):
            runs.append((codec, "ferry", int(t), folder))
        for w in args.workers.split(","):
            runs.append((codec, "torch", int(w), folder))
    results = {run: [] for run in runs}
    for rep in range(args.reps):
        order = list(runs)
        random.Random(rep).shuffle(order)
        for codec, loader, n, folder in order:
            cmd = [sys.executable, os.path.join(HERE, "audio_loader.py"), "--data", folder,
                   "--loader", loader, "--windows", str(args.windows),
                   "--threads" if loader == "ferry" else "--workers", str(n)]
            results[(codec, loader, n, folder)].append(run_one(cmd))
            print(f"rep {rep}: {codec} {loader} {n}: "
                  f"{results[(codec, loader, n, folder)][-1]['seconds']} s", file=sys.stderr)
    rows = []
    for (codec, loader, n, _), rs in results.items():
        rate = median_range([r["windows"] / r["seconds"] for r in rs])
        rows.append({"codec": codec, "loader": loader, "parallel": n, "windows_per_s": rate,
                     "cpu_s_per_1000": statistics.median(1000 * r["cpu_s"] / r["windows"]
                                                         for r in rs),
                     "peak_rss_mb": statistics.median(r["tree_rss_mb"] for r in rs),
                     "first_batch_ms": statistics.median(1000 * r["first_batch_s"] for r in rs)})
    lines = ["| codec | loader | threads / workers | windows/s (min–max) | ferry ÷ this | "
             "CPU s / 1000 windows | peak RSS, process tree | time to first batch |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for codec in args.codecs.split(","):
        mine = [r for r in rows if r["codec"] == codec]
        best = max(r["windows_per_s"][0] for r in mine if r["loader"] == "ferry")
        for r in mine:
            rate, lo, hi = r["windows_per_s"]
            name = "ferry" if r["loader"] == "ferry" else "PyTorch DataLoader + torchaudio"
            lines.append(f"| {codec} | {name} | {r['parallel']} | {rate:.0f} ({lo:.0f}–{hi:.0f}) "
                         f"| {best / rate:.2f} | {r['cpu_s_per_1000']:.2f} | "
                         f"{r['peak_rss_mb']:.0f} MB | {r['first_batch_ms']:.0f} ms |")
    table = "\n".join(lines)
    print(table)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "audio_compare.md"), "w") as f:
        f.write(f"audio_compare.py --files {args.files} --windows {args.windows} --reps "
                f"{args.reps}, {os.cpu_count()} CPUs\n\n{table}\n")
    with open(os.path.join(args.out, "audio_compare.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
