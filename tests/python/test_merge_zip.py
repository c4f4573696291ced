# SPDX-License-Identifier: Apache-2.0
"""ferry.merge and ferry.zip from Python: sub-pipelines merged in the documented weighted round
robin, sources paired item by item into tuples, both resumed exactly."""
import itertools

import pytest

import ferry


def smooth_round_robin(weights, sizes):
    """merge_options::weights' order, written out: each branch in the draw gains its weight, the
    one with the most credit (the lower on a tie) gives the item and pays the total back; a
    branch with nothing left leaves the draw, its turn undone."""
    credit = [0.0] * len(weights)
    left = list(sizes)
    taken = [0] * len(weights)
    out = []
    live = [w > 0 for w in weights]
    while any(live):
        total = sum(w for w, on in zip(weights, live) if on)
        best = None
        for b, w in enumerate(weights):
            if live[b]:
                credit[b] += w
                if best is None or credit[b] > credit[best]:
                    best = b
        credit[best] -= total
        if left[best] == 0:
            credit[best] += total
            for b, w in enumerate(weights):
                if live[b]:
                    credit[b] -= w
            live[best] = False
            continue
        out.append((best, taken[best]))
        taken[best] += 1
        left[best] -= 1
    return out


# Weights 1:3 give b a b b | b a b b ... (merge.hpp's own example), each branch's stages applied
# to its items only; every item comes once, in that order, whatever the threads.
@pytest.mark.parametrize("threads", [1, 3])
def test_merge_follows_the_weighted_round_robin(threads):
    a = ferry.source(range(8)).map(lambda x: ("a", x), concurrency=2)
    b = ferry.source(range(24)).map(lambda x: ("b", x), concurrency=3)
    with ferry.merge([a, b], weights=[1, 3]).build(threads=threads) as pipe:
        got = list(pipe)
    expected = [("ab"[br], i) for br, i in smooth_round_robin([1, 3], [8, 24])]
    assert expected[:8] == [("b", 0), ("a", 0), ("b", 1), ("b", 2),
                            ("b", 3), ("a", 1), ("b", 4), ("b", 5)]
    assert got == expected


# first_exhausted ends the epoch at the first turn of a branch with nothing left; round robin
# by default.
def test_merge_first_exhausted():
    a, b = ferry.source([0, 1, 2]), ferry.source(range(100, 110))
    with ferry.merge([a, b], stop="first_exhausted").build(threads=1) as pipe:
        assert list(pipe) == [0, 100, 1, 101, 2, 102]


# The branches' stages are named '<merge>/<branch> <stage>' in stats (by index, or by names=),
# each counting its own branch's items.
def test_merge_names_branch_stages_in_stats():
    a = ferry.source(range(5)).map(lambda x: x)
    b = ferry.source(range(7)).filter(lambda x: x % 2 == 0)
    with ferry.merge([a, b], names=["small", "odd"]).build(threads=1) as pipe:
        assert sorted(list(pipe)) == sorted(list(range(5)) + [0, 2, 4, 6])
        stages = {s.name: s for s in pipe.stats().stages}
    assert "merge" in stages
    assert stages["merge/small map#2"].items_in == 5
    assert stages["merge/odd filter#3"].items_in == 7
    assert stages["merge/odd filter#3"].filtered == 3
    with ferry.merge([a, b], name="both").build(threads=1) as pipe:
        list(pipe)
        names = [s.name for s in pipe.stats().stages]
    assert "both/0 map#2" in names and "both/1 filter#3" in names


def merged(resume=None):
    a = ferry.source(range(20), sampling=ferry.Sampling(shuffle=True, seed=4))
    b = ferry.source(range(100, 130)).map(lambda x: x * 2, concurrency=2)
    return ferry.merge([a, b], weights=[2, 1]).batch(3).build(threads=2, resume=resume)


# A merge resumes exactly at every break point: the rest of the epoch, then the next epoch, as
# the uninterrupted run.
@pytest.mark.parametrize("k", [0, 1, 7, 16])
def test_merge_resume_equals_the_uninterrupted_run(k):
    with merged() as whole:
        epoch0, epoch1 = list(whole), list(whole)
    assert len(epoch0) == 17 and epoch0 != epoch1
    with merged() as first:
        it = iter(first)  # kept: dropping it would end the epoch
        assert list(itertools.islice(it, k)) == epoch0[:k]
        state = first.state()
    with merged(resume=state) as resumed:
        assert list(resumed) == epoch0[k:]
        assert list(resumed) == epoch1


