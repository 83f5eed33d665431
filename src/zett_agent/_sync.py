"""The sync API: every ``*_sync`` call runs on one private event loop thread.

``agent.run_sync(...)``, ``agent.stream_sync(...)`` (an iterator of events),
``AgentClient.run_sync(...)`` / ``stream_sync(...)`` and :func:`create_agent_sync`
are for scripts and notebooks. They all hand their coroutine to **one event loop
per process**, run forever by a daemon thread started on first use, and block the
caller until it is done. So:

* it works with no loop running (a script) and inside a running one (Jupyter,
  a web framework's handler): the caller's loop is only blocked, never asked to
  run anything, so nothing waits on it and nothing deadlocks;
* connection pools, the local llama.cpp server and MCP sessions, which must be
  entered and left on one loop, stay on that one loop across calls; an agent made
  by ``asyncio.run(create_agent(...))`` (no connection is opened by making it) is
  then used on it. A model whose own HTTP client was used on a loop that has
  since closed gets a fresh client (:meth:`zett_agent.model.Model.stream`);
* Ctrl-C (``KeyboardInterrupt`` in the waiting thread) cancels the run on the
  loop, waits up to :data:`CANCEL_GRACE` seconds for its cleanup (the answer so
  far stored as INTERRUPTED, ``detail["cancelled"]``, as a cancelled async run
  does), then raises ``KeyboardInterrupt``. Leaving a ``stream_sync`` loop early
  (``break``, closing the iterator) closes the run the same way;
* results, events, stops and exceptions are those of the async API, unchanged.

Calling a ``*_sync`` function from the loop thread itself (inside a coroutine run
by another ``*_sync`` call) would wait on itself: it raises ``RuntimeError``.
A forked child starts its own loop thread.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio

__all__ = ["CANCEL_GRACE", "iterate_sync", "loop_thread", "run_sync"]

_T = TypeVar("_T")

CANCEL_GRACE = 10.0
"""Seconds a cancelled ``*_sync`` call (Ctrl-C) is given to clean up (store what it
received) before ``KeyboardInterrupt`` is raised anyway."""


class _LoopThread:
    """The process's private event loop and the daemon thread running it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid() or not self._alive():
                self._start()
            assert self._loop is not None
            return self._loop

    def _alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _start(self) -> None:
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            try:
                loop.run_forever()
            finally:
                loop.close()

        thread = threading.Thread(target=run, name="zett-agent-sync", daemon=True)
        thread.start()
        ready.wait()
        self._loop, self._thread, self._pid = loop, thread, os.getpid()

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def stop(self) -> None:
        """Stop the loop at interpreter exit (its thread is a daemon)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or self._pid != os.getpid() or loop.is_closed():
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=2)


_LOOP = _LoopThread()
atexit.register(_LOOP.stop)


def loop_thread() -> asyncio.AbstractEventLoop:
    """The private event loop every ``*_sync`` call runs on (started on first use)."""
    return _LOOP.loop()


def run_sync(make: Callable[[], Awaitable[_T]]) -> _T:
    """Run the awaitable ``make()`` returns on the private loop and return its
    result (or raise its exception). ``make`` is called on the loop, so what it
    creates belongs to that loop. Ctrl-C cancels it (see the module docstring)."""
    if _LOOP.in_loop_thread():
        raise RuntimeError(
            "a *_sync call inside the zett-agent sync loop would wait on itself; "
            "await the async method instead"
        )
    loop = _LOOP.loop()
    finished = threading.Event()
    scope = _Cancel(loop)

    async def runner() -> Any:
        try:
            with scope.open():
                return await make()
            return None  # cancelled (Ctrl-C): the caller raises KeyboardInterrupt
        finally:
            finished.set()

    future = asyncio.run_coroutine_threadsafe(runner(), loop)
    try:
        result: _T = future.result()
    except KeyboardInterrupt:
        scope.cancel(future)
        finished.wait(CANCEL_GRACE)
        raise
    return result


class _Cancel:
    """Cancels work on the private loop from the waiting thread, as an anyio cancel
    scope: shielded cleanup (the store write of a cancelled run's partial answer)
    runs to its end, which a bare ``Task.cancel()`` would cut short."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.scope: anyio.CancelScope | None = None

    def open(self) -> anyio.CancelScope:
        self.scope = anyio.CancelScope()
        return self.scope

    def cancel(self, future: concurrent.futures.Future[Any]) -> None:
        if self.scope is not None:
            self.loop.call_soon_threadsafe(self.scope.cancel)
        else:  # not started yet: nothing to clean up
            future.cancel()


def iterate_sync(make: Callable[[], AsyncIterator[_T]]) -> Iterator[_T]:
    """The items of the async iterator ``make()`` returns, as a plain iterator.

    One task on the private loop makes the async iterator and drives it to its end
    (cancel scopes and locks held across its ``yield`` must stay in one task), one
    item each time this iterator is asked for the next; items are handed over
    through a thread-safe queue. Closing this iterator early (``break``) closes
    the async one in that task (``aclose``); Ctrl-C cancels the task and waits
    for its cleanup, then raises ``KeyboardInterrupt``."""
    if _LOOP.in_loop_thread():
        raise RuntimeError(
            "a *_sync call inside the zett-agent sync loop would wait on itself; "
            "iterate the async stream instead"
        )
    loop = _LOOP.loop()
    handed: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    finished = threading.Event()
    asked: list[asyncio.Event] = []
    closing = False

    scope = _Cancel(loop)

    async def pump() -> None:
        wanted = asyncio.Event()
        asked.append(wanted)
        source = make()
        try:
            with scope.open():
                handed.put(("ready", None))
                while True:
                    await wanted.wait()
                    wanted.clear()
                    if closing:
                        return
                    try:
                        item = await anext(source)
                    except StopAsyncIteration:
                        handed.put(("end", None))
                        return
                    except BaseException as error:
                        handed.put(("error", error))
                        raise
                    handed.put(("item", item))
        finally:
            close = getattr(source, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()
            finished.set()

    future = asyncio.run_coroutine_threadsafe(pump(), loop)
    _take(handed, scope, future, finished)  # "ready": the task's event exists
    try:
        while True:
            loop.call_soon_threadsafe(asked[0].set)
            kind, value = _take(handed, scope, future, finished)
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        if not future.done():
            closing = True
            loop.call_soon_threadsafe(asked[0].set)
            finished.wait(CANCEL_GRACE)


def _take(
    handed: queue.SimpleQueue[tuple[str, Any]],
    scope: _Cancel,
    future: concurrent.futures.Future[None],
    finished: threading.Event,
) -> tuple[str, Any]:
    try:
        return handed.get()
    except KeyboardInterrupt:
        scope.cancel(future)  # the run stores what it received
        finished.wait(CANCEL_GRACE)
        raise
