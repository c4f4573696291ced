# SPDX-License-Identifier: Apache-2.0
"""Async stages: map over an `async def` function (or Builder.map_async) runs its coroutines on
an asyncio event loop of the pipeline's own, up to `concurrency` at once, results in input
order; a coroutine's exception is a failure like a stage's; a coroutine still running when the
pipeline closes is cancelled, so closing never hangs on one."""
import asyncio
import threading

import pytest

import ferry
from conftest import run_child

# A hang bound, not a speed check.
WAIT = 30


# Results come in input order although later items finish first, at any concurrency, epoch
# after epoch; map() runs an async def function as a map_async stage.
@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_async_map_keeps_input_order(concurrency):
    async def slow_first(x):
        await asyncio.sleep(0.001 * (20 - x % 20))
        return x * 10

    b = ferry.source(range(40)).map(slow_first, concurrency=concurrency, name="fetch")
    with b.build(threads=2) as pipe:
        assert list(pipe) == [x * 10 for x in range(40)]
        assert list(pipe) == [x * 10 for x in range(40)]
        stage = [s for s in pipe.stats().stages if s.name == "fetch"][0]
    assert (stage.kind, stage.items_in, stage.items_out) == ("map_async", 80, 80)


# `concurrency` coroutines run at once, and no more: each coroutine waits until four are
# running (a serial stage would never get there and fail at the bound), and the most seen
# running together is four.
def test_async_map_runs_concurrency_coroutines_at_once():
    state = {"running": 0, "most": 0}
    four = None

    async def meet(x):
        nonlocal four
        if four is None:
            four = asyncio.Event()
        state["running"] += 1
        state["most"] = max(state["most"], state["running"])
        if state["running"] == 4:
            four.set()
        await asyncio.wait_for(four.wait(), WAIT)
        await asyncio.sleep(0.001)
        state["running"] -= 1
        return x

    b = ferry.source(range(24)).map_async(meet, concurrency=4)
    # fast_start off: the first output's one item would otherwise be alone in the pipeline.
    with b.build(threads=2, fast_start=False) as pipe:
        assert list(pipe) == list(range(24))
    assert state["most"] == 4


# A coroutine that raises fails its item: skipped and listed by failures() with the exception's
# type, message and frames, or with "fail" a StageError chained to the very exception.
def test_async_exceptions_are_failures():
    async def odd_fails(x):
        await asyncio.sleep(0)
        if x % 2:
            raise ValueError(f"odd {x}")
        return x

    with ferry.source(range(10)).map(odd_fails, concurrency=4, on_error="skip",
                                     name="check").build(threads=2) as pipe:
        assert list(pipe) == [0, 2, 4, 6, 8]
        failures = pipe.failures()
    assert sorted(f.item for f in failures) == [1, 3, 5, 7, 9]
    assert all(f.stage == "check" and f.message.startswith("ValueError: odd ")
               and "in odd_fails" in f.message for f in failures)

    with ferry.source(range(10)).map(odd_fails).build(threads=2) as pipe:
        with pytest.raises(ferry.StageError) as e:
            list(pipe)
    assert isinstance(e.value.__cause__, ValueError) and str(e.value.__cause__) == "odd 1"
    assert e.value.__cause__.__traceback__ is not None


# A function given to map_async that returns no awaitable fails each item with a TypeError
# naming the stage; a retry, and the io executor for an async function, are refused where made.
def test_async_wrong_use():
    b = ferry.source(range(3)).map_async(lambda x: x, on_error="skip")
    with b.build(threads=1, max_epoch_failure_rate=1.0) as pipe:
        assert list(pipe) == []
        failures = pipe.failures()
    assert len(failures) == 3
    assert failures[0].message.startswith(
        "TypeError: map_async(f) (stage 'map_async#1'): f must return an awaitable (call an "
        "async def function), got a Python int")

    async def f(x):
        return x

    with pytest.raises(ValueError, match=r"map\(f\) \(stage 'map_async#1'\): on_error must be "
                                         r"'fail' or 'skip'; a retry does not apply"):
        ferry.source(range(3)).map(f, on_error=ferry.retry(3))
    with pytest.raises(ValueError, match="executor does not apply to an async def function"):
        ferry.source(range(3)).map(f, executor="io")
    with pytest.raises(TypeError, match=r"map_async\(f\) \(stage 'map_async#1'\): f must be an "
                                        r"async def function"):
        ferry.source(range(3)).map_async(5)


# A coroutine past its stage's timeout is cancelled and its item fails as a timeout; the epoch
# goes on.
def test_async_timeout_cancels_the_coroutine():
    cancelled = []

    async def stuck_on_three(x):
        if x == 3:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append(x)
                raise
        return x

    b = ferry.source(range(6)).map(stuck_on_three, concurrency=2, timeout=0.05, on_error="skip")
    with b.build(threads=2) as pipe:
        assert list(pipe) == [0, 1, 2, 4, 5]
        failures = pipe.failures()
    assert [(f.item, f.code) for f in failures] == [(3, "timeout")]
    for _ in range(WAIT * 100):
        if cancelled:
            break
        threading.Event().wait(0.01)
    assert cancelled == [3]


# Closing a pipeline (and exiting the interpreter) while a coroutine never finishes: the
# coroutine is cancelled and close() returns, in a child interpreter bounded by a timeout.
def test_close_cancels_a_coroutine_that_never_ends():
    r = run_child("""
        import asyncio, threading, ferry
        started = threading.Event()
        async def forever(x):
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                print("cancelled", flush=True)
                raise
        pipe = ferry.source(range(4)).map(forever, concurrency=2).build(threads=2)
        t = threading.Thread(target=lambda: list(pipe), daemon=True)
        t.start()
        assert started.wait(30)
        pipe.close()
        t.join(30)
        print("closed", t.is_alive(), flush=True)
        pipe2 = ferry.source(range(4)).map(forever).build(threads=1)
        t2 = threading.Thread(target=lambda: list(pipe2), daemon=True)
        started.clear()
        t2.start()
        assert started.wait(30)
        print("exiting", flush=True)
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert "closed" in r.stdout and "closed False" in r.stdout.replace("\n", " "), r.stdout
    assert lines.count("cancelled") >= 2 and lines[-1] in ("exiting", "cancelled"), r.stdout
