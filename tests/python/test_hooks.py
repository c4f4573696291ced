# SPDX-License-Identifier: Apache-2.0
"""build(logger=..., on_report=...): ferry's log lines and periodic stats reach Python callables,
called from ferry's threads with the GIL for the call only, never after close(); what they
raise is reported through sys.unraisablehook, never lost and never a crash; the tuner's
decisions reach the logger."""
import logging
import re
import sys
import threading
import time

import pytest

import ferry

# A hang bound, not a speed check.
WAIT = 30


def failing(x):
    if x % 3 == 0:
        raise ValueError(f"bad item {x}")
    return x


class Unraisable:
    """Collects what reaches sys.unraisablehook while installed."""

    def __init__(self, monkeypatch):
        self.seen = []
        monkeypatch.setattr(sys, "unraisablehook", self.seen.append)


# A skipped failure is logged to the Python logger with logging's level, naming the stage, the
# item and the exception; log_burst=2 prints two lines of the stage's ten failures and one
# summary of the other eight when the epoch ends.
def test_logger_receives_failures_with_levels_and_burst():
    lines = []
    b = ferry.source(range(30)).map(failing, on_error="skip", name="check")
    with b.build(threads=2, logger=lambda level, msg: lines.append((level, msg)),
                 log_burst=2) as pipe:
        assert list(pipe) == [x for x in range(30) if x % 3 != 0]
        assert len(pipe.failures()) == 10
    failures = [(lvl, m) for lvl, m in lines if "ValueError: bad item" in m]
    assert len(failures) == 2
    for level, msg in failures:
        assert level in (logging.WARNING, logging.ERROR)
        assert "'check'" in msg
    summaries = [m for _, m in lines if "8 more failures not shown" in m]
    assert summaries and "stage 'check'" in summaries[0]
    assert all(isinstance(lvl, int) and isinstance(m, str) for lvl, m in lines)


# logging.getLogger(...).log fits the logger's signature: the lines land in Python's logging.
def test_python_logging_logger_fits(caplog):
    caplog.set_level(logging.INFO, logger="ferry.test")
    b = ferry.source(range(6)).map(failing, on_error="skip", name="check")
    with b.build(threads=1, logger=logging.getLogger("ferry.test").log) as pipe:
        assert list(pipe) == [1, 2, 4, 5]
    records = [r for r in caplog.records if r.name == "ferry.test"]
    assert any("ValueError: bad item 3" in r.getMessage() for r in records)
    assert all(r.levelno >= logging.WARNING for r in records if "bad item" in r.getMessage())


# A logger that raises: each exception reaches sys.unraisablehook with the logger as its object,
# and the pipeline delivers and accounts for every item as without it.
def test_a_raising_logger_is_reported_and_the_pipeline_goes_on(monkeypatch):
    hook = Unraisable(monkeypatch)

    def broken(level, msg):
        raise RuntimeError("logger broke")

    b = ferry.source(range(30)).map(failing, on_error="skip")
    with b.build(threads=2, logger=broken) as pipe:
        assert list(pipe) == [x for x in range(30) if x % 3 != 0]
        stats = pipe.stats()
    assert (stats.delivered, stats.failed) == (20, 10)
    assert hook.seen, "the logger's exception was swallowed"
    assert all(isinstance(u.exc_value, RuntimeError) and str(u.exc_value) == "logger broke"
               and u.object is broken for u in hook.seen)


def blocked_until(event):
    """A stage function that holds its first call until `event` is set (bounded by WAIT)."""
    def f(x):
        if not event.wait(WAIT):
            raise TimeoutError("the event never came")
        return x
    return f


# on_report gets a ferry.Stats while an epoch runs, from another thread than the loop's: the
# stage below waits for the first report, so the epoch can end only if one came.
def test_on_report_receives_stats_while_an_epoch_runs():
    reported = threading.Event()
    calls = []

    def report(stats):
        calls.append((threading.get_ident(), stats))
        reported.set()

    b = ferry.source(range(5)).map(blocked_until(reported), name="wait")
    with b.build(threads=2, on_report=report, report_every=0.01) as pipe:
        assert list(pipe) == list(range(5))
    assert calls
    for ident, stats in calls:
        assert ident != threading.get_ident()
        assert isinstance(stats, ferry.Stats)
        assert [s.name for s in stats.stages] == ["source", "wait"]


