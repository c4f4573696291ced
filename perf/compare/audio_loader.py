#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One loader doing audio_compare.py's job, run as its own process by audio_compare.py.

The job: for each of --windows items (the --data files in turn), a random window of 4 s,
resampled to 16 kHz mono float32, exactly 64000 samples (zeros past a short file's end), in
batches of 32, each batch handed to torch as one 32 x 1 x 64000 tensor.

  --loader ferry  the Python package's native ops: decode_audio(sample_rate=16000, channels=1,
                  random_window=4.0, samples=64000) on --threads I/O threads, batch, collate,
                  torch.from_dlpack
  --loader torch  PyTorch's DataLoader (--workers worker processes) over a Dataset whose
                  __getitem__ does what its users write with torchaudio (Debian's
                  python3-torchaudio, the sox_io backend): torchaudio.info for the length, a
                  random offset, torchaudio.load(frame_offset, num_frames), the channels
                  averaged, torchaudio.transforms.Resample to 16 kHz (one per source rate, its
                  kernel made once), padded or cut to 64000; the default collate

Prints one JSON object: loader, threads or workers, windows, seconds, first_batch_s (from creating
the pipeline or the DataLoader's iterator to the first batch), cpu_s (this process and its
reaped children, from the start of the loading on), max_rss_kb (this process; audio_compare.py
measures the whole tree), base_rss_kb (resident after the imports).
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

RATE = 16000
SECONDS = 4.0
SAMPLES = int(RATE * SECONDS)
BATCH = 32


def ferry_batches(paths, windows, threads):
    import ferry
    from ferry import ops, video
    items = [paths[i % len(paths)] for i in range(windows)]
    pipe = (ferry.source(items)
            .map(video.decode_audio(sample_rate=RATE, channels=1, random_window=SECONDS,
                                    samples=SAMPLES),
                 concurrency=threads, executor="io", name="audio")
            .batch(BATCH)
            .map(ops.collate, name="collate")
            .build(threads=threads))
    for x in pipe:
        yield torch.from_dlpack(x)
    pipe.close()


class Windows(torch.utils.data.Dataset):
    """Item i: a random 4 s of paths[i % n] (the offset drawn from i), 16 kHz mono, 64000."""

    def __init__(self, paths, windows):
        self.paths, self.windows = paths, windows
        self.resamplers = {}  # one kernel per source rate, made once (transforms.Resample)

    def __len__(self):
        return self.windows

    def __getitem__(self, i):
        import torchaudio
        path = self.paths[i % len(self.paths)]
        info = torchaudio.info(path)
        length = int(SECONDS * info.sample_rate)
        offset = random.Random(i).randint(0, max(0, info.num_frames - length))
        wave, rate = torchaudio.load(path, frame_offset=offset, num_frames=length)
        mono = wave.mean(0, keepdim=True)
        if rate not in self.resamplers:
            self.resamplers[rate] = torchaudio.transforms.Resample(rate, RATE)
        out = self.resamplers[rate](mono)[:, :SAMPLES]
        if out.shape[1] < SAMPLES:
            out = torch.nn.functional.pad(out, (0, SAMPLES - out.shape[1]))
        return out


def torch_batches(paths, windows, workers):
    loader = torch.utils.data.DataLoader(Windows(paths, windows), batch_size=BATCH,
                                         num_workers=workers)
    yield from loader


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="a folder of audio files")
    ap.add_argument("--loader", choices=["ferry", "torch"], required=True)
    ap.add_argument("--threads", type=int, default=2, help="ferry's threads")
    ap.add_argument("--workers", type=int, default=0, help="the DataLoader's workers")
    ap.add_argument("--windows", type=int, default=512)
    args = ap.parse_args()
    paths = sorted(os.path.join(args.data, n) for n in os.listdir(args.data))
    torch.set_num_threads(1)  # the job is the loader's; one intra-op thread per process
    base_kb = resident_kb()
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    if args.loader == "ferry":
        batches = ferry_batches(paths, args.windows, args.threads)
    else:
        batches = torch_batches(paths, args.windows, args.workers)
    windows, first, seconds = drain(batches, t0, (1, SAMPLES), torch.float32, args.windows,
                                    "audio_loader", "windows")
    print(json.dumps({"loader": args.loader,
                      "parallel": args.threads if args.loader == "ferry" else args.workers,
                      "windows": windows, "seconds": round(seconds, 4),
                      "first_batch_s": round(first, 4), "cpu_s": round(cpu_seconds() - cpu0, 3),
                      "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "base_rss_kb": base_kb}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
