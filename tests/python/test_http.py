# SPDX-License-Identifier: Apache-2.0
"""ferry.http: read_url reads a list of URLs natively (no GIL per item) against a local HTTP
server started and stopped by the test; a 404 is a failure naming the URL and the status; no
password or token of a URL reaches a failure, an error or the stats; read_url(**options) sends
its headers and shows only their names; list_objects lists an S3 prefix from a local store and
its URLs read back; tar shards are read remotely by range requests; Ctrl-C cancels read_url
called directly."""
import pytest
from conftest import run_child, run_counting_gil
from http_store import Store, holding, tar_shards

import ferry

if not ferry._ferry.has_http:
    pytest.skip("ferry.http is not built (ferry::http, FERRY_HTTP=OFF or no libcurl)",
                allow_module_level=True)

from ferry import http as fhttp  # noqa: E402


@pytest.fixture()
def store():
    """A Store with 40 files /f<i>.bin; stopped after the test."""
    s = Store({f"/f{i}.bin": bytes([i]) * (100 + 37 * i) + b"end" for i in range(40)})
    yield s
    s.stop()


# read_url over a list of URL strings: each item's bytes, in order, fetched in C++ on I/O
# threads; the chain from the list to the loop takes the GIL for no item.
def test_read_url_reads_a_list_of_urls_natively(store):
    urls = [f"{store.url}/f{i}.bin" for i in range(40)]
    got, gil_takes = run_counting_gil(
        ferry.source(urls).map(fhttp.read_url, concurrency=4, executor="io"))
    assert gil_takes == 0
    assert [bytes(b) for b in got] == [store.files[f"/f{i}.bin"] for i in range(40)]
    assert isinstance(fhttp.read_url, ferry.Op) and repr(fhttp.read_url) == "<ferry op read_url>"
    # Called from Python, the op fetches one URL now.
    assert bytes(fhttp.read_url(urls[3])) == store.files["/f3.bin"]


