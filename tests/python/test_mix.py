# SPDX-License-Identifier: Apache-2.0
"""ferry.mix from Python: datasets drawn by weight into one source, each in its own order (the
order ferry.source(dataset, sampling=...) gives), under the stop rules, split over ranks, and
resumed exactly at any break point."""
import itertools

import pytest

import ferry

A = list(range(0, 40))          # source 0: 0..39
B = list(range(1000, 1020))     # source 1: 1000..1019


def of(xs, source):
    """The elements of `xs` that came from source 0 (below 1000) or source 1."""
    return [x for x in xs if (x >= 1000) == (source == 1)]


def order(data, sampling, epochs=1):
    """ferry.source's order of `data` (the reference each source of a mix follows)."""
    with ferry.source(data, sampling=sampling).build(threads=1) as pipe:
        return [list(pipe) for _ in range(epochs)]


# all_exhausted, in order: every item of both sources once, each source in its own order (a
# subsequence of the merged stream), whatever the thread count; the same seed gives the same
# stream, another seed another interleaving.
@pytest.mark.parametrize("threads", [1, 3])
def test_all_exhausted_gives_every_item_once_in_each_sources_order(threads):
    def run(seed):
        mixed = ferry.mix([(A, 2.0), (B, 1.0)], seed=seed, stop="all_exhausted")
        with mixed.map(lambda x: x, concurrency=3).build(threads=threads) as pipe:
            return list(pipe)
    got = run(7)
    assert len(got) == 60
    assert of(got, 0) == A and of(got, 1) == B
    assert run(7) == got
    assert run(8) != got


# Shuffled sources: each source's part of epoch e is the permutation ferry.source(dataset,
# sampling=Sampling(shuffle=True, seed=its seed)) gives in epoch e (C++'s sampler), in both
# epochs; first_exhausted ends the epoch when the first source runs out.
def test_each_source_follows_its_own_sampler_order_per_epoch():
    inputs = [ferry.MixInput(A, 1.0, shuffle=True, seed=11),
              ferry.MixInput(B, 1.0, shuffle=True, seed=12)]
    with ferry.mix(inputs, seed=3).build(threads=2) as pipe:
        epochs = [list(pipe), list(pipe)]
    ref_a = order(A, ferry.Sampling(shuffle=True, seed=11), epochs=2)
    ref_b = order(B, ferry.Sampling(shuffle=True, seed=12), epochs=2)
    for e, got in enumerate(epochs):
        a, b = of(got, 0), of(got, 1)
        assert a == ref_a[e][:len(a)] and b == ref_b[e][:len(b)]
        # first_exhausted: B (20 items at half the draws) runs out first, and ends the epoch.
        assert len(b) == 20 and len(a) < 40
    assert epochs[0] != epochs[1]


