# SPDX-License-Identifier: Apache-2.0
"""The Python thread states of ferry's threads: made once per thread and kept while it runs, so
that what a Python stage keeps in `threading.local()` is there at its next call on that thread;
deleted, with what they held, once their thread ends; an interpreter that exits with them kept
exits cleanly."""
import gc
import threading
import weakref

import ferry
from conftest import run_child

N = 400


def calls_and_locals(executor, threads, concurrency):
    """Runs N items through a Python stage on `executor`: the threads that made the calls, and
    the threading.local() values the stage had to make (one per thread that kept its state)."""
    local = threading.local()
    made = []
    callers = set()

    def stage(x):
        callers.add(threading.get_ident())
        if not hasattr(local, "calls"):
            local.calls = 0
            made.append(threading.get_ident())
        local.calls += 1
        return x

    pipe = ferry.source(list(range(N))).map(stage, executor=executor,
                                            concurrency=concurrency).build(threads=threads)
    with pipe:
        assert sorted(pipe) == list(range(N))
    return callers, made


# Each engine thread made the thread-local value once, at its first call, and found it at every
# later one. Were a state made per call (PyGILState_Ensure on a thread without one), each of the
# N calls would find an empty threading.local().
def test_threading_local_lasts_across_calls_on_an_engine_thread():
    callers, made = calls_and_locals("compute", threads=2, concurrency=2)
    assert 1 <= len(callers) <= 2
    assert sorted(made) == sorted(callers)


def test_threading_local_lasts_across_calls_on_an_io_thread():
    callers, made = calls_and_locals("io", threads=1, concurrency=3)
    assert 1 <= len(callers) <= 3
    assert sorted(made) == sorted(callers)


class Held:
    """What an I/O thread's call keeps in its threading.local()."""


# The I/O threads of a closed pipeline end; the next thread to make a state deletes theirs, and
# what their calls kept in threading.local() is freed with it. Pipeline after pipeline, the
# states kept do not grow with the threads that ended.
def test_states_of_ended_threads_are_deleted_with_what_they_held():
    local = threading.local()
    held = []

    def keep(x):
        if not hasattr(local, "held"):
            local.held = Held()
            held.append(weakref.ref(local.held))
        return x

    def run_once():
        pipe = ferry.source(list(range(60))).map(keep, executor="io", concurrency=3).build(
            threads=1)
        with pipe:
            assert sorted(pipe) == list(range(60))

    run_once()
    after_first = ferry._ferry._kept_thread_states()
    first = list(held)
    assert 1 <= len(first) <= 3
    for _ in range(5):
        run_once()
    gc.collect()
    # The first pipeline's threads ended and their states were deleted when the next pipeline's
    # threads made theirs: the objects their calls kept are gone.
    assert all(r() is None for r in first)
    assert len(held) >= 6  # each pipeline's threads made their own
    # Only the last pipeline's ended threads may still wait for a new thread to delete them.
    assert ferry._ferry._kept_thread_states() <= after_first + 3


# Exiting with pipelines open, their threads keeping states (engine and I/O threads, one
# pipeline abandoned mid-epoch): the exit hook closes them and the interpreter's finalization
# deletes the states of the threads still running; the child exits with status 0 and prints
# its last line.
def test_exit_with_kept_states_is_clean():
    r = run_child("""
        import threading
        import ferry
        local = threading.local()
        def f(x):
            local.last = [x] * 10
            return x + 1
        a = ferry.source(list(range(1000))).map(f, concurrency=2).build(threads=2)
        b = ferry.source(list(range(1000))).map(f, executor="io", concurrency=3).build(threads=1)
        it = iter(a)
        print(next(it), sum(b), ferry._ferry._kept_thread_states() >= 2, flush=True)
        print("exiting", flush=True)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["1 500500 True", "exiting"]
