# SPDX-License-Identifier: Apache-2.0
"""ferry.tuned and ferry.Autotune from Python: a tuned stage's range reaches the engine (its
stats say it, and its concurrency stays in it), the budgets are checked where they are made,
and a tuned pipeline delivers what an untuned one does."""
import time

import pytest

import ferry


# ferry.tuned is C++'s bare ferry::tuned (the kind's default range); ferry.tuned(lo, hi) a range
# of its own.
def test_tuned_values():
    assert repr(ferry.tuned) == "ferry.tuned"
    assert (ferry.tuned.lo, ferry.tuned.hi) == (1, 0)
    t = ferry.tuned(2, 8)
    assert (t.lo, t.hi) == (2, 8) and t == ferry.tuned(2, 8) and repr(t) == "ferry.tuned(2, 8)"
    with pytest.raises(ValueError, match=r"ferry.tuned\(lo=0, hi=4\): lo must be 1"):
        ferry.tuned(0, 4)
    with pytest.raises(ValueError, match=r"hi must be lo to"):
        ferry.tuned(5, 2)


# Tuned stages carry their ranges into the engine: stats() shows tuned_lo/tuned_hi (the bare
# form: the arena's threads for a compute stage, 64 for an io one), the concurrency stays in
# range, and the output is the untuned pipeline's, in order.
def test_tuned_stages_run_within_their_range():
    b = (ferry.source(range(300))
         .map(lambda x: x + 1, concurrency=ferry.tuned(1, 3), name="plus")
         .filter(lambda x: x % 3 != 0, concurrency=ferry.tuned, name="keep")
         .map(lambda x: x * 2, concurrency=ferry.tuned, executor="io", name="twice"))
    with b.build(threads=2, autotune=ferry.Autotune(cpu_budget=2, interval=0.01)) as pipe:
        got = [x for _ in range(3) for x in pipe]
        stages = {s.name: s for s in pipe.stats().stages}
        d = {s["name"]: s for s in pipe.stats().as_dict()["stages"]}
    expected = [2 * (x + 1) for x in range(300) if (x + 1) % 3 != 0]
    assert got == expected * 3
    assert (stages["plus"].tuned_lo, stages["plus"].tuned_hi) == (1, 3)
    assert (stages["keep"].tuned_lo, stages["keep"].tuned_hi) == (1, 2)
    assert (stages["twice"].tuned_lo, stages["twice"].tuned_hi) == (1, 64)
    for name in ("plus", "keep", "twice"):
        s = d[name]
        assert s["tuned_lo"] <= s["concurrency"] <= s["tuned_hi"]
    assert stages["source"].tuned_hi == 0


# Autotune keeps its numbers (interval in seconds); a tuned stage without autotune= is tuned
# with the defaults (the stage still shows its range).
def test_autotune_values_and_defaults():
    a = ferry.Autotune(cpu_budget=3.5, memory_budget=1 << 30, interval=0.25)
    assert (a.cpu_budget, a.memory_budget, a.interval) == (3.5, 1 << 30, 0.25)
    assert repr(a) == "ferry.Autotune(cpu_budget=3.5, memory_budget=1073741824, interval=0.25)"
    b = ferry.source(range(10)).map(lambda x: x, concurrency=ferry.tuned(1, 2), name="m")
    with b.build(threads=1) as pipe:
        assert list(pipe) == list(range(10))
        m = [s for s in pipe.stats().stages if s.name == "m"][0]
    assert (m.tuned_lo, m.tuned_hi) == (1, 2)


# Wrong budgets and concurrencies are Python errors where they are made (or at build(), where
# only the engine can tell), naming the rule.
def test_wrong_use_is_a_python_error():
    with pytest.raises(ValueError, match=r"cpu_budget=0\.5.*at least 1"):
        ferry.Autotune(cpu_budget=0.5)
    with pytest.raises(ValueError, match="interval.*at least 0.01"):
        ferry.Autotune(interval=0.001)
    with pytest.raises(ValueError, match="memory_budget=-1"):
        ferry.Autotune(memory_budget=-1)
    b = ferry.source(range(3))
    with pytest.raises(TypeError, match="build\\(autotune=...\\).*got a Python int"):
        b.build(autotune=5)
    with pytest.raises(ValueError, match="is more than autotune.cpu_budget"):
        b.build(threads=4, autotune=ferry.Autotune(cpu_budget=2))
    with pytest.raises(ValueError, match=r"map\(f\) \(stage 'map#1'\): concurrency must be at "
                                         r"least 1, got 0"):
        b.map(lambda x: x, concurrency=0)
    with pytest.raises(TypeError, match="concurrency must be an int or ferry.tuned"):
        b.map(lambda x: x, concurrency="many")
    with pytest.raises(ValueError, match="tuned"):
        b.map(lambda x: x, concurrency=ferry.tuned(1, 4), timeout=1.0).build(threads=1)