# After close() the hooks are never called again and ferry holds no reference to them: closed
# in the middle of an epoch that reports every 10 ms, then deleted.
def test_hooks_are_not_called_after_close():
    reported = threading.Event()
    calls = []

    def report(stats):
        calls.append(stats)
        reported.set()

    def log(level, msg):
        calls.append(msg)

    before = (sys.getrefcount(report), sys.getrefcount(log))
    pipe = (ferry.source(range(1000)).map(lambda x: time.sleep(0.001) or x)
            .build(threads=2, on_report=report, report_every=0.01, logger=log))
    it = iter(pipe)
    next(it)
    assert reported.wait(WAIT)
    pipe.close()
    n = len(calls)
    time.sleep(0.1)  # ten report intervals: none may come
    assert len(calls) == n
    assert (sys.getrefcount(report), sys.getrefcount(log)) == before
    del it, pipe


# An on_report that raises is reported through sys.unraisablehook (object: the callable) and the
# epoch ends normally.
def test_a_raising_on_report_is_reported(monkeypatch):
    hook = Unraisable(monkeypatch)
    reported = threading.Event()

    def report(stats):
        reported.set()
        raise KeyError("report broke")

    b = ferry.source(range(5)).map(blocked_until(reported))
    with b.build(threads=2, on_report=report, report_every=0.01) as pipe:
        assert list(pipe) == list(range(5))
    assert hook.seen and all(isinstance(u.exc_value, KeyError) and u.object is report
                             for u in hook.seen)


# The tuner's decisions reach the logger as "autotune: <decision>" lines, each as stats()
# prints it: a slow tuned I/O stage gets more calls at once, and each decision the stats table
# lists was logged.
def test_autotune_decisions_reach_the_logger():
    lines = []
    b = ferry.source(range(300)).map(lambda x: time.sleep(0.002) or x,
                                     concurrency=ferry.tuned(1, 8), executor="io", name="slow")
    with b.build(threads=2, autotune=ferry.Autotune(interval=0.01),
                 logger=lambda level, msg: lines.append((level, msg))) as pipe:
        assert list(pipe) == list(range(300))
        table = str(pipe.stats())
    decisions = [m for lvl, m in lines if m.startswith("autotune: ")]
    assert decisions, f"no decision logged; the stats said:\n{table}"
    assert all(lvl == logging.INFO for lvl, m in lines if m.startswith("autotune: "))
    form = re.compile(r"autotune: \d+\.\d s: \S+ \d+ -> \d+ \(")
    assert all(form.match(m) for m in decisions), decisions
    # The table lists the last decisions with their rates measured since; the head of each (its
    # time, stage and move, "1.2 s: slow 1 -> 2 (") is what was logged.
    heads = {m[len("autotune: "):].split(")")[0] for m in decisions}
    listed = [line.strip() for line in table.splitlines() if " -> " in line and " s: " in line]
    for line in listed:
        assert any(head in line for head in heads), (line, heads)


# Wrong hooks and intervals are Python errors at build(), naming the option.
def test_wrong_hooks_are_python_errors():
    b = ferry.source(range(3))
    with pytest.raises(TypeError, match=r"build\(logger=...\): a callable \(level, message\) or "
                                        r"None, got a Python int"):
        b.build(logger=5)
    with pytest.raises(TypeError, match=r"build\(on_report=...\): a callable \(stats\)"):
        b.build(on_report="report")
    with pytest.raises(ValueError, match=r"build\(log_burst=-1\)"):
        b.build(log_burst=-1)
    with pytest.raises(ValueError, match=r"build\(report_every=0\.0+\): seconds above 0"):
        b.build(report_every=0)
    with pytest.raises(ValueError, match=r"build\(log_window=-1\.0+\): seconds above 0"):
        b.build(log_window=-1)