# Wrong use of merge is a Python error naming the rule.
def test_merge_wrong_use():
    a, b = ferry.source(range(3)), ferry.source(range(3))
    with pytest.raises(ValueError, match="1 weights for 2 branches"):
        ferry.merge([a, b], weights=[1])
    with pytest.raises(ValueError, match="every weight is 0"):
        ferry.merge([a, b], weights=[0, 0])
    with pytest.raises(ValueError, match="no branches"):
        ferry.merge([])
    with pytest.raises(ValueError, match="'all_exhausted' or 'first_exhausted'"):
        ferry.merge([a, b], stop="never")
    with pytest.raises(ValueError, match="branch 1 has a batch"):
        ferry.merge([a, b.batch(2)])
    with pytest.raises(TypeError, match="branch 1 must be a ferry.Builder.*list"):
        ferry.merge([a, [1, 2]])


# zip pairs two sources into tuples, ending with the shorter; a part may be a Builder (a
# shuffled source: its own order) or anything ferry.source takes; native parts stay native (a
# str is still a str in the tuple).
def test_zip_pairs_items_into_tuples():
    with ferry.zip(range(5), ["a", "b", "c"]).build(threads=1) as pipe:
        assert list(pipe) == [(0, "a"), (1, "b"), (2, "c")]
    shuffled = ferry.source(range(10), sampling=ferry.Sampling(shuffle=True, seed=3))
    with shuffled.build(threads=1) as pipe:
        reference = list(pipe)
    assert reference != list(range(10))
    pairs = ferry.zip(shuffled, range(100, 110)).map(lambda p: p[0] * 1000 + p[1])
    with pairs.build(threads=2) as pipe:
        assert list(pipe) == [x * 1000 + 100 + i for i, x in enumerate(reference)]
    with ferry.zip(ferry.zip(range(3), ["x", "y", "z"]), range(10, 13)).build() as pipe:
        assert list(pipe) == [((0, "x"), 10), ((1, "y"), 11), ((2, "z"), 12)]
    # ops.collate takes a batch of zip's tuples field by field, as of Python tuples.
    import numpy as np
    from ferry import ops
    with ferry.zip(range(4), range(10, 14)).batch(4).map(ops.collate).build() as pipe:
        [(left, right)] = list(pipe)
    assert np.asarray(left).tolist() == [0, 1, 2, 3]
    assert np.asarray(right).tolist() == [10, 11, 12, 13]


# A zip resumes exactly: each part reopened at the saved position.
@pytest.mark.parametrize("k", [0, 2, 9])
def test_zip_resume_gives_the_hand_written_rest(k):
    def build(resume=None):
        a = ferry.source(range(10), sampling=ferry.Sampling(shuffle=True, seed=6))
        return ferry.zip(a, [f"x{i}" for i in range(12)]).build(threads=2, resume=resume)
    with build() as whole:
        epoch0 = list(whole)
    assert [p[1] for p in epoch0] == [f"x{i}" for i in range(10)]
    with build() as first:
        it = iter(first)  # kept: dropping it would end the epoch
        assert list(itertools.islice(it, k)) == epoch0[:k]
        state = first.state()
    with build(resume=state) as resumed:
        assert list(resumed) == epoch0[k:]


# zip of a Builder with stages is refused, saying to zip sources first.
def test_zip_refuses_a_builder_with_stages():
    with pytest.raises(ValueError, match="a has stages"):
        ferry.zip(ferry.source(range(3)).map(lambda x: x), range(3))
    with pytest.raises(TypeError, match="src must be a sequence"):
        ferry.zip(range(3), 5)


# Mixes, merges and zips of native sources stay native: a chain over them (read_file, batch)
# takes the GIL for no item; a route's Python selector takes it once per element.
def test_native_combinations_take_no_gil_per_item(tmp_path):
    from ferry import ops
    paths = []
    for i in range(24):
        p = tmp_path / f"{i:02d}.bin"
        p.write_bytes(bytes([i]) * 3)
        paths.append(str(p))
    a, b = paths[:12], paths[12:]

    def acquisitions(builder):
        before = ferry._ferry._gil_acquisitions()
        with builder.build(threads=2) as pipe:
            n = sum(len(batch) for batch in pipe)
        return n, ferry._ferry._gil_acquisitions() - before
    mixed = ferry.mix([(a, 1.0), (b, 1.0)], stop="all_exhausted").map(ops.read_file).batch(4)
    assert acquisitions(mixed) == (24, 0)
    merged = ferry.merge([ferry.source(a).map(ops.read_file, executor="io"),
                          ferry.source(b).map(ops.read_file)]).batch(4)
    assert acquisitions(merged) == (24, 0)
    zipped = ferry.zip(a, range(12)).batch(4)
    assert acquisitions(zipped) == (12, 0)
    routed = ferry.source(paths).route(lambda p: p.endswith("3.bin"),
                                       lambda b: b.map(ops.read_file),
                                       lambda b: b.map(ops.read_file)).batch(4)
    assert acquisitions(routed) == (24, 24)
