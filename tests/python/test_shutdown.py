# SPDX-License-Identifier: Apache-2.0
"""Ctrl-C, closing and exiting: each in a child interpreter, whose time limit (conftest's
CHILD_TIMEOUT, a hang bound) turns a deadlock into a failed test."""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import CHILD_TIMEOUT, child_env, run_child


# SIGINT while the loop waits on a source that never delivers (a FIFO without a writer): the
# loop raises KeyboardInterrupt, the pipeline is stopped (the next loop is empty, close()
# returns) and the child exits normally. The child says how long it had waited in the loop
# before the interrupt, so the test knows the signal came during the wait.
def test_sigint_interrupts_a_waiting_loop(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code = f"""
import sys, time
import ferry
from ferry import ops
pipe = ferry.source([{str(fifo)!r}]).map(ops.read_file, executor="io").build(threads=1)
print("waiting", flush=True)
start = time.monotonic()
try:
    for x in pipe:
        print("got an item", flush=True)
except KeyboardInterrupt:
    print("interrupted after", time.monotonic() - start, "at", time.monotonic(), flush=True)
print("next epoch:", list(pipe), flush=True)
pipe.close()
print("closed", pipe.closed, flush=True)
"""
    child = subprocess.Popen([sys.executable, "-c", code], env=child_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "waiting\n"
        time.sleep(1.0)  # into the wait (the child reports how long it waited)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=CHILD_TIMEOUT)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("interrupted after "), out
    waited, at = float(lines[0].split()[2]), float(lines[0].split()[4])
    assert waited >= 0.5  # the signal came while the loop waited
    # A hang bound, not a speed check (the loop checks for signals every 50 ms).
    assert at - sent < 5.0
    assert lines[1:] == ["next epoch: []", "closed True"]


# Dropping a pipeline mid-epoch while Python stages are inside their calls (sleeping, then
# needing the GIL to return) does not deadlock: the GIL is released while the graph drains.
def test_dropping_a_pipeline_with_python_stages_in_their_calls():
    r = run_child("""
        import gc, time
        import ferry
        def slow(x):
            time.sleep(0.5)
            return x
        pipe = ferry.source(range(100)).map(slow, concurrency=4).build(threads=2)
        it = iter(pipe)
        print(next(it), flush=True)
        del it, pipe
        gc.collect()
        print("dropped", flush=True)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "dropped"]


# Exiting the interpreter with a pipeline open mid-epoch (Python stages busy in their calls, a
# Python source, the stage's function keeping the pipeline's module alive: never freed by the
# interpreter) ends normally, because the exit hook closes the pipeline first: the stage object
# is released then (its __del__ prints), while threads may still take the GIL. Without the hook
# the engine's threads ran on into the interpreter's finalisation (and the process's exit
# sometimes aborted: "terminate called without an active exception"); three runs each.
@pytest.mark.parametrize("run", range(3))
def test_exit_with_an_open_pipeline(run):
    r = run_child("""
        import sys
        import ferry
        class Busy:
            def __call__(self, x):
                s = 0
                for i in range(2000):
                    s += i
                return x
            def __del__(self):
                print("stage released", flush=True)
        def numbers():
            i = 0
            while True:
                yield i
                i += 1
        pipe = (ferry.source(numbers()).map(Busy(), concurrency=4).map(Busy(), concurrency=4)
                .build(threads=4, in_flight=256))
        it = iter(pipe)
        print(next(it), next(it), flush=True)
        print("exiting", flush=True)
        sys.exit(3)
    """)
    assert r.returncode == 3, r.stderr
    assert r.stdout.split("\n")[:2] == ["0 1", "exiting"]
    assert r.stdout.count("stage released") == 2, r.stdout
    assert "Fatal" not in r.stderr and "terminate" not in r.stderr


# close() from another thread ends a loop waiting on the pipeline (and stop() likewise);
# a closed pipeline says so when used.
def test_close_from_another_thread_ends_the_loop(tmp_path):
    fifo = tmp_path / "fifo"
    r = run_child(f"""
        import os, threading, time
        import ferry
        from ferry import ops
        os.mkfifo({str(fifo)!r})
        pipe = ferry.source([{str(fifo)!r}]).map(ops.read_file, executor="io").build(threads=1)
        closer = threading.Timer(0.5, pipe.close)
        closer.start()
        print("items", list(pipe), flush=True)
        closer.join()
        print("closed", pipe.closed, flush=True)
        try:
            list(pipe)
        except ValueError as e:
            print(type(e).__name__, e, flush=True)
        print(pipe.stats().produced, flush=True)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "items []", "closed True",
        "InvalidArgument ferry.Pipeline.__next__: the pipeline is closed", "1"]
