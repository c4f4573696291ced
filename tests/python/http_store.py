# SPDX-License-Identifier: Apache-2.0
"""A local HTTP server for the ferry.http tests (test_http.py, test_cache.py), on 127.0.0.1 at a
free port, started and stopped by the test."""
import contextlib
import hashlib
import http.server
import io
import re
import tarfile
import threading


def tar_shards(shards=2, samples=5):
    """WebDataset-like tar shards for a Store: ({"/shard-<s>.tar": bytes}, [(key, data)] in
    shard and member order), each member a few KiB of text naming its shard and sample."""
    files, expected = {}, []
    for s in range(shards):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(samples):
                data = f"shard {s} sample {i} ".encode() * 300
                info = tarfile.TarInfo(f"s{s}/{i:02d}.bin")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                expected.append((f"s{s}/{i:02d}", data))
        files[f"/shard-{s}.tar"] = buf.getvalue()
    return files, expected


class Store:
    """A local HTTP server on 127.0.0.1 (a free port) serving `files` (path -> bytes) with byte
    ranges, 404 for other paths; `answer(handler)` may answer a request itself (return True).
    It records each request's path and headers. With `etags`, each answer carries the body's
    ETag and a GET whose If-None-Match holds it is answered 304."""

    def __init__(self, files=None, answer=None, etags=False):
        self.files = dict(files or {})
        self.requests = []
        store = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 (http.server's name)
                store.requests.append((self.path, dict(self.headers)))
                if answer is not None and answer(self):
                    return
                body = store.files.get(self.path.split("?")[0])
                if body is None:
                    self.reply(404, b"no such file")
                    return
                extra = {}
                if etags:
                    extra["ETag"] = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                    if self.headers.get("If-None-Match") == extra["ETag"]:
                        self.reply(304, b"", extra)
                        return
                ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
                if ranged:
                    first = int(ranged.group(1))
                    last = int(ranged.group(2)) if ranged.group(2) else len(body) - 1
                    if first >= len(body):
                        self.reply(416, b"", {"Content-Range": f"bytes */{len(body)}"})
                        return
                    last = min(last, len(body) - 1)
                    self.reply(206, body[first:last + 1],
                               {"Content-Range": f"bytes {first}-{last}/{len(body)}", **extra})
                    return
                self.reply(200, body, extra)

            def reply(self, status, body, headers=None):
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            request_queue_size = 128  # the default 5 drops the SYNs of many connects at once

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@contextlib.contextmanager
def holding(files, path=None):
    """A Store of `files` that holds each request for `path` (None: every request) unanswered
    until the block ends (at most 30 s), then stops: what cancelling a request is tested on."""
    release = threading.Event()

    def answer(handler):
        if path is None or handler.path == path:
            release.wait(30)
        return False

    s = Store(files, answer)
    try:
        yield s
    finally:
        release.set()
        s.stop()