def _spin(seconds):
    """Uses `seconds` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


# The loop's own CPU time between two elements is the consumer's (stats' consumer_cpu), which
# the CPU budget leaves out of the pipeline's, although the engine waits for elements on a
# thread of the package's own: 60 elements, 5 ms of CPU spent on each, count at least 0.3 s,
# and no more than the process used. Without the tuner it is not measured (0). (Measured on the
# waiter's thread alone, it counted 32 µs, and the loop's work was charged to the budget.)
def test_the_loops_cpu_is_the_consumers_not_the_pipelines():
    def run(concurrency):
        b = ferry.source(range(60)).map(lambda x: x, concurrency=concurrency, name="m")
        with b.build(threads=2) as pipe:
            cpu = time.process_time()
            got = []
            for x in pipe:
                got.append(x)
                _spin(0.005)
            cpu = time.process_time() - cpu
            st = pipe.stats()
        assert got == list(range(60))
        return st, cpu

    st, cpu = run(ferry.tuned(1, 2))
    spent = st.as_dict()["consumer_cpu"]
    assert 0.3 <= spent <= cpu, f"consumer_cpu {spent} s, the process {cpu} s"
    assert "the consumer's CPU between next() calls" in str(st)
    st, _ = run(2)
    assert st.as_dict()["consumer_cpu"] == 0
    assert "the consumer's CPU" not in str(st)


def _files(tmp_path, n, size):
    paths = []
    for i in range(n):
        p = tmp_path / f"f{i:03d}.bin"
        p.write_bytes(bytes([i % 256]) * size)
        paths.append(str(p))
    return paths


# With a memory budget, stats() shows what the budget counts (bytes_in_flight: items in flight
# times their measured bytes) and it stays within the budget; the tuner's decisions are dicts
# with the C++ fields; every file is delivered once, in order.
def test_memory_budget_counted_in_stats(tmp_path):
    size, budget = 64 << 10, 8 << 20
    paths = _files(tmp_path, 120, size)
    b = (ferry.source(paths)
         .map(ferry.ops.read_file, concurrency=ferry.tuned(1, 2), executor="io", name="read")
         .batch(4))
    seen = []
    got = []
    with b.build(threads=2, autotune=ferry.Autotune(cpu_budget=2, memory_budget=budget,
                                                    interval=0.01)) as pipe:
        for batch in pipe:
            got.append([bytes(x)[0] for x in batch])
            seen.append(pipe.stats().bytes_in_flight)
        st = pipe.stats()
        d = st.as_dict()
    assert [v for batch in got for v in batch] == [i % 256 for i in range(120)]
    assert max(seen) > 0, "bytes_in_flight never counted anything"
    assert max(seen) <= budget, f"counted {max(seen)} bytes under a {budget}-byte budget"
    assert d["bytes_in_flight"] == st.bytes_in_flight
    assert isinstance(st.tuning, list) and d["tuning"] == st.tuning
    for t in st.tuning:
        assert set(t) == {"at", "stage", "from", "to", "why", "rate_before", "rate_after",
                          "undone"}


# A budget below one batch of what the items measure cannot be kept: the loop raises
# ferry.InvalidArgument (a ValueError) naming the budget, instead of holding more.
def test_memory_budget_the_shape_cannot_keep_is_an_error(tmp_path):
    paths = _files(tmp_path, 40, 64 << 10)
    b = (ferry.source(paths)
         .map(ferry.ops.read_file, executor="io", name="read")
         .batch(8))
    with b.build(threads=1, autotune=ferry.Autotune(memory_budget=100_000)) as pipe:
        with pytest.raises(ValueError, match=r"memory_budget = 100000 bytes .* cannot be kept"):
            for _ in pipe:
                pass
