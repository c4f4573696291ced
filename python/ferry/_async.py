# SPDX-License-Identifier: Apache-2.0
"""The event loop behind a pipeline's async stage (Builder.map_async, or map over an `async def`
function): one asyncio loop on a thread of its own per stage and pipeline, made at build() and
stopped when the pipeline is closed. ferry's C++ side hands it each coroutine with two callables:
`done(task)`, called once the coroutine has finished (or was cancelled), and `stop()`, true once
the result is no longer wanted (the pipeline stopping, the epoch abandoned, the stage's timeout
passed): such a coroutine is cancelled."""
import asyncio
import threading

# How often the loop asks whether its running coroutines are still wanted (seconds): the bound
# on how long a cancelled epoch or a closed pipeline waits for them.
_WATCH_EVERY = 0.02


class Loop:
    """An asyncio event loop running on a daemon thread named `name`."""

    def __init__(self, name):
        self._loop = asyncio.new_event_loop()
        self._pending = {}  # task -> stop(); touched on the loop's thread only
        self._watching = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, awaitable, done, stop):
        """Runs `awaitable` on the loop (from any thread); `done(task)` follows its end."""
        self._loop.call_soon_threadsafe(self._start, awaitable, done, stop)

    def close(self):
        """Stops the loop; coroutines still running are cancelled (from any thread)."""
        try:
            self._loop.call_soon_threadsafe(self._loop.stop)
        except RuntimeError:
            pass  # closed already

    def _run(self):
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            for task in list(self._pending):
                task.cancel()
            if self._pending:
                self._loop.run_until_complete(
                    asyncio.gather(*self._pending, return_exceptions=True))
            self._loop.close()

    def _start(self, awaitable, done, stop):
        try:
            task = asyncio.ensure_future(awaitable, loop=self._loop)
        except BaseException as e:  # noqa: B902 - handed to done() as the call's failure
            task = self._loop.create_future()
            task.set_exception(e)
        self._pending[task] = stop
        task.add_done_callback(lambda t: self._finish(t, done))
        if not self._watching:
            self._watching = True
            self._loop.call_later(_WATCH_EVERY, self._watch)

    def _finish(self, task, done):
        self._pending.pop(task, None)
        done(task)

    def _watch(self):
        for task, stop in list(self._pending.items()):
            if stop():
                task.cancel()
        if self._pending:
            self._loop.call_later(_WATCH_EVERY, self._watch)
        else:
            self._watching = False
