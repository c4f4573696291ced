# SPDX-License-Identifier: Apache-2.0
"""fork() after ferry built a pipeline: the child has none of the parent's threads (oneTBB's
workers, the pipeline's own), so what would wait on them for ever fails instead, naming the
cause and the fix; closing and exiting in the child do not wait; the parent goes on. Each case
runs in a child interpreter, whose time limit turns a hang into a failed test."""
import os

from conftest import run_child


def test_a_forked_child_is_refused_and_the_parent_goes_on():
    r = run_child("""
        import os, threading, ferry
        local = threading.local()
        def keep(x):
            local.x = [x]
            return x
        def pipe():
            return ferry.source(list(range(100))).map(keep, executor="io",
                                                      concurrency=2).build(threads=2)
        p = pipe()
        it = iter(p)
        print("parent", next(it), flush=True)
        with pipe() as q:  # its I/O threads end: their thread states wait to be deleted
            assert sum(q) == 4950
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                try:
                    pipe()
                except ferry.InvalidArgument as e:
                    print("new:", e, flush=True)
                try:
                    next(it)
                except ferry.InvalidArgument as e:
                    print("inherited:", e, flush=True)
                for read in (p.stats, p.failures, p.state):
                    try:
                        read()
                    except ferry.InvalidArgument as e:
                        print("read:", str(e).split(" in a process")[0], flush=True)
                del it
                p.close()
                print("closed", p.closed, flush=True)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
        print("parent rest", sum(it), flush=True)
        p.close()
        with pipe() as q:  # the parent still builds and runs pipelines
            print("parent again", sum(q), flush=True)
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "parent 0"
    assert lines[1].startswith("new: ferry: this process was forked after its parent built a "
                               "pipeline, and oneTBB's worker threads do not survive fork()")
    assert "'spawn' or 'forkserver'" in lines[1]
    assert lines[2].startswith("inherited: ferry: pipeline::next() in a process forked after the "
                               "pipeline was built")
    assert lines[3:6] == ["read: ferry: pipeline::stats()", "read: ferry: pipeline::failures()",
                          "read: ferry: pipeline::state()"]
    assert lines[6:] == ["closed True", "child exit 0", "parent rest 4950", "parent again 4950"]


# A child that exits normally (atexit hooks, the interpreter's finalization) with an open
# pipeline inherited from its parent: ferry's exit hook leaves it, the child exits with 0.
def test_a_forked_child_exits_with_an_inherited_pipeline_open():
    r = run_child("""
        import os, sys, ferry
        p = ferry.source(list(range(100))).map(lambda x: x, concurrency=2).build(threads=2)
        it = iter(p)
        next(it)
        pid = os.fork()
        if pid == 0:
            print("child exits", flush=True)
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), "rest", sum(it), flush=True)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["child exits", "child exit 0 rest 4950"]


# A process that forks before it builds any pipeline: the child builds and runs its own.
def test_a_child_forked_before_any_pipeline_runs_its_own():
    r = run_child("""
        import os, ferry
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with ferry.source(list(range(10))).map(lambda x: x * 2).build(threads=2) as p:
                    print("child", sum(p), flush=True)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["child 90", "child exit 0"]


# A native op called directly runs, on the main thread, on a helper thread the process keeps
# (so that Ctrl-C can stop it): a child forked after the parent's direct calls has no such
# thread, makes its own, and its direct calls give the file's bytes, as the parent's go on to.
# (ThreadSanitizer refuses threads started after a multi-threaded fork unless told to allow
# them: its die_after_fork=0, which only a TSan build reads.)
def test_direct_op_calls_work_in_a_child_forked_after_some(tmp_path):
    tsan = ":".join(o for o in (os.environ.get("TSAN_OPTIONS"), "die_after_fork=0") if o)
    f = tmp_path / "data.bin"
    f.write_bytes(b"ferry" * 100)
    r = run_child(f"""
        import os
        from ferry import ops
        assert bytes(ops.read_file({str(f)!r})) == b"ferry" * 100
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                print("child", len(bytes(ops.read_file({str(f)!r}))), flush=True)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
        print("parent", len(bytes(ops.read_file({str(f)!r}))), flush=True)
    """, env={"TSAN_OPTIONS": tsan})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["child 500", "child exit 0", "parent 500"]
