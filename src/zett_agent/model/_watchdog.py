"""The clocks of one model call attempt: idle, first output, deadline — one watchdog.

The transport's read loop does no timer work per chunk: it sets ``reading`` around
each wait for bytes and stamps :attr:`Watchdog.last` after a chunk produced stream
events. Under asyncio one ``call_later`` timer sleeps until the next limit is due
and re-arms itself when it wakes early; when a limit has passed while the task
waits for bytes it cancels the task, and :func:`next_chunk` / :func:`wait_for` turn
that cancellation (and only that one) into :class:`ExpiredError`. Under another
anyio backend each wait gets a cancel scope with the time left instead.

Every clock here is the event loop's (``loop.time()``; ``anyio.current_time()``
under another backend), never ``time.monotonic()``: on a real loop the two are the
same clock, and a test loop with virtual time (``looptime``) runs the limits
without waiting for them. The transport stamps :attr:`Watchdog.last` with
:meth:`Watchdog.now`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio

from zett_agent.model._limits import CallTimeouts
from zett_agent.protocols._base import Decoder

__all__ = ["ExpiredError", "Watchdog", "asyncio_loop", "next_chunk", "wait_for"]

_T = TypeVar("_T")


class ExpiredError(Exception):
    """A limit of the watchdog passed (internal: turned into a stop or an error)."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


class Watchdog:
    """The clocks of one attempt: first output, idle (no content progress), deadline.

    Asyncio: one ``call_at`` timer, re-armed only when it fires early; it cancels
    the task only while the task waits for bytes (``reading``), and the read loop
    turns that cancellation into :class:`ExpiredError`. Other backends: each wait for
    bytes gets a cancel scope with the time left (:meth:`wait`).
    """

    __slots__ = (
        "_handle",
        "_loop",
        "_opaque",
        "_task",
        "deadline_at",
        "decoder",
        "expired",
        "first_at",
        "last",
        "now",
        "pooling",
        "reading",
        "streamed",
        "timeouts",
    )

    def __init__(self, timeouts: CallTimeouts, decoder: Decoder, *, streamed: bool) -> None:
        self.timeouts = timeouts
        self.decoder = decoder
        self.streamed = streamed
        self.expired: ExpiredError | None = None
        self.reading = False
        self.pooling = True  # until the connection is ours: the pool timeout applies
        self._opaque = 0
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._loop = asyncio_loop()
        self.now: Callable[[], float] = anyio.current_time  # the event loop's clock
        if self._loop is not None:
            self._task = asyncio.current_task()
            self.now = self._loop.time
        self._start()

    def _start(self) -> None:
        now = self.now()
        t = self.timeouts
        self.deadline_at = now + t.attempt
        if not self.streamed:
            self.first_at = self.deadline_at  # a whole body: only the deadline
        else:
            self.first_at = min(now + t.first_output, self.deadline_at)
        self.last = now
        # before output the timer also wakes every idle period, to see output start;
        # restarted (the trace hook), an armed timer due no later than that is kept:
        # it fires early and re-arms itself (_fire), so no new timer is made per
        # request; one due later (pushed back while a pool slot was awaited) is not
        target = min(self.first_at, now + t.idle)
        if self._handle is None or self._handle.when() > target:
            self._arm(target)

    def _arm(self, when: float) -> None:
        if self._loop is None:
            return
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop.call_at(when, self._fire)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    async def trace(self, name: str, info: Mapping[str, Any]) -> None:
        """httpx ``trace`` hook: the first connection or send event ends the pool wait."""
        if self.pooling and (name.startswith("connection.") or "send_request" in name):
            self.pooling = False
            self._start()

    def due(self) -> tuple[float, str]:
        """When the next limit passes, and its name."""
        opaque = self.decoder.opaque_progress
        if opaque != self._opaque:  # encrypted reasoning or a signature arrived
            self._opaque = opaque
            self.last = max(self.last, self.now())
        if self.decoder.builder.has_output:
            when, limit = self.last + self.timeouts.idle, "idle_timeout"
        else:
            when, limit = self.first_at, "first_output_timeout"
        if self.deadline_at <= when:
            return self.deadline_at, "attempt_timeout"
        return when, limit

    def _fire(self) -> None:
        self._handle = None
        now = self.now()
        when, limit = self.due()
        if self.pooling:
            self._arm(now + self.timeouts.idle)  # the trace hook restarts the clocks
            return
        if now < when:
            self._arm(min(when, now + self.timeouts.idle))
            return
        if not self.reading:  # the consumer holds the task: only the deadline counts
            if limit == "attempt_timeout":
                self.expired = self.expiry(limit)
            else:
                self._arm(now + min(1.0, self.timeouts.idle / 4))
            return
        self.expired = self.expiry(limit)
        assert self._task is not None
        self._task.cancel()

    def expiry(self, limit: str) -> ExpiredError:
        t = self.timeouts
        if limit == "idle_timeout":
            why = f"idle timeout: no content progress from the provider for {t.idle:g} s"
        elif limit == "first_output_timeout":
            why = f"first-output timeout: no output from the provider within {t.first_output:g} s"
        else:
            why = f"attempt timeout: the call was not finished within {t.attempt:g} s"
        return ExpiredError(limit, why)

    def cancelled(self) -> ExpiredError | None:
        """After a CancelledError while reading: the expiry it was, if it was ours
        (and no other cancellation is pending)."""
        if self.expired is None or self._task is None:
            return None
        return self.expired if self._task.uncancel() == 0 else None

    async def wait(self, chunks: AsyncIterator[bytes]) -> bytes:
        """The next chunk under a cancel scope (backends without the timer)."""
        when, limit = self.due()
        with anyio.move_on_after(max(0.0, when - self.now())) as scope:
            return await chunks.__anext__()
        if scope.cancelled_caught:
            raise self.expiry(limit)
        raise AssertionError("unreachable")  # pragma: no cover


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None under another anyio backend (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def next_chunk(watch: Watchdog, chunks: AsyncIterator[bytes]) -> bytes:
    """The next raw chunk, or :class:`ExpiredError` (StopAsyncIteration at the end)."""
    if watch.expired is not None:
        raise watch.expired
    if watch._loop is None:
        return await watch.wait(chunks)
    watch._task = asyncio.current_task()  # the task that waits (a generator may change task)
    watch.reading = True
    try:
        return await chunks.__anext__()
    except asyncio.CancelledError:
        expired = watch.cancelled()
        if expired is None:
            raise
        raise expired from None
    finally:
        watch.reading = False


async def wait_for(watch: Watchdog, opening: Awaitable[_T]) -> _T:
    """Await ``opening`` (sending, then the response's headers) under the watchdog."""
    if watch._loop is None:
        when, limit = watch.due()
        with anyio.move_on_after(max(0.0, when - watch.now())):
            return await opening
        raise watch.expiry(limit)
    watch._task = asyncio.current_task()
    watch.reading = True
    try:
        return await opening
    except asyncio.CancelledError:
        expired = watch.cancelled()
        if expired is None:
            raise
        raise expired from None
    finally:
        watch.reading = False
