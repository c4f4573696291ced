# SPDX-License-Identifier: Apache-2.0
"""ferry.http.open_cache: read_url(cache=...) reads remote objects through a local disk cache
(ferry::ops::open_cache) against a local HTTP server started and stopped by the test. A second
epoch, another pipeline and another process read the local files with no request and the same
bytes; tar shards read by ranges come from the local copy; the budget evicts and keeps no
oversized object; revalidation asks the server; a credential of unknown identity bypasses the
cache and no secret reaches the folder; a failed read is not cached; an unsafe folder and bad
options are refused with the fix named."""
import os

import pytest
from conftest import run_child, run_counting_gil
from http_store import Store, tar_shards

import ferry

if not ferry._ferry.has_http:
    pytest.skip("ferry.http is not built (ferry::http, FERRY_HTTP=OFF or no libcurl)",
                allow_module_level=True)

from ferry import http as fhttp  # noqa: E402

FILES = {f"/f{i}.bin": bytes([i]) * (200 + 53 * i) + b"end" for i in range(24)}


@pytest.fixture()
def store():
    """A Store with 24 files /f<i>.bin; stopped after the test."""
    s = Store(FILES)
    yield s
    s.stop()


def urls_of(store):
    return [f"{store.url}/f{i}.bin" for i in range(24)]


def expected():
    return [FILES[f"/f{i}.bin"] for i in range(24)]


# The first epoch downloads each object once into the folder; the second epoch, and a second
# pipeline sharing the Cache, read the local files: the server sees no request, the bytes are the
# same, the counters say so, and the chain from the list through the op takes the GIL for no item.
def test_a_second_epoch_reads_the_local_files(store, tmp_path):
    cache = fhttp.open_cache(tmp_path / "cache")
    op = fhttp.read_url(cache=cache)
    assert repr(op) == f"<ferry op read_url(cache=Cache({str(tmp_path / 'cache')!r}))>"
    assert repr(cache) == f"Cache({str(tmp_path / 'cache')!r})"
    assert cache.dir == tmp_path / "cache" and cache.max_bytes == 0
    with ferry.source(urls_of(store)).map(op, concurrency=4, executor="io").build(threads=2) as p:
        first = [bytes(b) for b in p]
        assert len(store.requests) == 24
        second = [bytes(b) for b in p]
        counters = p.stats().stages[-1].counters
    assert first == expected() and second == expected()
    assert counters.get("cache misses") == 24 and counters.get("cache hits") == 24
    assert len(store.requests) == 24
    items, takes = run_counting_gil(ferry.source(urls_of(store)).map(op, executor="io"))
    assert [bytes(b) for b in items] == expected() and takes == 0
    assert len(store.requests) == 24
    s = cache.stats()
    total = sum(len(b) for b in expected())
    assert (s.misses, s.hits, s.entries) == (24, 48, 24)
    assert s.bytes_fetched == total and s.bytes_stored == total
    assert (s.evictions, s.not_kept, s.failures, s.bypassed, s.invalid_entries) == (0, 0, 0, 0, 0)
    assert "hits=48" in repr(s)
    entry = cache.entry_path(f"{store.url}/f3.bin")
    assert entry.parent == tmp_path / "cache" and entry.read_bytes().startswith(FILES["/f3.bin"])
    assert not cache.entry_path(f"{store.url}/never-read.bin").exists()


# Another process opening the same folder reads the entries this one filled, with no request.
def test_another_process_reads_the_same_folder(store, tmp_path):
    cache = fhttp.open_cache(tmp_path / "cache")
    with ferry.source(urls_of(store)).map(fhttp.read_url(cache=cache)).build() as p:
        assert [bytes(b) for b in p] == expected()
    child = run_child(f"""
        import ferry
        from ferry import http as fhttp
        cache = fhttp.open_cache({str(tmp_path / "cache")!r})
        with ferry.source({urls_of(store)!r}).map(fhttp.read_url(cache=cache)).build() as p:
            got = [bytes(b) for b in p]
        s = cache.stats()
        print(sum(map(len, got)), s.hits, s.misses)
    """)
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == [str(sum(map(len, expected()))), "24", "0"]
    assert len(store.requests) == 24