# Ctrl-C during read_url called directly (a request the server holds for 30 s) cancels the
# request and raises KeyboardInterrupt at once, not when the request ends (in a child interpreter:
# the signal would end pytest's session); the op then reads again. From a thread other than the
# main one, where Python delivers no signals, the direct call reads as before.
def test_ctrl_c_cancels_read_url_called_directly(store):
    with holding(store.files, "/slow.bin") as s:
        r = run_child(f"""
            import os, signal, threading, time
            from ferry import http as fhttp
            threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
            started = time.monotonic()
            try:
                fhttp.read_url({s.url + "/slow.bin"!r})
                print("not interrupted", flush=True)
            except KeyboardInterrupt:
                print("interrupted", time.monotonic() - started < 10, flush=True)
            print(len(bytes(fhttp.read_url({s.url + "/f5.bin"!r}))), flush=True)
            got = []
            t = threading.Thread(target=lambda: got.append(fhttp.read_url({s.url + "/f6.bin"!r})))
            t.start()
            t.join()
            print(len(bytes(got[0])), flush=True)
        """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["interrupted True", str(len(store.files["/f5.bin"])),
                                        str(len(store.files["/f6.bin"]))]


# A 404 is a failure naming the URL and the status (ferry.IOError, not transient: asked once);
# under "skip" the other items arrive and the failure is recorded with its URL as input.
def test_a_404_is_a_failure_naming_the_url_and_status(store):
    missing = f"{store.url}/missing.bin"
    with (ferry.source([f"{store.url}/f1.bin", missing, f"{store.url}/f2.bin"])
          .map(fhttp.read_url, executor="io", on_error=ferry.retry(3, backoff=0.0, then="skip"),
               name="fetch")
          .build(threads=1)) as pipe:
        got = [bytes(b) for b in pipe]
        [f] = pipe.failures()
    assert got == [store.files["/f1.bin"], store.files["/f2.bin"]]
    assert f.stage == "fetch" and f.input == missing and f.code == "io"
    assert f.message.startswith(f"read_url: '{missing}': HTTP 404")
    assert [p for p, _ in store.requests].count("/missing.bin") == 1  # a 404 is not retried
    with ferry.source([missing]).map(fhttp.read_url).build() as pipe:
        with pytest.raises(ferry.StageError) as e:
            list(pipe)
    assert isinstance(e.value.__cause__, ferry.IOError)
    assert isinstance(e.value.__cause__, OSError)
    assert str(e.value.__cause__).startswith(f"read_url: '{missing}': HTTP 404")
    with pytest.raises(ferry.IOError, match="HTTP 404"):
        fhttp.read_url(missing)


# A URL's password (user:password@) and query tokens (a presigned URL's signature, an access
# token) appear in no failure message, failure input, StageError, stats table or stats dict:
# ferry shows them REDACTED.
def test_url_credentials_never_show(store):
    port = store.server.server_address[1]
    secret_urls = [
        f"http://alice:pw-s3cr3t@127.0.0.1:{port}/missing.bin",
        f"{store.url}/missing.bin?X-Amz-Signature=sig-s3cr3t&X-Amz-Credential=cred-s3cr3t",
        f"{store.url}/missing.bin?access_token=tok-s3cr3t",
    ]
    with (ferry.source(secret_urls)
          .map(fhttp.read_url, on_error="skip", executor="io")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        assert list(pipe) == []
        failures = pipe.failures()
        texts = [str(pipe.stats()), repr(pipe.stats().as_dict())]
    assert len(failures) == 3
    texts += [f.message for f in failures] + [f.input for f in failures]
    with ferry.source(secret_urls[:1]).map(fhttp.read_url).build() as pipe:
        with pytest.raises(ferry.StageError) as e:
            list(pipe)
    texts += [str(e.value), str(e.value.__cause__), e.value.input, e.value.cause]
    for text in texts:
        assert "s3cr3t" not in text, text
    assert "REDACTED" in failures[0].message and "HTTP 404" in failures[0].message
    assert "127.0.0.1" in failures[1].input and "REDACTED" in failures[1].input


# read_url(**options) is an op with those http options: it sends its headers (a dict or
# 'Name: value' lines) and shows only their names; a header holding a line break is refused
# without showing its value; bad times are ValueErrors.
def test_read_url_options_send_headers_and_show_only_their_names(store):
    op = fhttp.read_url(headers={"X-Api-Key": "key-s3cr3t"}, timeout=20, max_bytes=1 << 20)
    assert isinstance(op, fhttp.ReadUrl)
    assert repr(op) == ("<ferry op read_url(timeout=20.0, max_bytes=1048576, "
                        "headers=['X-Api-Key'])>")
    with ferry.source([f"{store.url}/f5.bin"]).map(op, executor="io").build() as pipe:
        assert [bytes(b) for b in pipe] == [store.files["/f5.bin"]]
    assert store.requests[-1][1].get("X-Api-Key") == "key-s3cr3t"
    ranged = fhttp.read_url(range=(10, 5), headers=["X-Trace: 1"])
    assert bytes(ranged(f"{store.url}/f5.bin")) == store.files["/f5.bin"][10:15]
    assert store.requests[-1][1].get("X-Trace") == "1"
    with pytest.raises(ferry.InvalidArgument) as e:
        fhttp.read_url(headers={"Authorization": "Bearer tok-s3cr3t\r\nX-Evil: 1"})
    assert "header 'Authorization' holds a line break" in str(e.value)
    assert "s3cr3t" not in str(e.value)
    with pytest.raises(ValueError, match="timeout is a number of seconds"):
        fhttp.read_url(timeout=-1)
    # A wrong item is a failure naming what read_url expects and what it got.
    with (ferry.source([3]).map(fhttp.read_url, on_error="skip")
          .build(max_epoch_failure_rate=1.0)) as pipe:
        assert list(pipe) == []
        assert pipe.failures()[0].message == "read_url expects a URL (str), got an int"


def listing(keys, token=None):
    """A ListObjectsV2 page as S3 writes it."""
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult '
            'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bkt</Name>')
    body += "".join(f"<Contents><Key>{k}</Key><Size>1</Size></Contents>" for k in keys)
    body += ("<IsTruncated>false</IsTruncated>" if token is None else
             f"<IsTruncated>true</IsTruncated><NextContinuationToken>{token}"
             "</NextContinuationToken>")
    return (body + "</ListBucketResult>").encode()


@pytest.fixture()
def s3_env(monkeypatch, tmp_path):
    """No AWS credentials (requests go unsigned) and a region; the test sets the endpoint."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    return monkeypatch


# list_objects lists an S3 prefix page by page (a local store speaking ListObjectsV2, path-style
# at AWS_ENDPOINT_URL), folder markers left out, as s3:// URLs that ferry.source visits natively
# and read_url reads back from the same store.
def test_list_objects_lists_a_prefix_and_its_urls_read_back(s3_env):
    objects = {f"/bkt/train/{i:03d}.bin": f"object {i}".encode() * (i + 1) for i in range(7)}

    def answer(handler):
        if not handler.path.startswith("/bkt?") and not handler.path.startswith("/bkt/?"):
            return False
        query = handler.path.split("?", 1)[1]
        keys = sorted(k[len("/bkt/"):] for k in objects) + ["train/folder/"]
        if "continuation-token=page2" in query:
            body = listing(keys[4:])
        else:
            assert "prefix=train%2F" in query or "prefix=train/" in query, query
            body = listing(keys[:4], token="page2")
        handler.reply(200, body, {"Content-Type": "application/xml"})
        return True

    s = Store(objects, answer)
    try:
        s3_env.setenv("AWS_ENDPOINT_URL", s.url)
        urls = fhttp.list_objects("s3://bkt/train/", page_size=4)
        assert urls == [f"s3://bkt/train/{i:03d}.bin" for i in range(7)]
        assert ferry.sources.list_objects is fhttp.list_objects
        with (ferry.source(urls).map(fhttp.read_url, concurrency=2, executor="io")
              .build(threads=2)) as pipe:
            assert [bytes(b) for b in pipe] == [objects[f"/bkt/train/{i:03d}.bin"]
                                                for i in range(7)]
        with pytest.raises(ferry.InvalidArgument, match="not an S3 bucket name"):
            fhttp.list_objects("s3://../train/")
        with pytest.raises(ValueError):
            fhttp.list_objects("s3://bkt/train/", page_size=0)
    finally:
        s.stop()


# tar shards over http: tar_samples(urls, read_remote=read_url) reads them by range requests in
# remote_chunk pieces, the same samples as from the local files.
def test_tar_samples_read_remote_shards_by_ranges(tmp_path):
    if not getattr(ferry._ferry, "has_shards", False):
        pytest.skip("ferry.shards is not built (FERRY_SHARDS=OFF): no remote shards to read")
    files, expected = tar_shards()
    store = Store(files)
    try:
        urls = [f"{store.url}/shard-{s}.tar" for s in range(2)]
        tar = ferry.shards.tar_samples(urls, read_remote=fhttp.read_url, remote_chunk=4096)
        with ferry.source(tar).build(threads=2) as pipe:
            got = [(dict(x)["__key__"], bytes(dict(x)["bin"])) for x in pipe]
        assert got == expected
        ranges = [h.get("Range") for _, h in store.requests]
        assert all(r is not None for r in ranges) and len(ranges) > 2
    finally:
        store.stop()
