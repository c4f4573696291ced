# SPDX-License-Identifier: Apache-2.0
"""ferry.http.Client: many requests outstanding on one event loop (ferry::ops::http_client), and
client.reader(**options), a native asynchronous op for map, against a local HTTP server started
and stopped by the test. The bytes come in order with no GIL per item; up to `concurrency`
requests are outstanding at once; a 404 fails its item as read_url's does; transient failures
are retried by the client; a slow request ends promptly when the pipeline closes; wrong use is a
clear error; a forked child refuses the client instead of hanging."""
import threading
import time

import pytest
from conftest import run_child, run_counting_gil
from http_store import Store, holding

import ferry

if not ferry._ferry.has_http:
    pytest.skip("ferry.http is not built (ferry::http, FERRY_HTTP=OFF or no libcurl)",
                allow_module_level=True)

from ferry import http as fhttp  # noqa: E402

FILES = {f"/f{i}.bin": bytes([i % 256]) * (100 + 31 * i) + b"end" for i in range(120)}


@pytest.fixture()
def store():
    s = Store(FILES)
    yield s
    s.stop()


def test_a_reader_fetches_every_url_in_order_without_the_gil(store):
    client = fhttp.Client(max_outstanding=16)
    op = client.reader(timeout=20)
    assert isinstance(op, ferry.AsyncOp)
    assert repr(op) == "<ferry async op http.Client.reader(timeout=20.0)>"
    urls = [f"{store.url}/f{i}.bin" for i in range(120)]
    items, takes = run_counting_gil(ferry.source(urls).map(op, concurrency=16))
    assert [bytes(b) for b in items] == [FILES[f"/f{i}.bin"] for i in range(120)]
    assert takes == 0
    assert (client.outstanding, client.queued, client.retried) == (0, 0, 0)
    with ferry.source(urls[:10]).map_async(client.reader(), concurrency=4).build() as pipe:
        assert [bytes(b) for b in pipe] == [FILES[f"/f{i}.bin"] for i in range(10)]
        assert pipe.stats().stages[-1].kind == "map_async"
    # A labelled item (url, label): the op fetches the URL and keeps the label.
    labelled = [(urls[i], i % 3) for i in range(12)]
    with ferry.source(labelled).map(client.reader(), concurrency=8).build() as pipe:
        got = [(bytes(b), label) for b, label in pipe]
    assert got == [(FILES[f"/f{i}.bin"], i % 3) for i in range(12)]
    assert bytes(client.fetch(urls[7])) == FILES["/f7.bin"]
    assert bytes(client.fetch(urls[7], range=(2, 5))) == FILES["/f7.bin"][2:7]


# concurrency is how many requests are outstanding at once: a server that holds every answer
# until 8 requests have arrived answers them all, so 8 requests were in flight together
# (fast_start=False: else the source admits one item until the first output).
def test_concurrency_requests_are_outstanding_together():
    arrived = threading.Barrier(8, timeout=20)

    def answer(handler):
        arrived.wait()
        return False

    s = Store(FILES, answer)
    try:
        client = fhttp.Client(max_outstanding=8)
        urls = [f"{s.url}/f{i}.bin" for i in range(8)]
        with (ferry.source(urls).map(client.reader(), concurrency=8)
              .build(threads=1, fast_start=False)) as pipe:
            assert [bytes(b) for b in pipe] == [FILES[f"/f{i}.bin"] for i in range(8)]
    finally:
        s.stop()


def test_a_404_fails_its_item_as_read_url_does(store):
    client = fhttp.Client()
    urls = [f"{store.url}/f1.bin", f"{store.url}/missing.bin", f"{store.url}/f2.bin"]
    with (ferry.source(urls).map(client.reader(), concurrency=4, on_error="skip")
          .build(max_epoch_failure_rate=1.0)) as pipe:
        assert [bytes(b) for b in pipe] == [FILES["/f1.bin"], FILES["/f2.bin"]]
        failures = pipe.failures()
    assert len(failures) == 1
    assert failures[0].message.startswith(f"read_url: '{store.url}/missing.bin': HTTP 404")
    with ferry.source(urls[1:2]).map(client.reader()).build() as pipe:
        with pytest.raises(ferry.StageError) as e:
            list(pipe)
    assert isinstance(e.value.__cause__, ferry.IOError)
    with pytest.raises(ferry.IOError, match="HTTP 404"):
        client.fetch(urls[1])