# A range is read from the local copy: the first read of an object fetches it whole, every range
# after that makes no request. Tar shards read by ranges through the cache (what
# tar_samples(read_remote=read_url(cache=...)) does) give the same samples in both epochs, the
# second with no request at all.
def test_ranges_and_tar_shards_come_from_the_local_copy(store, tmp_path):
    cache = fhttp.open_cache(tmp_path / "cache")
    body = FILES["/f9.bin"]
    assert bytes(fhttp.read_url(cache=cache, range=(5, 10))(f"{store.url}/f9.bin")) == body[5:15]
    assert bytes(fhttp.read_url(cache=cache, range=(100, 0))(f"{store.url}/f9.bin")) == body[100:]
    assert len(store.requests) == 1 and "Range" not in store.requests[0][1]
    if not getattr(ferry._ferry, "has_shards", False):
        return
    files, samples = tar_shards()
    shards = Store(files)
    try:
        urls = [f"{shards.url}/shard-{s}.tar" for s in range(2)]
        tar = ferry.shards.tar_samples(urls, read_remote=fhttp.read_url(cache=cache),
                                       remote_chunk=4096)
        with ferry.source(tar).build(threads=2) as pipe:
            for epoch in range(2):
                got = [(dict(x)["__key__"], bytes(dict(x)["bin"])) for x in pipe]
                assert got == samples, epoch
                assert len(shards.requests) == 2, epoch  # one whole GET per shard, in epoch 0
    finally:
        shards.stop()


# max_bytes bounds the folder: reading past it evicts the least recently used entries (the next
# read of one goes to the server again); an object larger than the budget is answered, not kept.
def test_the_budget_evicts_and_keeps_no_oversized_object(tmp_path):
    files = {f"/o{i}.bin": bytes([65 + i]) * 1000 for i in range(4)}
    files["/big.bin"] = b"B" * 5000
    store = Store(files)
    try:
        cache = fhttp.open_cache(tmp_path / "cache", max_bytes=2500)
        read = fhttp.read_url(cache=cache)
        for i in range(4):
            assert bytes(read(f"{store.url}/o{i}.bin")) == files[f"/o{i}.bin"]
        s = cache.stats()
        assert s.misses == 4 and s.evictions >= 2 and s.entries <= 2
        assert not cache.entry_path(f"{store.url}/o0.bin").exists()
        assert bytes(read(f"{store.url}/o0.bin")) == files["/o0.bin"]
        assert len(store.requests) == 5
        assert bytes(read(f"{store.url}/big.bin")) == files["/big.bin"]
        assert cache.stats().not_kept == 1
        assert not cache.entry_path(f"{store.url}/big.bin").exists()
        stored = sum(e.stat().st_size for e in (tmp_path / "cache").iterdir()
                     if not e.name.startswith("."))
        assert stored <= 2500 + 2 * 512  # the entries' bodies within budget, plus their records
    finally:
        store.stop()


# revalidate=True asks the server on every hit (If-None-Match with the entry's ETag): a 304 reads
# the local copy, a changed object (200) replaces it.
def test_revalidate_asks_the_server_and_takes_a_changed_object(tmp_path):
    store = Store({"/v.bin": b"version 1" * 50}, etags=True)
    try:
        cache = fhttp.open_cache(tmp_path / "cache", revalidate=True)
        assert repr(cache).endswith(", revalidate=True)")
        read = fhttp.read_url(cache=cache)
        url = f"{store.url}/v.bin"
        assert bytes(read(url)) == b"version 1" * 50
        assert bytes(read(url)) == b"version 1" * 50
        assert store.requests[1][1].get("If-None-Match") is not None
        assert cache.stats().revalidated == 1
        store.files["/v.bin"] = b"version 2" * 50
        assert bytes(read(url)) == b"version 2" * 50
        assert bytes(read(url)) == b"version 2" * 50
        s = cache.stats()
        assert (s.hits, s.revalidated, len(store.requests)) == (2, 2, 4)
        assert cache.entry_path(url).read_bytes().startswith(b"version 2" * 50)
    finally:
        store.stop()


