# SPDX-License-Identifier: Apache-2.0
"""ferry.shards: tar_samples over shards written with Python's tarfile gives WebDataset's keys
and members natively, its damage fails the sample that holds it (named <shard>#<key>) and not the
epoch, the sample ops read members and labels without the GIL, and a pipeline over it resumes
exactly."""
import io
import itertools
import tarfile

import pytest
from conftest import run_counting_gil

import ferry

if not ferry._ferry.has_shards:
    pytest.skip("ferry.shards is not built (ferry::shards, FERRY_SHARDS=OFF or no libarchive)",
                allow_module_level=True)

from ferry import shards  # noqa: E402


def member_bytes(shard, key, ext):
    """What member key.ext of shard holds: distinct per shard, key and extension."""
    if ext == "cls":
        return str(len(key) * 7 + shard).encode()
    return f"{shard}/{key}.{ext}:".encode() * (3 + len(key))


def write_shard(path, shard, keys, exts=("bin", "cls")):
    """A tar at path holding, for each key, one member per extension (in that order)."""
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for key in keys:
            for ext in exts:
                data = member_bytes(shard, key, ext)
                info = tarfile.TarInfo(f"{key}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return str(path)


def as_dict(sample):
    """A sample as WebDataset's dict, its members as Python bytes."""
    return {k: (bytes(v) if isinstance(v, ferry.Bytes) else v) for k, v in dict(sample).items()}


@pytest.fixture()
def three_shards(tmp_path):
    """Three shards of 4 samples each (keys s<shard>k<i>, the first shard's in a folder, as
    WebDataset's keys are paths); returns (paths, the hand-written order of (shard path, key))."""
    paths, order = [], []
    for s in range(3):
        keys = [f"{'train/' if s == 0 else ''}s{s}k{i}" for i in range(4)]
        path = write_shard(tmp_path / f"shard-{s}.tar", s, keys)
        paths.append(path)
        order += [(path, k) for k in keys]
    return paths, order


# Each sample is the tuple of (name, value) pairs whose dict is WebDataset's: its members' bytes
# by extension, __key__ (the name before the first dot of its last component) and __url__ (the
# shard), shard after shard in the order given, members in the shard's order.
def test_tar_samples_give_keys_and_members_in_shard_order(three_shards):
    paths, order = three_shards
    tar = shards.tar_samples(paths)
    assert repr(tar) == "<ferry.shards.TarSamples: 3 shards>" and tar.shards == paths
    with ferry.source(tar).build(threads=2) as pipe:
        got = list(pipe)
    assert [as_dict(s) for s in got] == [
        {"bin": member_bytes(paths.index(p), k, "bin"),
         "cls": member_bytes(paths.index(p), k, "cls"),
         "__key__": k, "__url__": p}
        for p, k in order]
    # Members first in extension order, the reserved names last (they win in dict()).
    assert [name for name, _ in got[0]] == ["bin", "cls", "__key__", "__url__"]
    assert isinstance(got[0][0][1], ferry.Bytes)


def member_bytes_of(paths, path, key):
    """Member key.bin's bytes of the shard at path."""
    return member_bytes(paths.index(path), key, "bin")


# field, fields and labelled read a sample's members natively (no GIL taken per item between the
# source and the loop): labelled gives the labelled item [bytes, int(cls)].
def test_sample_ops_read_members_and_labels_without_the_gil(three_shards):
    paths, order = three_shards
    labelled, gil_takes = run_counting_gil(
        ferry.source(shards.tar_samples(paths)).map(shards.labelled("bin", "cls"), concurrency=2))
    assert gil_takes == 0
    assert [[bytes(b), label] for b, label in labelled] == [
        [member_bytes_of(paths, p, k), int(member_bytes(paths.index(p), k, "cls"))]
        for p, k in order]
    with (ferry.source(shards.tar_samples(paths))
          .map(shards.fields("cls", "bin"))
          .build(threads=1)) as pipe:
        pairs = [[bytes(x) for x in item] for item in pipe]
    assert pairs == [[member_bytes(paths.index(p), k, "cls"),
                      member_bytes_of(paths, p, k)] for p, k in order]
    with ferry.source(shards.tar_samples(paths[:1])).map(shards.field("bin")).build() as pipe:
        assert [bytes(b) for b in pipe] == [member_bytes_of(paths, p, k) for p, k in order[:4]]
    assert repr(shards.labelled("jpg")) == "<ferry op labelled('jpg', label='cls')>"


# A sample without the member asked for fails under the stage's policy, named <shard>#<key>, with
# C++'s message (the extension asked for and those it has); a value that is no sample is a
# failure naming what the op expects and what it got.
def test_a_missing_member_and_a_wrong_input_fail_naming_them(three_shards):
    paths, order = three_shards
    with (ferry.source(shards.tar_samples(paths[1:2]))
          .map(shards.field("jpg"), on_error="skip", name="jpg")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        assert list(pipe) == []
        failures = pipe.failures()
    assert [f.input for f in failures] == [f"{p}#{k}" for p, k in order[4:8]]
    assert failures[0].stage == "jpg" and failures[0].code == "decode"
    assert failures[0].message == (f"tar_samples: shard '{paths[1]}', sample 's1k0': no member "
                                   "with extension 'jpg' (it has: bin, cls)")
    with (ferry.source(["a.tar"]).map(shards.field("bin"), on_error="skip")
          .build(threads=1, max_epoch_failure_rate=1.0)) as pipe:
        assert list(pipe) == []
        [f] = pipe.failures()
    assert f.message == "field expects a tar sample (from ferry.shards.tar_samples), got a str"
    assert f.code == "invalid_argument"


# A shard cut inside a member (the documented damage): the samples before the cut arrive, the cut
# one fails the first stage that reads its members, named <shard>#<key> and saying how much of
# the member there was, and the next shard is read as usual; the accounting adds up. With "fail"
# the loop raises StageError naming the sample, chained to ferry.DecodeError.
def test_a_cut_shard_fails_the_cut_sample_only(tmp_path):
    whole = write_shard(tmp_path / "whole.tar", 0, ["k0", "k1", "k2", "k3"])
    data = open(whole, "rb").read()
    # Each member is a 512-byte header and its data padded to 512: member 5 (k2.cls) has its
    # header at 5 * 1024 and its data at 5 * 1024 + 512; cut 1 byte into that data.
    cls_size = len(member_bytes(0, "k2", "cls"))
    cut = tmp_path / "cut.tar"
    cut.write_bytes(data[:5 * 1024 + 512 + 1])
    cut = str(cut)
    following = write_shard(tmp_path / "next.tar", 1, ["n0", "n1"])
    with (ferry.source(shards.tar_samples([cut, following]))
          .map(shards.field("bin"), on_error="skip", name="read")
          .build(threads=2, max_epoch_failure_rate=1.0)) as pipe:
        got = [bytes(b) for b in pipe]
        [failure] = pipe.failures()
        stats = pipe.stats().as_dict()
    assert got == [member_bytes(0, "k0", "bin"), member_bytes(0, "k1", "bin"),
                   member_bytes(1, "n0", "bin"), member_bytes(1, "n1", "bin")]
    assert failure.input == f"{cut}#k2" and failure.stage == "read"
    assert failure.code == "decode"
    # libarchive reads whole 512-byte blocks: the member's partial block counts as none of it
    # (tests/shards/damaged.cpp's cut says the same).
    assert failure.message == (f"tar_samples: shard '{cut}', member 'k2.cls': cut short after 0 "
                               f"of {cls_size} bytes: Truncated tar archive")
    assert stats["produced"] == 5 and stats["delivered"] == 4 and stats["failed"] == 1
    with ferry.source(shards.tar_samples([cut])).map(shards.field("bin")).build() as pipe:
        with pytest.raises(ferry.StageError) as e:
            list(pipe)
    assert e.value.input == f"{cut}#k2"
    assert isinstance(e.value.__cause__, ferry.DecodeError)
    assert str(e.value.__cause__) == failure.message
    # In Python the damaged sample says so: its pairs end with ("__damage__", (code, message,
    # path)).
    with ferry.source(shards.tar_samples([cut])).build() as pipe:
        damaged = as_dict(list(pipe)[-1])
    code, message, path = damaged["__damage__"]
    assert (code, path, damaged["__key__"]) == ("decode", f"{cut}#k2", "k2")
    assert "cut short" in message


def take(pipe, k, keep):
    """The first k samples' (shard, key) of the running epoch; the iterator is kept open in
    keep (dropping it would end the epoch)."""
    it = iter(pipe)
    keep.append(it)
    return [(d["__url__"], d["__key__"]) for d in map(dict, itertools.islice(it, k))]


def keys_of(pipe):
    return [(d["__url__"], d["__key__"]) for d in map(dict, pipe)]


# In order, over two ranks' shares (rank 1 of 2 reads shard 1 and, padded, shard 0 again: the
# sampler's order of 3 shards over 2 ranks): the resumed rest is the hand-written order's rest at
# every break point, and the next epoch the whole order again.
@pytest.mark.parametrize("k", [0, 1, 4, 5, 7, 8])
def test_resume_gives_the_hand_written_rest(three_shards, k):
    paths, order = three_shards
    sampling = ferry.Sampling(rank=1, world_size=2)
    expected = order[4:8] + order[0:4]  # rank 1: shards 1 and 0 (the pad repeats the first)
    keep = []
    with ferry.source(shards.tar_samples(paths, sampling=sampling)).build(threads=2) as first:
        assert take(first, k, keep) == expected[:k]
        state = first.state()
    keep.clear()
    with (ferry.source(shards.tar_samples(paths, sampling=sampling))
          .build(threads=2, resume=state)) as resumed:
        assert keys_of(resumed) == expected[k:]
        assert keys_of(resumed) == expected


# Shuffled shards and a shuffle buffer (draws from (seed, epoch, rank) only): the resumed rest
# equals the uninterrupted run's, through a native op, and the epoch after it the uninterrupted
# second epoch.
@pytest.mark.parametrize("k", [1, 6, 11])
def test_resume_with_a_shuffle_buffer_equals_the_uninterrupted_run(three_shards, k):
    paths, order = three_shards

    def build(resume=None):
        tar = shards.tar_samples(paths, sampling=ferry.Sampling(shuffle=True, seed=3),
                                 shuffle_buffer=5)
        return (ferry.source(tar).map(shards.labelled("bin"), concurrency=2)
                .build(threads=2, resume=resume))

    def plain(items):
        return [(bytes(b), label) for b, label in items]

    in_order = [(member_bytes_of(paths, p, key),
                 int(member_bytes(paths.index(p), key, "cls"))) for p, key in order]
    with build() as whole:
        epoch0, epoch1 = plain(whole), plain(whole)
    assert sorted(epoch0) == sorted(in_order) and epoch0 != in_order and epoch0 != epoch1
    keep = []
    with build() as first:
        it = iter(first)
        keep.append(it)
        assert plain(itertools.islice(it, k)) == epoch0[:k]
        state = first.state()
    keep.clear()
    with build(resume=state) as resumed:
        assert plain(resumed) == epoch0[k:]
        assert plain(resumed) == epoch1


# Wrong use is a Python error where it is made: sampling belongs to tar_samples, a str is not a
# list of shards, read_remote takes a read_url op.
def test_wrong_use_is_a_python_error(three_shards):
    paths, _ = three_shards
    with pytest.raises(TypeError, match="give the sampling to ferry.shards.tar_samples"):
        ferry.source(shards.tar_samples(paths), sampling=ferry.Sampling())
    with pytest.raises(TypeError, match="give a list of shards"):
        shards.tar_samples(paths[0])
    remote = "read_remote is ferry.http.read_url" if ferry._ferry.has_http else "-DFERRY_HTTP=ON"
    with pytest.raises(TypeError, match=remote):
        shards.tar_samples(paths, read_remote=lambda url, offset, length: b"")
    with pytest.raises(ValueError, match="name at least one extension"):
        shards.fields()