# The weights hold: 3:1 over 4000 draws (stop='never', every source repeating, epoch_length
# 4000) gives source 0 three quarters of the stream within binomial noise (sd 27); a repeating
# source of 5 items cycles, each pass a permutation of its 5 items.
def test_weights_set_the_proportions_and_repeat_cycles_a_small_source():
    inputs = [ferry.MixInput(range(5), 3.0, shuffle=True, seed=1, repeat=True),
              ferry.MixInput(B, 1.0, repeat=True)]
    with ferry.mix(inputs, seed=5, stop="never", epoch_length=4000).build(threads=2) as pipe:
        got = list(pipe)
    assert len(got) == 4000
    small = of(got, 0)
    assert 2900 <= len(small) <= 3100
    for p in range(len(small) // 5):
        assert sorted(small[5 * p:5 * p + 5]) == [0, 1, 2, 3, 4]
    assert of(got, 1)[:40] == B + B


# Weight 0 takes nothing; epoch_length caps the epoch.
def test_zero_weight_and_epoch_length():
    with ferry.mix([(A, 1.0), (B, 0.0)], epoch_length=25).build(threads=1) as pipe:
        assert list(pipe) == A[:25]


# Over two ranks every rank draws the same number of items, each source's part being that
# rank's share (ferry.source with Sampling(rank, world_size)), and the ranks together take
# every item once.
def test_ranks_split_every_source():
    parts = []
    for rank in range(2):
        mixed = ferry.mix([(A, 1.0), (B, 1.0)], seed=2, stop="all_exhausted", rank=rank,
                          world_size=2)
        with mixed.build(threads=1) as pipe:
            got = list(pipe)
        assert of(got, 0) == order(A, ferry.Sampling(rank=rank, world_size=2))[0]
        assert of(got, 1) == order(B, ferry.Sampling(rank=rank, world_size=2))[0]
        parts.append(got)
    assert len(parts[0]) == len(parts[1]) == 30
    assert sorted(parts[0] + parts[1]) == A + B


def pipeline(resume=None):
    inputs = [ferry.MixInput(A, 2.0, shuffle=True, seed=1),
              ferry.MixInput(B, 1.0, shuffle=True, seed=2, repeat=True)]
    return (ferry.mix(inputs, seed=9)
            .map(lambda x: x + 0.5, concurrency=3)
            .batch(4)
            .build(threads=2, resume=resume))


# A mix resumes exactly: at every break point the resumed run delivers the uninterrupted run's
# rest of the epoch, then its next epoch.
@pytest.mark.parametrize("k", [0, 1, 5, 9])
def test_resume_equals_the_uninterrupted_run(k):
    with pipeline() as whole:
        epoch0, epoch1 = list(whole), list(whole)
    assert len(epoch0) >= 10 and epoch0 != epoch1
    with pipeline() as first:
        it = iter(first)
        assert list(itertools.islice(it, k)) == epoch0[:k]
        state = first.state()
    with pipeline(resume=state) as resumed:
        assert list(resumed) == epoch0[k:]
        assert list(resumed) == epoch1


# Another mix's state (other weights) is refused at build(), in a mix's terms.
def test_resume_refuses_another_mixs_state():
    with pipeline() as first:
        it = iter(first)
        next(it)
        state = first.state()
    other = ferry.mix([(A, 1.0), (B, 1.0)], seed=9).map(lambda x: x + 0.5).batch(4)
    with pytest.raises(ValueError, match="mix"):
        other.build(resume=state)


# Wrong use is a Python error at ferry.mix(), saying what is wrong.
def test_wrong_use_is_a_python_error():
    with pytest.raises(ValueError, match="weight"):
        ferry.mix([(A, -1.0), (B, 1.0)])
    with pytest.raises(ValueError, match="0"):
        ferry.mix([(A, 0.0), (B, 0.0)])
    with pytest.raises(ValueError):
        ferry.mix([])
    with pytest.raises(ValueError, match="rank"):
        ferry.mix([(A, 1.0)], rank=2, world_size=2)
    with pytest.raises(ValueError, match="'first_exhausted', 'all_exhausted' or 'never'"):
        ferry.mix([(A, 1.0)], stop="sometimes")
    with pytest.raises(TypeError, match="source 1's dataset must be a sequence.*generator"):
        ferry.mix([(A, 1.0), ((x for x in B), 1.0)])
    with pytest.raises(TypeError, match="source 0 must be a ferry.MixInput"):
        ferry.mix([A])
    with pytest.raises(ValueError, match="remainder"):
        ferry.MixInput(A, 1.0, remainder="keep")


# A mixed or zipped item that fails is named by its path (Failure.input): each source describes
# its own items, a zip names both parts.
def test_failures_name_mixed_and_zipped_items(tmp_path):
    from ferry import ops
    missing = [str(tmp_path / f"missing{i}.jpg") for i in range(3)]
    mixed = ferry.mix([(missing, 1.0), (range(3), 1.0)], stop="all_exhausted")
    with mixed.map(ops.read_file, on_error="skip").build(threads=1, max_epoch_failure_rate=1) \
            as pipe:
        assert list(pipe) == []
        inputs = sorted(f.input for f in pipe.failures())
    assert inputs == sorted(["0", "1", "2"] + missing)
    zipped = ferry.zip(missing, ["a", "b", "c"]).map(lambda p: 1 / 0, on_error="skip")
    with zipped.build(threads=1, max_epoch_failure_rate=1) as pipe:
        assert list(pipe) == []
        inputs = [f.input for f in pipe.failures()]
    assert inputs == [f"{m} + {t}" for m, t in zip(missing, "abc")]