# A read carrying a credential whose identity ferry cannot tell (a bearer token) goes past the
# cache unless cache_unidentified=True; either way no secret reaches the folder's files or the
# op's repr.
def test_a_bearer_token_bypasses_the_cache_and_never_reaches_the_folder(store, tmp_path):
    url = f"{store.url}/f4.bin"
    headers = {"Authorization": "Bearer tok-s3cr3t"}
    cache = fhttp.open_cache(tmp_path / "plain")
    read = fhttp.read_url(cache=cache, headers=headers)
    assert "s3cr3t" not in repr(read)
    assert bytes(read(url)) == FILES["/f4.bin"] and bytes(read(url)) == FILES["/f4.bin"]
    assert (cache.stats().bypassed, len(store.requests)) == (2, 2)
    assert [e for e in (tmp_path / "plain").iterdir() if not e.name.startswith(".")] == []
    assert cache.entry_path("http://tok-s3cr3t@127.0.0.1/f4.bin") is None

    shared = fhttp.open_cache(tmp_path / "shared", cache_unidentified=True)
    read = fhttp.read_url(cache=shared, headers=headers)
    assert bytes(read(url)) == FILES["/f4.bin"] and bytes(read(url)) == FILES["/f4.bin"]
    assert (shared.stats().hits, shared.stats().bypassed, len(store.requests)) == (1, 0, 3)
    # Never served to an anonymous read: that one is fetched again.
    assert bytes(fhttp.read_url(cache=shared)(url)) == FILES["/f4.bin"]
    assert len(store.requests) == 4
    for folder in (tmp_path / "plain", tmp_path / "shared"):
        for entry in folder.iterdir():
            if entry.is_file():
                assert b"s3cr3t" not in entry.read_bytes(), entry


# A read that fails (404) is a failure naming the URL and is not cached: once the object exists,
# the next read fetches it.
def test_a_failed_read_is_not_cached(store, tmp_path):
    cache = fhttp.open_cache(tmp_path / "cache")
    url = f"{store.url}/late.bin"
    with (ferry.source([url]).map(fhttp.read_url(cache=cache), on_error="skip", executor="io")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        assert list(pipe) == []
        failures = pipe.failures()
    assert len(failures) == 1 and "HTTP 404" in failures[0].message and url in failures[0].message
    assert not cache.entry_path(url).exists()
    store.files["/late.bin"] = b"here now"
    assert bytes(fhttp.read_url(cache=cache)(url)) == b"here now"
    assert len(store.requests) == 2 and cache.stats().entries == 1


# A folder others could write to is refused with the fix named; so is a path that is a file;
# bad options are errors when the cache or op is made.
def test_unsafe_folders_and_bad_options_are_refused(tmp_path):
    open_ = tmp_path / "open"
    open_.mkdir()
    os.chmod(open_, 0o777)
    with pytest.raises(ferry.IOError, match=r"writable by group or others \(mode 0777\).*chmod 700"):
        fhttp.open_cache(open_)
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(ferry.IOError, match="file"):
        fhttp.open_cache(tmp_path / "file")
    with pytest.raises(ValueError, match="lock_wait"):
        fhttp.open_cache(tmp_path / "c", lock_wait=-1.0)
    with pytest.raises(ValueError, match="lock_wait"):
        fhttp.open_cache(tmp_path / "c", lock_wait=float("nan"))
    with pytest.raises(TypeError):
        fhttp.open_cache(tmp_path / "c", max_bytes=-1)
    with pytest.raises(TypeError, match=r"ferry\.http\.Cache.*got a Python str"):
        fhttp.read_url(cache=str(tmp_path / "c"))
    cache = fhttp.open_cache(str(tmp_path / "c"), max_bytes=1 << 20, lock_wait=0.5)
    assert os.stat(tmp_path / "c").st_mode & 0o777 == 0o700
    assert repr(cache) == f"Cache({str(tmp_path / 'c')!r}, max_bytes=1048576)"
