# SPDX-License-Identifier: Apache-2.0
"""ferry.this_call() and ferry.item_rng() in Python stages: the item a call works on, as C++
gives it (ferry::item_info), and the per-item random numbers of C++'s ferry::item_rng, so
random augmentations written in Python resume exactly."""
import itertools

import pytest

import ferry

MASK = (1 << 64) - 1


def reference_item_rng(seed, epoch, index):
    """ferry::item_rng as include/ferry/item.hpp writes it (seed, epoch and index hashed into
    one number that seeds the engine), in plain Python."""
    h = seed ^ 0x243F6A8885A308D3
    for v in (epoch, index):
        h ^= (v + 0x9E3779B97F4A7C15 + ((h << 6) & MASK) + (h >> 2)) & MASK
        h = (h * 0xFF51AFD7ED558CCD) & MASK
        h ^= h >> 33
    return reference_engine(h)


def reference_engine(x):
    """ferry::random_engine: splitmix64 spreads the seed over four words, then xoshiro256**
    yields 64-bit numbers."""
    s = []
    for _ in range(4):
        x = (x + 0x9E3779B97F4A7C15) & MASK
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        s.append(z ^ (z >> 31))

    def rotl(v, k):
        return ((v << k) & MASK) | (v >> (64 - k))

    while True:
        result = (rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        yield result


# item_rng's numbers are C++'s: the same as the documented formula computes by hand, for
# several items and epochs; .seed is its first number and random() its top 53 bits as a float;
# RandomEngine(seed) is C++'s random_engine(seed).
@pytest.mark.parametrize("seed,epoch,index", [(0, 0, 0), (42, 0, 7), (42, 1, 7), (7, 3, 12345),
                                              (2**63 + 5, 2, 2**40)])
def test_item_rng_gives_the_numbers_cpp_computes(seed, epoch, index):
    info = ferry.ItemInfo(epoch=epoch, index=index, seed=seed)
    expected = list(itertools.islice(reference_item_rng(seed, epoch, index), 6))
    rng = ferry.item_rng(info)
    assert [rng() for _ in range(5)] == expected[:5]
    assert ferry.item_rng(info).seed == expected[0]
    assert rng.random() == (expected[5] >> 11) / 2.0**53
    engine = ferry.RandomEngine(seed)
    assert engine.seed == seed
    assert [engine() for _ in range(4)] == list(itertools.islice(reference_engine(seed), 4))


# Inside a Python map, filter and flat_map the call sees its own item: the dataset index the
# shuffled sampler chose (for a list of the integers 0..n-1, the element itself), the position
# in the epoch (the delivered order), the epoch and the sampling seed; without sampling the index
# is the position and the seed 0.
@pytest.mark.parametrize("concurrency", [1, 4])
def test_this_call_names_the_item_in_every_python_stage(concurrency):
    seen = {"filter": {}, "flat_map": {}}

    def keep(x):
        seen["filter"][(ferry.this_call().epoch, x)] = ferry.this_call()
        return True

    def twice(x):
        seen["flat_map"][(ferry.this_call().epoch, x)] = ferry.this_call()
        return [x]

    b = (ferry.source(list(range(30)), sampling=ferry.Sampling(shuffle=True, seed=7))
         .map(lambda x: (x, ferry.this_call()), concurrency=concurrency)
         .filter(lambda p: keep(p[0]), concurrency=concurrency)
         .flat_map(lambda p: [(y, p[1]) for y in twice(p[0])], concurrency=concurrency))
    with b.build(threads=2) as pipe:
        epochs = [list(pipe), list(pipe)]
    for epoch, got in enumerate(epochs):
        assert sorted(x for x, _ in got) == list(range(30))
        for position, (x, info) in enumerate(got):
            want = ferry.ItemInfo(epoch=epoch, index=x, position=position, seed=7)
            assert info == want
            assert seen["filter"][(epoch, x)] == want
            assert seen["flat_map"][(epoch, x)] == want
    assert [x for x, _ in epochs[0]] != [x for x, _ in epochs[1]]  # reshuffled

    with ferry.source(["a", "b", "c"]).map(lambda s: ferry.this_call()).build(threads=1) as pipe:
        assert list(pipe) == [ferry.ItemInfo(epoch=0, index=i, position=i, seed=0)
                              for i in range(3)]


# Outside a stage's call there is no item: this_call() is None, and item_rng() without an
# ItemInfo is a ValueError saying what to do.
def test_outside_a_stage_call_there_is_no_item():
    assert ferry.this_call() is None
    with pytest.raises(ValueError, match=r"ferry.item_rng\(\): not inside a Python stage's call "
                                         r"\(ferry.this_call\(\) is None\); pass the ItemInfo"):
        ferry.item_rng()
    assert repr(ferry.ItemInfo(epoch=1, index=2, position=3, seed=4)) == \
        "ferry.ItemInfo(epoch=1, index=2, position=3, seed=4)"


def draws(concurrency=3, resume=None):
    """A shuffled pipeline whose Python stage draws two numbers per item from item_rng, in
    batches of 4."""
    def augment(x):
        rng = ferry.item_rng()
        return (x, rng.random(), rng())
    return (ferry.source(range(40), sampling=ferry.Sampling(shuffle=True, seed=5))
            .map(augment, concurrency=concurrency)
            .batch(4)
            .build(threads=2, resume=resume))


# A Python stage's random draws are the item's: the same at any concurrency, new in the next
# epoch, and after a break and resume at several points the rest of the epoch and the epoch
# after it are the uninterrupted run's, draw for draw.
@pytest.mark.parametrize("k", [0, 1, 3, 7, 9])
def test_python_draws_resume_exactly(k):
    with draws() as whole:
        epoch0, epoch1 = list(whole), list(whole)
    with draws(concurrency=1) as serial:
        assert list(serial) == epoch0
    assert {x: r for b in epoch0 for x, r, _ in b} != {x: r for b in epoch1 for x, r, _ in b}
    with draws() as first:
        it = iter(first)
        taken = list(itertools.islice(it, k))
        state = first.state()
    assert taken == epoch0[:k]
    with draws(resume=state) as resumed:
        assert list(resumed) == epoch0[k:]
        assert list(resumed) == epoch1
