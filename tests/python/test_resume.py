# SPDX-License-Identifier: Apache-2.0
"""pipe.state() and build(resume=...): a pipeline built from a saved state delivers exactly
the rest of the saved epoch, then the epochs after it, as the uninterrupted run does."""
import itertools

import pytest

import ferry


def build(sampling, resume=None, stages=lambda b: b):
    return stages(ferry.source(range(100), sampling=sampling)).build(threads=2, resume=resume)


def take(pipe, k):
    """The first k elements of the running epoch (the epoch stays open)."""
    return list(itertools.islice(iter_keep(pipe), k))


def iter_keep(pipe):
    """One epoch's iterator, kept alive for the rest of the test (dropping it would end the
    epoch)."""
    it = iter(pipe)
    iter_keep.alive.append(it)
    return it


iter_keep.alive = []


# Rank 1 of 3, in order: the hand-written order is 1, 4, 7, ..., 97 (34 items, padded with 0:
# every rank gets ceil(100 / 3)). Resumed at several points, the rest is that order's rest, and
# the next epoch is the same order again.
@pytest.mark.parametrize("k", [0, 1, 17, 33, 34])
def test_resume_in_order_gives_the_hand_written_rest(k):
    sampling = ferry.Sampling(rank=1, world_size=3)
    order = list(range(1, 100, 3)) + [0]
    assert len(order) == 34
    with build(sampling) as first:
        assert take(first, k) == order[:k]
        state = first.state()
    assert isinstance(state, bytes) and state.startswith(b"ferry-state")
    with build(sampling, resume=state) as resumed:
        assert list(resumed) == order[k:]
        assert list(resumed) == order


# Shuffled (seed 1): the resumed rest equals the uninterrupted run's rest at every break point,
# through a Python stage and a batch, and the epoch after it equals the uninterrupted second
# epoch.
@pytest.mark.parametrize("k", [1, 4, 9, 10])
def test_resume_shuffled_equals_the_uninterrupted_run(k):
    sampling = ferry.Sampling(shuffle=True, seed=1)

    def stages(b):
        return b.map(lambda x: x * 10, concurrency=3).batch(10)

    with build(sampling, stages=stages) as whole:
        epoch0, epoch1 = list(whole), list(whole)
    flat = sorted(x // 10 for batch in epoch0 for x in batch)
    assert flat == list(range(100))
    assert epoch0 != epoch1  # each epoch its own permutation
    with build(sampling, stages=stages) as first:
        assert take(first, k) == epoch0[:k]
        state = first.state()
    with build(sampling, resume=state, stages=stages) as resumed:
        assert list(resumed) == epoch0[k:]
        assert list(resumed) == epoch1


# A state that is not this pipeline's is refused at build(): another seed names other items.
def test_resume_refuses_another_pipelines_state():
    with build(ferry.Sampling(shuffle=True, seed=1)) as first:
        take(first, 3)
        state = first.state()
    with pytest.raises(ValueError, match="seed"):
        build(ferry.Sampling(shuffle=True, seed=2), resume=state)
    with pytest.raises(ValueError):
        build(ferry.Sampling(), resume=b"not a state")
