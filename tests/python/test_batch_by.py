# SPDX-License-Identifier: Apache-2.0
"""Builder.batch_by from Python: batches by a Python cost, grouped as C++'s cost groups
(buckets, max_cost, windows), with its stats, failures and exact resume."""
import itertools

import pytest

import ferry


def batches(data, threads=1, **kwargs):
    b = ferry.source(data).batch_by(lambda x: x, **kwargs)
    with b.build(threads=threads) as pipe:
        return list(pipe), pipe.stats()


# One bucket, max_cost 10: a batch closes when the next element would take it past 10; the
# window's closed batches come in the order they closed, then the open one.
@pytest.mark.parametrize("threads", [1, 2])
def test_batches_close_at_max_cost(threads):
    got, stats = batches([3, 1, 4, 1, 5, 9, 2, 6], threads, max_cost=10, buffer=8)
    assert got == [[3, 1, 4, 1], [5], [9], [2, 6]]
    by = [s for s in stats.stages if s.kind == "batch_by"][0]
    assert by.name == "batch_by#1"
    assert by.cost == 31 and by.padded_cost == 4 * 4 + 5 + 9 + 2 * 6


# Buckets keep similar costs together (bounds [5]: below 5, and 5 or more); an element above
# max_cost is a batch of its own and counted as oversized; windows (buffer 4) never share a
# batch.
def test_buckets_oversized_and_windows():
    got, _ = batches([1, 7, 2, 6, 3, 8, 4], max_cost=12, buckets=[5], buffer=100)
    assert got == [[7], [6], [1, 2, 3, 4], [8]]
    got, stats = batches([2, 20, 3, 1, 1, 1], max_cost=5, buffer=4)
    assert got == [[20], [2, 3], [1], [1, 1]]
    by = stats.stages[1]
    assert by.counters["oversized batches"] == 1


# drop_last leaves out the last window's unclosed batches (counted as filtered).
def test_drop_last():
    got, stats = batches([3, 1, 4, 1, 5, 9, 2, 6], max_cost=10, buffer=100, drop_last=True)
    assert got == [[3, 1, 4, 1], [5], [9]]
    assert stats.filtered == 2


# A cost that is negative, or not a number, fails its element: skipped and counted under skip,
# StageError chained to a TypeError naming the stage under fail.
def test_bad_costs_fail_the_element():
    b = ferry.source([1, -2, 3, 4]).batch_by(lambda x: x, max_cost=100, on_error="skip")
    with b.build(threads=1) as pipe:
        assert list(pipe) == [[1, 3, 4]]
        assert pipe.stats().failed == 1
        f = pipe.failures()[0]
    assert f.item == 1 and "cost function returned -2" in f.message
    b = ferry.source(["a", "bb"]).batch_by(lambda s: s, max_cost=100, name="by length")
    with b.build(threads=1) as pipe, pytest.raises(ferry.StageError) as info:
        list(pipe)
    assert info.value.stage == "by length" and type(info.value.__cause__) is TypeError
    assert ("batch_by(cost) (stage 'by length'): cost must return a number (int or float), "
            "got a Python str") in str(info.value.__cause__)


def by_cost(resume=None):
    src = ferry.source(range(1, 41), sampling=ferry.Sampling(shuffle=True, seed=8))
    return (src.map(lambda x: x, concurrency=2)
            .batch_by(lambda x: x % 7 + 1, max_cost=9, buckets=[3, 5], buffer=10)
            .build(threads=2, resume=resume))


# batch_by resumes exactly at every break point, mid-window included.
@pytest.mark.parametrize("k", [0, 1, 3, 8])
def test_resume_equals_the_uninterrupted_run(k):
    with by_cost() as whole:
        epoch0, epoch1 = list(whole), list(whole)
    assert sorted(x for b in epoch0 for x in b) == list(range(1, 41))
    assert len(epoch0) > 9 and epoch0 != epoch1
    with by_cost() as first:
        it = iter(first)  # kept: dropping it would end the epoch
        assert list(itertools.islice(it, k)) == epoch0[:k]
        state = first.state()
    with by_cost(resume=state) as resumed:
        assert list(resumed) == epoch0[k:]
        assert list(resumed) == epoch1


# Wrong use is a Python error at batch_by(), naming the stage and the rule.
def test_batch_by_wrong_use():
    b = ferry.source(range(3))
    with pytest.raises(ValueError, match="max_cost must be a finite number above 0"):
        b.batch_by(len, max_cost=0)
    with pytest.raises(ValueError, match="ascending; bound 1 is 2"):
        b.batch_by(len, max_cost=5, buckets=[3, 2])
    with pytest.raises(ValueError, match="buffer must be at least 1"):
        b.batch_by(len, max_cost=5, buffer=0)
    with pytest.raises(ValueError, match="retry does not apply"):
        b.batch_by(len, max_cost=5, on_error=ferry.retry(2))
    with pytest.raises(TypeError, match="batch_by#1.*cost must be a Python callable"):
        b.batch_by(5, max_cost=5)
    with pytest.raises(TypeError):
        b.batch_by(len)  # max_cost is required
