#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One loader doing video_compare.py's job, run as its own process by video_compare.py.

The job: for each of --clips items (the --data videos in turn), a clip of 16 frames at stride 2
from a random start (uniform over the starts whose 31 frames lie in the video), each frame
resized to 112 x 112 RGB (bilinear), in batches of 8, each batch handed to torch as one
8 x 16 x 112 x 112 x 3 uint8 tensor.

  --loader ferry        the Python package's native op: load_video(select=FrameSelection.clips(1,
                        16, 2), resize=112, with_indices=True) on --threads I/O threads, batch,
                        collate, torch.from_dlpack (the start from ferry.item_rng); with
                        --steps, the two steps apart as SPDL lays them out: demux_video on
                        --threads I/O threads, then decode_video(the same keywords) at
                        concurrency --threads on the CPU
  --loader pyav         PyTorch's DataLoader (--workers worker processes) over a Dataset whose
                        __getitem__ makes the PyAV calls by hand (Debian's python3-av): open,
                        seek back to the keyframe before the start, decode, drop the frames before
                        it, keep every second frame, reformat each kept one to 112 x 112 rgb24
                        (swscale's bilinear, as ferry), stop after 16; the default collate
  --loader torchvision  the same DataLoader over a Dataset calling torchvision.io.read_video
                        (start_pts, end_pts in seconds: the 31 frames of the window at full
                        size), keeping every second frame and resizing with
                        torch.nn.functional.interpolate (bilinear); --backend pyav (torchvision's
                        default) or video_reader (its C++ decoder)

The Datasets read each video's frame count, rate and time base once, when made (as
torchvision's VideoClips precomputes them), and load item i from the start frame --starts gives
(video_compare.py writes there the starts ferry drew, with --write-starts, so every loader loads
the same clips; ferry checks that it draws them again), or from random.Random(i) without it.

Prints one JSON object: loader, threads or workers, clips, seconds, first_batch_s (from creating
the pipeline or the DataLoader's iterator to the first batch), cpu_s (this process and its reaped
children, from the start of the loading on), max_rss_kb (this process; video_compare.py measures
the whole tree), base_rss_kb (resident after the imports), frames_decoded (ferry: its stage's
counter; pyav: the frames its decode loop received; torchvision: null, it does not say).
"""
import argparse
import json
import os
import random
import resource
import sys
import time

import torch

from measure import cpu_seconds, drain, resident_kb

FRAMES = 16
STRIDE = 2
SPAN = (FRAMES - 1) * STRIDE + 1  # 31 frames of the video per clip
SIZE = 112
BATCH = 8


def ferry_batches(paths, clips, threads, counts, starts, steps, in_flight, memory_budget):
    import ferry
    from ferry import ops, video
    items = [paths[i % len(paths)] for i in range(clips)]
    select = video.FrameSelection.clips(1, FRAMES, STRIDE)
    if steps:
        builder = (ferry.source(items)
                   .map(video.demux_video(), concurrency=threads, executor="io", name="demux")
                   .map(video.decode_video(select=select, resize=SIZE, with_indices=True),
                        concurrency=threads, name="load"))
    else:
        builder = ferry.source(items).map(
            video.load_video(select=select, resize=SIZE, with_indices=True),
            concurrency=threads, executor="io", name="load")
    pipe = (builder
            .batch(BATCH)
            .map(ops.collate, name="collate")
            .build(threads=threads, in_flight=in_flight,
                   autotune=ferry.Autotune(memory_budget=memory_budget) if memory_budget else None))
    for x, indices in pipe:
        # Each item's one clip starts at the window frame its first index names.
        starts.extend(int(i) for i in torch.from_dlpack(indices)[:, 0, 0])
        yield torch.from_dlpack(x).flatten(1, 2)  # batch x 1 clip x 16 frames: batch x 16
    [stage] = [s for s in pipe.stats().stages if s.name == "load"]
    counts["frames_decoded"] = stage.counters["frames decoded"]
    pipe.close()


def video_facts(path):
    """The first video stream's frame count, rate (frames/s) and time base, from the header."""
    import av
    with av.open(path) as c:
        s = c.streams.video[0]
        return s.frames, s.average_rate, s.time_base


class Clips(torch.utils.data.Dataset):
    """Item i: 16 frames at stride 2 of paths[i % n] from a start drawn from i, 16 x 112 x 112 x 3
    uint8, by PyAV calls (decoder="pyav") or torchvision.io.read_video (decoder="torchvision")."""

    def __init__(self, paths, clips, decoder, backend, starts=None):
        self.paths, self.clips, self.decoder, self.backend = paths, clips, decoder, backend
        self.starts = starts  # item i's start frame, or None: drawn from random.Random(i)
        # path -> (frames, rate, time base), read with PyAV before any read_video: torchvision's
        # video_reader installs an FFmpeg log callback that writes through the opaque pointer of
        # whichever FFmpeg context logs, so PyAV opening a file after it corrupts memory.
        self.facts = {path: video_facts(path) for path in paths}
        self.decoded = 0  # frames this process's pyav loop received

    def __len__(self):
        return self.clips

    def __getitem__(self, i):
        path = self.paths[i % len(self.paths)]
        frames, rate, time_base = self.facts[path]
        start = (self.starts[i] if self.starts is not None else
                 random.Random(i).randint(0, frames - SPAN))
        clip = (self.pyav_clip(path, start, rate, time_base) if self.decoder == "pyav" else
                self.torchvision_clip(path, start, rate))
        if tuple(clip.shape) != (FRAMES, SIZE, SIZE, 3):
            raise RuntimeError(f"{path} from frame {start}: a clip of {tuple(clip.shape)}")
        return clip

    def pyav_clip(self, path, start, rate, time_base):
        import av
        import numpy as np
        first = round(start / rate / time_base)  # frame `start`'s pts (constant rate)
        step = 1 / rate / time_base
        kept = []
        with av.open(path) as c:
            s = c.streams.video[0]
            c.seek(first, stream=s, backward=True)
            for f in c.decode(s):
                self.decoded += 1
                k = round((f.pts - first) / step)  # frames from the start
                if k < 0 or k % STRIDE:
                    continue
                kept.append(f.reformat(width=SIZE, height=SIZE, format="rgb24",
                                       interpolation="BILINEAR").to_ndarray())
                if len(kept) == FRAMES:
                    break
        return torch.from_numpy(np.stack(kept))

    def torchvision_frames(self, path, start, rate):
        """The clip's 16 frames at full size, 16 x 3 x height x width uint8."""
        import torchvision
        torchvision.set_video_backend(self.backend)
        # Seconds as fractions: torchvision turns them into the stream's time base exactly, and a
        # start between two frames' times would add the frame before it.
        v, _, _ = torchvision.io.read_video(path, start_pts=start / rate,
                                            end_pts=(start + SPAN - 1) / rate, pts_unit="sec",
                                            output_format="TCHW")
        if v.shape[0] != SPAN:
            raise RuntimeError(f"{path} from frame {start}: read_video gave {v.shape[0]} frames")
        return v[::STRIDE]

    def torchvision_clip(self, path, start, rate):
        small = torch.nn.functional.interpolate(self.torchvision_frames(path, start, rate).float(),
                                                size=(SIZE, SIZE), mode="bilinear",
                                                align_corners=False)
        return small.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).contiguous()


def torch_batches(paths, clips, workers, decoder, backend, counts, starts):
    data = Clips(paths, clips, decoder, backend, starts)
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, num_workers=workers)
    yield from loader
    # Workers keep their own counts; the frame counter is read where the loop ran in-process.
    counts["frames_decoded"] = data.decoded if decoder == "pyav" and workers == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="a folder of videos")
    ap.add_argument("--loader", choices=["ferry", "pyav", "torchvision"], required=True)
    ap.add_argument("--backend", choices=["pyav", "video_reader"], default="pyav",
                    help="torchvision's video backend")
    ap.add_argument("--threads", type=int, default=2, help="ferry's threads")
    ap.add_argument("--steps", action="store_true",
                    help="ferry: demux_video and decode_video in stages of their own")
    ap.add_argument("--in-flight", type=int, help="ferry: build(in_flight=...); default: derived")
    ap.add_argument("--memory-budget", type=int,
                    help="ferry: build(autotune=ferry.Autotune(memory_budget=...)), bytes")
    ap.add_argument("--workers", type=int, default=0, help="the DataLoader's workers")
    ap.add_argument("--clips", type=int, default=64)
    ap.add_argument("--starts", help="a JSON list of each item's start frame: the DataLoaders "
                    "load these; ferry checks that it drew them")
    ap.add_argument("--write-starts", help="ferry: write the start frames it drew here (JSON)")
    args = ap.parse_args()
    starts = None
    if args.starts:
        with open(args.starts) as f:
            starts = json.load(f)[:args.clips]
    paths = sorted(os.path.join(args.data, n) for n in os.listdir(args.data) if n.endswith(".mp4"))
    torch.set_num_threads(1)  # the job is the loader's; one intra-op thread per process
    base_kb = resident_kb()
    cpu0 = cpu_seconds()
    counts = {}
    t0 = time.perf_counter()
    if args.loader == "ferry":
        drawn = []
        batches = ferry_batches(paths, args.clips, args.threads, counts, drawn, args.steps,
                                args.in_flight, args.memory_budget)
    else:
        batches = torch_batches(paths, args.clips, args.workers, args.loader, args.backend, counts,
                                starts)
    clips, first, seconds = drain(batches, t0, (FRAMES, SIZE, SIZE, 3), torch.uint8, args.clips,
                                  "video_loader", "clips")
    if args.loader == "ferry" and starts is not None and drawn != starts:
        print(f"video_loader: ferry drew the starts {drawn}, not {starts}", file=sys.stderr)
        return 1
    if args.write_starts:
        with open(args.write_starts, "w") as f:
            json.dump(drawn, f)
    print(json.dumps({"loader": args.loader + ("-steps" if args.steps else ""),
                      "backend": args.backend,
                      "parallel": args.threads if args.loader == "ferry" else args.workers,
                      "clips": clips, "seconds": round(seconds, 4),
                      "first_batch_s": round(first, 4), "cpu_s": round(cpu_seconds() - cpu0, 3),
                      "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "base_rss_kb": base_kb, "frames_decoded": counts.get("frames_decoded")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
