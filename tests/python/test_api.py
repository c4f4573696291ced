# SPDX-License-Identifier: Apache-2.0
"""The builder from Python: every kind of source, the stage kinds, epochs, ordering, stats,
traces and the pipeline's life."""
import json

import pytest

import ferry


# Sources: a list (str elements are native strings, back as str), a tuple, a range, a
# sequence that is neither (len and [i]), an iterable (iterated anew each epoch), a generator
# (continues where it stopped) and an epoch factory (told the epoch).
def test_every_kind_of_source():
    def run(src, epochs=1, **kw):
        with ferry.source(src, **kw).build(threads=2) as pipe:
            return [list(pipe) for _ in range(epochs)]

    assert run(["a", "b", 3, None, 2.5]) == [["a", "b", 3, None, 2.5]]
    assert run((1, 2)) == [[1, 2]]
    assert run(range(10, 0, -3)) == [[10, 7, 4, 1]]

    class Squares:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if not 0 <= i < 4:
                raise IndexError(i)
            return i * i

    assert run(Squares(), sampling=ferry.Sampling(rank=1, world_size=2)) == [[1, 9]]
    assert run({"x": 1, "y": 2}, epochs=2) == [["x", "y"], ["x", "y"]]

    def three():
        yield from (1, 2, 3)

    assert run(three(), epochs=2) == [[1, 2, 3], []]
    assert run(lambda epoch: range(epoch, epoch + 2), epochs=3) == [[0, 1], [1, 2], [2, 3]]


# Shuffled sampling visits every item once per epoch, in a new order each epoch, the same for
# the same seed; four ranks split the epoch into disjoint, equal parts.
def test_sampling_shuffles_and_shards():
    def epochs(sampling, n=2):
        with ferry.source(list(range(40)), sampling=sampling).build(threads=2) as pipe:
            return [list(pipe) for _ in range(n)]

    a0, a1 = epochs(ferry.Sampling(shuffle=True, seed=3))
    assert sorted(a0) == sorted(a1) == list(range(40)) and a0 != a1
    assert epochs(ferry.Sampling(shuffle=True, seed=3)) == [a0, a1]
    parts = [epochs(ferry.Sampling(shuffle=True, seed=3, rank=r, world_size=4), 1)[0]
             for r in range(4)]
    assert all(len(p) == 10 for p in parts)
    assert sorted(sum(parts, [])) == list(range(40))


# filter, flat_map, batch (drop_last), unbatch: the elements, in order, with what was dropped
# counted as filtered.
def test_stage_kinds():
    pipe = (ferry.source(range(10))
            .filter(lambda x: x % 3 != 0)
            .flat_map(lambda x: [x, -x])
            .batch(4, drop_last=True)
            .build(threads=2))
    assert list(pipe) == [[1, -1, 2, -2], [4, -4, 5, -5], [7, -7, 8, -8]]
    s = pipe.stats()
    assert s.produced == 10 and s.delivered == 6 and s.filtered == 4
    assert [st.name for st in s.stages] == ["source", "filter#1", "flat_map#2", "batch#3"]
    pipe = ferry.source(range(7)).batch(3).unbatch().map(lambda x: x + 1).build(threads=1)
    assert list(pipe) == [1, 2, 3, 4, 5, 6, 7]
    pipe = ferry.source(["ab", "cd"]).map(lambda s: tuple(s)).unbatch().build(threads=1)
    assert list(pipe) == ["a", "b", "c", "d"]


# Concurrent Python stages keep the source order by default; ordered=False may not, but
# delivers every element.
def test_order_is_kept_across_concurrent_python_stages():
    import time

    def jitter(x):
        time.sleep(0.001 * (x % 5))
        return x

    pipe = ferry.source(range(60)).map(jitter, concurrency=4).build(threads=4)
    assert list(pipe) == list(range(60))
    pipe = ferry.source(range(60)).map(jitter, concurrency=4, ordered=False).build(threads=4)
    assert sorted(pipe) == list(range(60))


# Breaking out of a loop ends that epoch: the next loop is the next epoch, from its start.
def test_break_ends_the_epoch():
    with ferry.source(lambda epoch: [(epoch, i) for i in range(50)]).build(threads=2) as pipe:
        for x in pipe:
            if x == (0, 3):
                break
        assert list(pipe) == [(1, i) for i in range(50)]
        s = pipe.stats()
        assert s.epochs == 2 and s.delivered == 54
        assert s.produced == s.delivered + s.cancelled + s.filtered + s.failed + s.pending


# A builder is a description: building it twice gives two independent pipelines, and
# extending it leaves it as it was.
def test_builders_are_values():
    base = ferry.source(range(4)).map(lambda x: x * 2)
    longer = base.map(lambda x: x + 1)
    with base.build(threads=1) as a, longer.build(threads=1) as b:
        assert list(a) == [0, 2, 4, 6] and list(b) == [1, 3, 5, 7]
        assert list(a) == [0, 2, 4, 6]
    assert "2 stages" in repr(longer)


# write_trace writes Chrome trace-event JSON with a span per stage call; without trace_spans
# it says what to set.
def test_write_trace(tmp_path):
    with ferry.source(range(5)).map(abs, name="abs").build(threads=1, trace_spans=1000) as pipe:
        assert list(pipe) == [0, 1, 2, 3, 4]
        pipe.write_trace(tmp_path / "trace.json")
    events = json.loads((tmp_path / "trace.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert sum(1 for e in events if e.get("name") == "abs" and e.get("ph") == "X") == 5
    with ferry.source(range(2)).build(threads=1) as pipe:
        with pytest.raises(ValueError, match="trace_spans"):
            pipe.write_trace(tmp_path / "none.json")


# The quarantine file gets one JSON line per failed item, naming its input (a path).
def test_quarantine_file(tmp_path):
    missing = [str(tmp_path / f"gone{i}.jpg") for i in range(3)]
    q = tmp_path / "bad.jsonl"
    pipe = (ferry.source(missing).map(ferry.ops.read_file, on_error="skip")
            .build(threads=1, quarantine=q, max_epoch_failure_rate=1.0))
    assert list(pipe) == []
    pipe.close()
    lines = [json.loads(line) for line in q.read_text().splitlines()]
    assert sorted(line["input"] for line in lines) == missing


# world() reads the launcher's environment.
def test_world_from_the_environment(monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    w = ferry.world()
    assert (w.rank, w.size, w.local_rank, w.local_size) == (2, 4, 0, 2)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        ferry.world()
