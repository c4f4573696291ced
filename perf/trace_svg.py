#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Renders a ferry trace (pipeline::write_trace's Chrome trace-event JSON) as an SVG timeline:
one row per thread with its calls coloured by stage, each item's flow as a thin line across
threads, and the counter tracks (items in flight, each stage's queue) as step charts below.
A picture of what Perfetto shows, without a browser or network.

    python3 perf/trace_svg.py trace.json timeline.svg [--from MS] [--to MS] [--flows N]
"""

import argparse
import json
import sys
from html import escape

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac"]


def colours(names):
    """A colour per stage name, in sorted order (distinct for up to 10 stages); grey for waits."""
    out, i = {}, 0
    for n in sorted(names):
        if n == "waiting for the pipeline":
            out[n] = "#d0d0d0"
        else:
            out[n] = PALETTE[i % len(PALETTE)]
            i += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("svg")
    ap.add_argument("--from", dest="start", type=float, default=0.0, help="window start, ms")
    ap.add_argument("--to", dest="end", type=float, default=None, help="window end, ms")
    ap.add_argument("--flows", type=int, default=40, help="item flows drawn at most")
    ap.add_argument("--width", type=int, default=1200)
    a = ap.parse_args()

    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    names, slices, flows, counters = {}, [], {}, {}
    for e in events:
        ph = e.get("ph")
        if ph == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif ph == "X":
            slices.append(e)
        elif ph in ("s", "t", "f"):
            flows.setdefault(e["id"], []).append(e)
        elif ph == "C":
            counters.setdefault(e["name"], []).append((e["ts"], list(e["args"].values())[0]))
    if not slices:
        sys.exit("trace_svg: the trace holds no calls")
    colour = colours({s["name"] for s in slices})
    t0 = a.start * 1000.0
    t1 = a.end * 1000.0 if a.end is not None else max(s["ts"] + s["dur"] for s in slices)
    if t1 <= t0:
        sys.exit("trace_svg: the window is empty")

    left, row_h, chart_h = 190, 18, 46
    plot_w = a.width - left - 10
    tids = sorted({s["tid"] for s in slices}, key=lambda t: names.get(t, str(t)))
    row_of = {t: i for i, t in enumerate(tids)}
    top = 24
    charts = [n for n in sorted(counters) if n == "in flight"] + \
             [n for n in sorted(counters) if n != "in flight"]
    height = top + row_h * len(tids) + 20 + (chart_h + 14) * len(charts) + 40

    def x(ts):
        return left + (ts - t0) / (t1 - t0) * plot_w

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{a.width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="14">ferry trace: {t0 / 1000:.1f} to {t1 / 1000:.1f} ms</text>']
    for t, i in row_of.items():
        y = top + i * row_h
        out.append(f'<text x="4" y="{y + 13}">{escape(names.get(t, f"thread {t}"))}</text>')
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y + row_h}" y2="{y + row_h}" '
                   f'stroke="#eee"/>')
    stages = set()
    for s in slices:
        if s["ts"] + s["dur"] < t0 or s["ts"] > t1:
            continue
        xa, xb = max(x(s["ts"]), left), min(x(s["ts"] + s["dur"]), left + plot_w)
        y = top + row_of[s["tid"]] * row_h + 2
        stages.add(s["name"])
        out.append(f'<rect x="{xa:.2f}" y="{y}" width="{max(xb - xa, 0.6):.2f}" '
                   f'height="{row_h - 4}" fill="{colour[s["name"]]}">'
                   f'<title>{escape(s["name"])} item {s.get("args", {}).get("item", "-")}</title>'
                   f'</rect>')
    drawn = 0
    for fid in sorted(flows):
        steps = [e for e in flows[fid] if t0 <= e["ts"] <= t1]
        if len(steps) < 2 or drawn >= a.flows:
            continue
        drawn += 1
        pts = " ".join(f'{x(e["ts"]):.2f},{top + row_of.get(e["tid"], 0) * row_h + row_h / 2}'
                       for e in steps)
        out.append(f'<polyline points="{pts}" fill="none" stroke="#333" stroke-width="0.6" '
                   f'stroke-opacity="0.6"/>')
    y = top + row_h * len(tids) + 20
    for name in charts:
        pts = sorted(counters[name])
        vmax = max(v for _, v in pts) or 1
        out.append(f'<text x="4" y="{y + 12}">{escape(name)} (max {vmax:g})</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{plot_w}" height="{chart_h}" fill="none" '
                   f'stroke="#ccc"/>')
        path, prev = [], None
        for ts, v in pts:
            if ts < t0 or ts > t1:
                continue
            yy = y + chart_h - v / vmax * chart_h
            if prev is not None:
                path.append(f'{x(ts):.2f},{prev:.2f}')
            path.append(f'{x(ts):.2f},{yy:.2f}')
            prev = yy
        if path:
            out.append(f'<polyline points="{" ".join(path)}" fill="none" stroke="#4e79a7"/>')
        y += chart_h + 14
    lx = left
    for name in sorted(stages):
        out.append(f'<rect x="{lx}" y="{y + 4}" width="10" height="10" fill="{colour[name]}"/>')
        out.append(f'<text x="{lx + 14}" y="{y + 13}">{escape(name)}</text>')
        lx += 24 + 7 * len(name)
    out.append('</svg>')
    with open(a.svg, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
