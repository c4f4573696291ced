#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""URLs from Python: objects from a local nginx fetched by a thread pool calling
urllib.request.urlopen (what a Python loader does without ferry), by ferry's read_url on I/O
threads (a thread per request outstanding) and by ferry's http.Client reader (one event loop),
each with the same number of requests outstanding, rows in a rotated order per repetition, in
one process. Prints objects/s (medians), the ratio to the thread pool, the process's CPU seconds
per 1000 objects and the most threads it had. Every row checks every object's bytes.

    apt-get install nginx-light
    PYTHONPATH=build/python /usr/bin/python3 perf/compare/python_urls.py --objects 4000 --reps 3

The server shares the machine's cores with the client, and loopback has no latency: what many
outstanding requests buy against a distant store is larger than what this shows.
"""
import argparse
import concurrent.futures
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

import ferry
from ferry import http


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx serving `root` on 127.0.0.1 (one worker, keep-alive, sendfile), stopped on exit."""

    def __init__(self, root, work):
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(binary):
            raise SystemExit("nginx not found: apt-get install nginx-light")
        self.port = free_port()
        os.makedirs(os.path.join(work, "logs"), exist_ok=True)
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/logs/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off; sendfile on; tcp_nopush on;
  keepalive_requests 1000000; keepalive_timeout 60;
  client_body_temp_path {work}/tmp;
  server {{ listen 127.0.0.1:{self.port} backlog=4096; root {root}; }}
}}
""")
        self.proc = subprocess.Popen([binary, "-p", work, "-c", conf])
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"nginx did not start; see {work}/logs/error.log")
                time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def urllib_pool(urls, outstanding):
    def get(url):
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read()

    with concurrent.futures.ThreadPoolExecutor(max_workers=outstanding) as pool:
        return list(pool.map(get, urls))


def ferry_read_url(urls, outstanding):
    with (ferry.source(urls).map(http.read_url, concurrency=outstanding, executor="io")
          .build(threads=2, fast_start=False)) as pipe:
        return [bytes(b) for b in pipe]


def ferry_client(urls, outstanding):
    client = http.Client(max_outstanding=outstanding)
    with (ferry.source(urls).map(client.reader(), concurrency=outstanding)
          .build(threads=2, fast_start=False)) as pipe:
        return [bytes(b) for b in pipe]


class PeakThreads:
    """The most threads this process had while it ran (sampled every 5 ms from /proc)."""

    def __enter__(self):
        self.peak, self.done = 0, threading.Event()
        self.thread = threading.Thread(target=self.sample)
        self.thread.start()
        return self

    def sample(self):
        while not self.done.wait(0.005):
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("Threads:"):
                        self.peak = max(self.peak, int(line.split()[1]))

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


LOADERS = {"urllib, thread pool": urllib_pool, "ferry read_url, I/O threads": ferry_read_url,
           "ferry http.Client": ferry_client}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=4000)
    ap.add_argument("--kb", type=int, default=16, help="each object's size")
    ap.add_argument("--outstanding", default="8,64,256")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ferry-urls-")
    try:
        os.chmod(work, 0o755)  # nginx's workers read the files as another user
        root = os.path.join(work, "www")
        os.makedirs(root, mode=0o755)
        expected = []
        for i in range(args.objects):
            body = (i.to_bytes(4, "little") * (args.kb * 256))[:args.kb * 1024]
            with open(os.path.join(root, f"{i:06d}.bin"), "wb") as f:
                f.write(body)
            expected.append(body)
        server = Nginx(root, work)
        try:
            urls = [f"{server.url}/{i:06d}.bin" for i in range(args.objects)]
            rows = [(int(n), name) for n in args.outstanding.split(",") for name in LOADERS]
            rate = {r: [] for r in rows}
            cpu = {r: [] for r in rows}
            threads = {r: [] for r in rows}
            for rep in range(args.reps):
                order = rows[rep % len(rows):] + rows[:rep % len(rows)]
                for r in order:
                    with PeakThreads() as peak:
                        t0, c0 = time.perf_counter(), time.process_time()
                        got = LOADERS[r[1]](urls, r[0])
                        seconds, cpu_s = time.perf_counter() - t0, time.process_time() - c0
                    if got != expected:
                        raise SystemExit(f"{r[1]} at {r[0]}: wrong bytes")
                    rate[r].append(args.objects / seconds)
                    cpu[r].append(cpu_s / args.objects * 1000)
                    threads[r].append(peak.peak - 1)  # less the sampler
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.objects} objects of {args.kb} KiB from a local nginx, median of "
          f"{args.reps}, {os.cpu_count()} cores, ferry {ferry.__version__}\n")
    print("| outstanding | loader | objects/s | ÷ urllib pool | CPU s per 1000 objects "
          "| peak threads |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in [int(x) for x in args.outstanding.split(",")]:
        base = statistics.median(rate[(n, "urllib, thread pool")])
        for name in LOADERS:
            r = (n, name)
            med = statistics.median(rate[r])
            print(f"| {n} | {name} | {med:.0f} | {med / base:.2f} | "
                  f"{statistics.median(cpu[r]):.3f} | {max(threads[r])} |")


if __name__ == "__main__":
    main()
