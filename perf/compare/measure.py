# SPDX-License-Identifier: Apache-2.0
"""How perf/compare's scripts measure a loader run as its own process: its JSON line, and the peak
resident memory of its whole process tree (DataLoader workers included), sampled from /proc; and,
inside a loader, its CPU time and resident memory."""
import json
import os
import resource
import statistics
import subprocess
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def descendants(root):
    """`root` and all its descendants' pids, from a scan of /proc."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def rss_bytes(pids):
    """Resident bytes of `pids` (those still alive), from /proc/PID/statm."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass
    return total


def run_one(cmd):
    """Runs `cmd`, sampling its process tree's RSS; returns its JSON line plus tree_rss_mb."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample():
        # Reading a few statm files every 5 ms is cheap; scanning all of /proc for new workers
        # is not (on two cores it took CPU from the loader being measured): that is done every
        # 50 ms. DataLoader workers start with the iterator and live to the end of the run.
        tree, n = [proc.pid], 0
        while not done.is_set():
            if n % 10 == 0:
                tree = descendants(proc.pid)
            n += 1
            peak[0] = max(peak[0], rss_bytes(tree))
            done.wait(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
    r = json.loads(out.strip().splitlines()[-1])
    # The sampler can miss a short peak; the process's own high-water mark bounds it from below.
    r["tree_rss_mb"] = max(peak[0], r["max_rss_kb"] * 1024) / 1e6
    return r


def median_range(values):
    return statistics.median(values), min(values), max(values)


def cpu_seconds(children=True):
    """This process's CPU seconds (user + system), and its reaped children's with `children`."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    total = me.ru_utime + me.ru_stime
    if children:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        total += kids.ru_utime + kids.ru_stime
    return total


def drain(batches, t0, item_shape, dtype, expected, loader, what):
    """Runs a loader's `batches` to their end: (items, seconds from `t0` to the first batch, seconds
    from `t0` to the end). Exits naming `loader` where a batch's items are not `item_shape` of
    `dtype`, or where the items are not `expected` (`what`: "windows", "clips")."""
    first, items = None, 0
    for b in batches:
        if first is None:
            first = time.perf_counter() - t0
        if tuple(b.shape[1:]) != item_shape or b.dtype != dtype:
            raise SystemExit(f"{loader}: a batch of {tuple(b.shape)} {b.dtype}")
        items += b.shape[0]
    seconds = time.perf_counter() - t0
    if items != expected:
        raise SystemExit(f"{loader}: delivered {items} of {expected} {what}")
    return items, first, seconds


def resident_kb():
    """This process's resident memory now, in KiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE // 1024
