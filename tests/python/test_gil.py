# SPDX-License-Identifier: Apache-2.0
"""The GIL while a loop waits: free for other Python threads. Each case runs in a child
interpreter, because a failure here is a deadlock, which the child's time limit turns into a
failed test instead of a hung suite."""
from conftest import run_child


# A Python thread keeps running while the loop waits on a native stage: read_file blocks on a
# FIFO whose only writer is that Python thread, which writes once it has counted to 200000. If
# the waiting loop held the GIL, the thread could never count that far and the child would hang.
def test_python_thread_runs_while_the_loop_waits(tmp_path):
    fifo = tmp_path / "fifo"
    r = run_child(f"""
        import os, threading
        import ferry
        from ferry import ops
        os.mkfifo({str(fifo)!r})
        count = 0
        def writer():
            global count
            while count < 200000:
                count += 1
            with open({str(fifo)!r}, "wb") as f:
                f.write(b"written after counting")
        t = threading.Thread(target=writer)
        pipe = ferry.source([{str(fifo)!r}]).map(ops.read_file, executor="io").build(threads=1)
        t.start()
        got = [bytes(b) for b in pipe]
        t.join()
        print(got, count)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[b'written after counting'] 200000"


# The same with a Python stage between native ones: the stage takes the GIL for its call only,
# so a Python thread that must run before the stage's input arrives still gets it.
def test_python_stage_takes_the_gil_per_call_only(tmp_path):
    fifo = tmp_path / "fifo"
    r = run_child(f"""
        import os, threading
        import ferry
        from ferry import ops
        os.mkfifo({str(fifo)!r})
        def writer():
            n = 0
            while n < 100000:
                n += 1
            with open({str(fifo)!r}, "wb") as f:
                f.write(b"abc")
        pipe = (ferry.source(["x", {str(fifo)!r}])
                .map(lambda p: p if p != "x" else {str(fifo)!r} + ".skip", concurrency=2)
                .map(ops.read_file, executor="io", on_error="skip")
                .map(lambda b: bytes(b).upper())
                .build(threads=2, max_epoch_failure_rate=1.0))
        t = threading.Thread(target=writer)
        t.start()
        print(list(pipe))
        t.join()
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[b'ABC']"
