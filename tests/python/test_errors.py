# SPDX-License-Identifier: Apache-2.0
"""Failures from Python: a Python stage's exception is a failure carrying its type, message and
traceback; 'skip' accounts for every item; 'fail' raises ferry.StageError from the original
exception; wrong use is a Python error at once."""
import pytest

import ferry
from ferry import ops


class Bad(Exception):
    pass


def explode_on_sevens(x):
    if x % 7 == 0:
        raise Bad("bad item", x)
    return x


# Under on_error='skip' every item is accounted for (delivered + failed == produced == 50) and
# failures() names each skipped item: the stage, its position, the Python type, message and
# the traceback's frames.
def test_skip_accounts_for_python_exceptions():
    pipe = (ferry.source(range(50))
            .map(explode_on_sevens, concurrency=2, on_error="skip", name="explode")
            .build(threads=2))
    got = list(pipe)
    assert got == [x for x in range(50) if x % 7 != 0]
    stats = pipe.stats()
    assert stats.produced == 50 and stats.delivered == 42 and stats.failed == 8
    assert stats.delivered + stats.failed == stats.produced
    d = stats.as_dict()
    assert d["failed"] == 8 and [s["name"] for s in d["stages"]] == ["source", "explode"]
    assert "explode" in str(stats)
    failures = sorted(pipe.failures(), key=lambda f: f.item)
    assert [f.item for f in failures] == [0, 7, 14, 21, 28, 35, 42, 49]
    for f in failures:
        assert f.stage == "explode" and f.code == "stage_failed" and f.epoch == 0
        assert f.message.startswith(f"test_errors.Bad: ('bad item', {f.item}) [Python traceback")
        assert "test_errors.py:" in f.message and "in explode_on_sevens" in f.message
        assert f.input == str(f.item)


# Under on_error='fail' the loop raises ferry.StageError naming the stage and the item, chained
# (raise ... from) to the very exception the stage raised, its traceback kept.
def test_fail_raises_stage_error_from_the_original_exception():
    pipe = ferry.source(range(3, 20)).map(explode_on_sevens, name="explode").build(threads=1)
    seen = []
    with pytest.raises(ferry.StageError) as info:
        for x in pipe:
            seen.append(x)
    e = info.value
    assert seen == [3, 4, 5, 6]
    assert e.stage == "explode" and e.item == 4 and e.items == 1 and e.code == "stage_failed"
    assert isinstance(e, ferry.Error) and isinstance(e, RuntimeError)
    assert type(e.__cause__) is Bad and e.__cause__.args == ("bad item", 7)
    assert e.__cause__.__traceback__ is not None
    assert "explode" in str(e) and e.cause.startswith("test_errors.Bad: ('bad item', 7)")
    # The failure is sticky: the next loop raises it again.
    with pytest.raises(ferry.StageError):
        list(pipe)


# A ferry error inside a stage is the StageError's cause as its own class (an unreadable file:
# ferry.IOError, also an OSError).
def test_stage_error_cause_is_ferrys_own_error(tmp_path):
    with pytest.raises(ferry.StageError) as info:
        list(ferry.source([str(tmp_path / "missing.jpg")]).map(ops.read_file).build(threads=1))
    cause = info.value.__cause__
    assert isinstance(cause, ferry.IOError) and isinstance(cause, OSError)
    assert cause.code == "io" and "missing.jpg" in str(cause)
    assert info.value.input.endswith("missing.jpg")


# A retry policy tries a Python stage again: a call that fails twice then passes is delivered,
# with the extra attempts counted.
def test_retry_tries_python_stages_again():
    calls = {}

    def flaky(x):
        calls[x] = calls.get(x, 0) + 1
        if calls[x] < 3:
            raise RuntimeError("not yet")
        return x

    pipe = (ferry.source(range(5))
            .map(flaky, on_error=ferry.retry(3, backoff=0.0))
            .build(threads=1))
    assert list(pipe) == list(range(5))
    assert pipe.stats().stages[1].retries == 10


# Filters, flat_maps and sources written in Python fail the same way, each named.
def test_python_filter_flat_map_and_source_failures():
    def pred(x):
        if x == 2:
            raise KeyError(x)
        return x % 2 == 0

    pipe = ferry.source(range(6)).filter(pred, on_error="skip").build(threads=1)
    assert list(pipe) == [0, 4]
    f, = pipe.failures()
    assert f.stage == "filter#1" and f.message.startswith("KeyError: 2")
    pipe = (ferry.source(range(3)).flat_map(lambda x: [x] * x if x != 1 else 5, on_error="skip")
            .build(threads=1))
    assert list(pipe) == [2, 2]
    assert pipe.failures()[0].message.startswith("TypeError: 'int' object is not iterable")

    def broken():
        yield 1
        raise OSError("the disk went away")

    with pytest.raises(ferry.Error) as info:
        list(ferry.source(broken()).build(threads=1))
    assert "OSError: the disk went away" in str(info.value)


# Wrong use is a Python error where it is made: a non-callable stage is a TypeError naming the
# stage; threads=0, concurrency=0 and batch(0) are ValueErrors (ferry.InvalidArgument).
def test_wrong_use_raises_at_once():
    b = ferry.source([1, 2, 3]).map(lambda x: x)
    with pytest.raises(TypeError, match=r"map\(f\) \(stage 'map#2'\): f must be callable or a "
                       r"ferry op, got a Python int"):
        b.map(42)
    with pytest.raises(TypeError, match="stage 'load'"):
        b.map("read_file", name="load")
    with pytest.raises(TypeError, match="pred must be a Python callable"):
        b.filter(None)
    with pytest.raises(ValueError, match="threads must be at least 1"):
        b.build(threads=0)
    with pytest.raises(ferry.InvalidArgument, match="concurrency must be at least 1"):
        b.map(abs, concurrency=0)
    with pytest.raises(ValueError, match="n must be at least 1"):
        b.batch(0)
    with pytest.raises(ValueError, match="on_error must be"):
        b.map(abs, on_error="ignore")
    with pytest.raises(ValueError, match="executor must be"):
        b.map(abs, executor="gpu")
    with pytest.raises(TypeError, match="src is a str"):
        ferry.source("data/train")
    with pytest.raises(TypeError, match="sampling visits a sequence"):
        ferry.source(iter([1, 2]), sampling=ferry.Sampling())
    with pytest.raises(ValueError, match="rank"):
        ferry.source([1, 2], sampling=ferry.Sampling(rank=2, world_size=2))
