# SPDX-License-Identifier: Apache-2.0
"""Builder.route from Python: each element down the branch a Python selector names, joined
again in input order, every element counted once, failures of the selector accounted, wrong
use refused where it is made, and exact resume through a route."""
import itertools
import pathlib

import pytest

import ferry
from ferry import ops


def parity_route(b, **kwargs):
    return b.route(lambda x: x % 2,
                   lambda b: b.map(lambda x: x * 10, concurrency=2),
                   lambda b: b.map(lambda x: -x).filter(lambda x: x != -7),
                   **kwargs)


# Evens go through branch 0, odds through branch 1, and the output keeps input order across the
# branches; a branch's filter counts as filtered.
@pytest.mark.parametrize("threads", [1, 3])
def test_route_sends_each_element_down_its_branch_in_order(threads):
    with parity_route(ferry.source(range(20))).build(threads=threads) as pipe:
        got = list(pipe)
        stats = pipe.stats()
    assert got == [x * 10 if x % 2 == 0 else -x for x in range(20) if x != 7]
    assert stats.produced == 20 and stats.delivered == 19 and stats.filtered == 1


# Stats name the branches' stages '<route>/<branch> <stage>' (indices, or names=), and every
# element is counted by the route and then by its branch only; the stages after the route keep
# the engine's numbering.
def test_route_names_and_counts_branch_stages():
    b = parity_route(ferry.source(range(20)), names=["even", "odd"]).map(lambda x: x)
    with b.build(threads=2) as pipe:
        list(pipe)
        stages = {s.name: s for s in pipe.stats().stages}
    assert list(stages) == ["source", "route#1", "route#1/even map#2", "route#1/odd map#3",
                            "route#1/odd filter#4", "map#5"]
    assert stages["route#1"].items_in == 20
    assert stages["route#1/even map#2"].items_in == 10
    assert stages["route#1/odd map#3"].items_in == 10
    assert stages["route#1/odd filter#4"].filtered == 1
    assert stages["map#5"].items_in == 19
    with parity_route(ferry.source(range(4)), name="by parity").build(threads=1) as pipe:
        list(pipe)
        names = [s.name for s in pipe.stats().stages]
    assert names == ["source", "by parity", "by parity/0 map#2", "by parity/1 map#3",
                     "by parity/1 filter#4"]


# A selector returning an index with no branch fails the element naming the index: under skip
# it is counted as failed and the rest flow; under fail the loop raises StageError.
def test_selector_out_of_range_is_a_failure_naming_the_index():
    b = ferry.source(range(10)).route(lambda x: 5 if x == 3 else 0, lambda b: b,
                                      lambda b: b, on_error="skip")
    with b.build(threads=1) as pipe:
        assert list(pipe) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
        failures = pipe.failures()
        assert pipe.stats().failed == 1
    assert len(failures) == 1 and failures[0].item == 3 and failures[0].stage == "route#1"
    assert "returned branch 5; this route's branches are 0 to 1" in failures[0].message


# A selector that returns no int, or raises, fails the element under 'fail': StageError chained
# to a TypeError naming the route, or to the selector's own exception.
def test_selector_errors_reach_python():
    b = ferry.source(range(5)).route(lambda x: "left", lambda b: b)
    with b.build(threads=1) as pipe, pytest.raises(ferry.StageError) as info:
        list(pipe)
    assert type(info.value.__cause__) is TypeError
    assert "select must return an int, the index of a branch; got a Python str" in str(
        info.value.__cause__)
    assert "route(select, *branches) (stage 'route#1')" in str(info.value.__cause__)

    def select(x):
        raise KeyError(x)
    with ferry.source(range(5)).route(select, lambda b: b).build(threads=1) as pipe:
        with pytest.raises(ferry.StageError) as info:
            list(pipe)
    assert type(info.value.__cause__) is KeyError and info.value.__cause__.args == (0,)


# Native values reach the selector as Python sees them and go on unchanged: a path list's str,
# bytes read by ops.read_file (lent to the selector and taken back, the branch gets the same
# bytes).
def test_selector_sees_native_values_and_leaves_them_native(tmp_path):
    files = []
    for i in range(6):
        p = tmp_path / f"{i}.bin"
        p.write_bytes(bytes([i]) * (i + 1))
        files.append(str(p))
    b = (ferry.source(files)
         .route(lambda path: 0 if path.endswith(("0.bin", "2.bin", "4.bin")) else 1,
                lambda b: b.map(ops.read_file), lambda b: b.map(ops.read_file))
         .route(lambda data: len(memoryview(data)) % 2, lambda b: b, lambda b: b)
         .map(lambda data: bytes(data)))
    with b.build(threads=2) as pipe:
        assert list(pipe) == [pathlib.Path(f).read_bytes() for f in files]


def routed(resume=None):
    src = ferry.source(range(60), sampling=ferry.Sampling(shuffle=True, seed=3))
    return (parity_route(src).batch(5)
            .build(threads=2, resume=resume))


# A route resumes exactly at every break point (the rest of the epoch, then the next).
@pytest.mark.parametrize("k", [0, 1, 6, 11])
def test_route_resume_equals_the_uninterrupted_run(k):
    with routed() as whole:
        epoch0, epoch1 = list(whole), list(whole)
    assert len(epoch0) == 12 and epoch0 != epoch1
    with routed() as first:
        it = iter(first)  # kept: dropping it would end the epoch
        assert list(itertools.islice(it, k)) == epoch0[:k]
        state = first.state()
    with routed(resume=state) as resumed:
        assert list(resumed) == epoch0[k:]
        assert list(resumed) == epoch1


# Wrong use is a Python error at route(), naming the stage and the rule.
def test_route_wrong_use():
    b = ferry.source(range(3))
    with pytest.raises(TypeError, match="route#1.*select must be a Python callable.*int"):
        b.route(1, lambda b: b)
    with pytest.raises(TypeError, match="give at least one branch"):
        b.route(lambda x: 0)
    with pytest.raises(TypeError, match="branch 1 must be a function taking a Builder"):
        b.route(lambda x: 0, lambda b: b, 3)
    with pytest.raises(TypeError, match="branch 0 returned a Python int"):
        b.route(lambda x: 0, lambda b: 3)
    with pytest.raises(ValueError, match="branch 0 returned a Builder with a source"):
        b.route(lambda x: 0, lambda _: ferry.source(range(3)))
    with pytest.raises(ValueError, match="branch 1 has a batch"):
        b.route(lambda x: 0, lambda b: b, lambda b: b.batch(2))
    with pytest.raises(ValueError, match="retry does not apply"):
        b.route(lambda x: 0, lambda b: b, on_error=ferry.retry(3))
    with pytest.raises(ValueError, match="1 names for 2 branches"):
        b.route(lambda x: 0, lambda b: b, lambda b: b, names=["a"])