# The client retries a transient failure (503) itself, with the policy it was made with, and
# http.hosts() counts the throttled answers; the stage's own retry does not apply and is refused.
def test_the_client_retries_transient_failures():
    seen = {}

    def answer(handler):
        n = seen.get(handler.path, 0)
        seen[handler.path] = n + 1
        if n < 2:
            handler.reply(503, b"busy", {"Retry-After": "0"})
            return True
        return False

    s = Store(FILES, answer)
    try:
        client = fhttp.Client(retry=ferry.retry(3, backoff=0.01))
        assert "attempts=3" in repr(client)
        urls = [f"{s.url}/f{i}.bin" for i in range(4)]
        with ferry.source(urls).map(client.reader(), concurrency=4).build() as pipe:
            assert [bytes(b) for b in pipe] == [FILES[f"/f{i}.bin"] for i in range(4)]
        assert client.retried == 8 and all(n == 3 for n in seen.values())
        # The host's adaptive state shows the throttling: 8 answers were 503s.
        [host] = [h for h in fhttp.hosts() if h.host == s.url]
        assert (host.throttled, host.requests, host.in_flight) == (8, 12, 0)
        assert host.limit >= 1 and repr(host).startswith(f"Host('{s.url}', limit=")
        once = fhttp.Client()
        with pytest.raises(ferry.IOError, match="503"):
            once.fetch(f"{s.url}/f9.bin")
        with pytest.raises(ValueError, match="retry"):
            ferry.source(urls).map(client.reader(), on_error=ferry.retry(2))
    finally:
        s.stop()


# A request the server never answers ends when the pipeline closes (the client cancels what is
# no longer wanted), well before the server would answer.
def test_closing_a_pipeline_cancels_slow_requests():
    with holding(FILES) as s:
        client = fhttp.Client()
        urls = [f"{s.url}/f{i}.bin" for i in range(4)]
        pipe = ferry.source(urls).map(client.reader(), concurrency=4).build()
        it = iter(pipe)
        result = {}

        def take():
            try:
                result["x"] = next(it)
            except BaseException as e:  # noqa: BLE001 (what ends the wait is the point)
                result["e"] = e

        t = threading.Thread(target=take)
        t.start()
        time.sleep(0.3)
        started = time.monotonic()
        pipe.close()
        closed_in = time.monotonic() - started
        t.join(10)
        assert not t.is_alive()
        assert closed_in < 10  # a hang bound: the server would answer only after 30 s
        assert client.outstanding == 0


# Ctrl-C during client.fetch() of a request the server holds cancels the request and raises
# KeyboardInterrupt (in a child interpreter: the signal would end pytest's session); the client
# then fetches again.
def test_ctrl_c_cancels_a_fetch_in_progress():
    with holding(FILES, "/slow.bin") as s:
        r = run_child(f"""
            import os, signal, threading, time
            from ferry import http as fhttp
            client = fhttp.Client()
            threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
            started = time.monotonic()
            try:
                client.fetch({s.url + "/slow.bin"!r})
                print("not interrupted", flush=True)
            except KeyboardInterrupt:
                print("interrupted", time.monotonic() - started < 10, flush=True)
            print(len(bytes(client.fetch({s.url + "/f5.bin"!r}))), flush=True)
        """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["interrupted True", str(len(FILES["/f5.bin"]))]


def test_wrong_use_is_a_clear_error(store, tmp_path):
    with pytest.raises(ValueError, match="max_outstanding"):
        fhttp.Client(max_outstanding=0)
    client = fhttp.Client()
    cache = fhttp.open_cache(tmp_path / "c")
    with pytest.raises(ValueError, match="cache"):
        client.reader(cache=cache)
    with pytest.raises(ValueError, match="executor"):
        ferry.source([]).map(client.reader(), executor="io")
    reader = client.reader(headers={"Authorization": "Bearer tok-s3cr3t"})
    assert "s3cr3t" not in repr(reader) and "Authorization" in repr(reader)
    with ferry.source([123]).map(client.reader(), on_error="skip").build(
            max_epoch_failure_rate=1.0) as pipe:
        assert list(pipe) == []
        assert "read_url expects a URL (str), got" in pipe.failures()[0].message


# A child forked after the client was made has no loop thread: using the client there is an
# error naming the cause, and the child exits without waiting for that thread.
def test_a_forked_child_refuses_the_client(store):
    r = run_child(f"""
        import os
        from ferry import http as fhttp
        import ferry
        client = fhttp.Client()
        assert len(bytes(client.fetch({store.url + "/f3.bin"!r}))) == {len(FILES["/f3.bin"])}
        pid = os.fork()
        if pid == 0:
            try:
                client.fetch({store.url + "/f3.bin"!r})
            except ferry.InvalidArgument as e:
                print("child:", e, flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("exit", os.waitstatus_to_exitcode(status), flush=True)
        print("parent", len(bytes(client.fetch({store.url + "/f3.bin"!r}))), flush=True)
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("child: http.Client.fetch(): this process was forked after the "
                               "client was made")
    assert lines[1:] == ["exit 0", f"parent {len(FILES['/f3.bin'])}"]
