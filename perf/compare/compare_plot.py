#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""perf/compare's plot: images/s against threads (workers) for each loader, from compare.py's rows."""
import os
import sys


def plot(rows, out):
    """Writes OUT/compare.png where python3-matplotlib is installed (a line on stderr where not)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for loader, label, style in [("ferry", "ferry", "o-"), ("tbb", "tbb::parallel_pipeline", "s--"),
                                 ("torch", "PyTorch DataLoader (workers)", "^-"),
                                 ("libtorch", "libtorch DataLoader (workers)", "v-")]:
        pts = sorted((r["threads"], r["images_per_s"]) for r in rows if r["loader"] == loader)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    for loader, label, marker in [("sequential", "sequential loop", "x"),
                                  ("ferry-reduced", "ferry, reduced-scale decode", "*"),
                                  ("ferry-roi", "ferry, region decode", "P"),
                                  ("ferry-roi-fast", "ferry, region decode, fast IDCT", "X"),
                                  ("ferry-slots-fast", "ferry, into batch slots", "d"),
                                  ("ferry-area", "ferry, antialiasing resize", "D"),
                                  ("ferry-torch", "ferry, to_torch", "h"),
                                  ("python-roi-fast", "ferry from Python, region decode, fast",
                                   "p")]:
        r = next((r for r in rows if r["loader"] == loader), None)
        if r:
            ax.plot([r["threads"]], [r["images_per_s"]], marker, markersize=9, label=label)
    ax.set_xlabel("threads (ferry, TBB) / workers (PyTorch, libtorch)")
    ax.set_ylabel("images/s")
    ax.set_title(f"read, decode, RandomResizedCrop 224, flip, batch 32 ({os.cpu_count()} CPUs)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "compare.png"), dpi=110)
