"""The chunks of one running UI message, kept for readers that join late.

A :class:`ReplayBuffer` holds the server-sent events (``data: {...}\\n\\n``, one
chunk each) a run has streamed into its current assistant message, so a client
that reloads (the AI SDK's resume request) is sent the message from its start
and then follows it live. Any number of readers follow one buffer, each at its
own position; none of them slows the run (the run appends and never waits).

**Bounded**: the events are at most ``limit`` bytes. Past it, the buffer drops
its oldest *whole steps*: the events from the second one up to the last
``start-step`` (the steps before it are complete, and the session store holds
them), but never events a live reader has yet to send, unless the buffer holds
:data:`HARD_FACTOR` times ``limit``. The first event (``start``) is kept. A
reader that joins after a drop is sent ``start``, then the dropped steps rebuilt
from the store (whole parts, :func:`~._rejoin.stored_chunks`), then the events
kept. The step still streaming is never dropped, so one long step is held
whole (the run holds its text too).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

__all__ = ["DEFAULT_RESUME_BUFFER_BYTES", "ReplayBuffer", "split_events"]

DEFAULT_RESUME_BUFFER_BYTES = 1024 * 1024
"""Bytes of SSE events kept per running message (``ServeSettings.resume_buffer_bytes``)."""

HARD_FACTOR = 4
"""Past ``HARD_FACTOR * limit`` bytes, steps are dropped even when a reader has not
sent them yet (that reader is closed; its page can resume)."""

_STEP = b'data: {"type": "start-step"}\n\n'


def split_events(data: bytes) -> list[bytes]:
    """The server-sent events of ``data`` (as :func:`~._stream.sse` frames them),
    each with its blank line."""
    return [piece + b"\n\n" for piece in data.split(b"\n\n") if piece]


class ReplayBuffer:
    """The SSE events of one running message (see the module).

    ``append`` adds bytes (one or more events), ``close`` ends the message;
    :meth:`follow` yields the events from a position, then live ones, until closed.
    ``dropped``: how many events after the first were dropped (their steps are in
    the store); ``steps_dropped``: how many ``start-step`` events they held.
    """

    def __init__(self, limit: int = DEFAULT_RESUME_BUFFER_BYTES) -> None:
        self.limit = limit
        self._events: list[bytes] = []  # _events[0] is event 0; then event dropped+1...
        self._size = 0
        self.dropped = 0
        self.steps_dropped = 0
        self.done = False
        self._changed = anyio.Event()
        self._readers: dict[int, int] = {}  # a follow() -> its position
        self._next_reader = 0

    @property
    def size(self) -> int:
        """Bytes held."""
        return self._size

    @property
    def first(self) -> bytes:
        """The first event (``start``), or nothing yet."""
        return self._events[0] if self._events else b""

    @property
    def end(self) -> int:
        """The position after the last event appended."""
        return len(self._events) + self.dropped

    def append(self, data: bytes) -> None:
        if self._size > self.limit:  # before: readers had a turn to send the last ones
            self._trim()
        for event in split_events(data):
            self._events.append(event)
            self._size += len(event)
        self._changed.set()
        self._changed = anyio.Event()

    def close(self) -> None:
        self.done = True
        self._changed.set()

    def _trim(self) -> None:
        events = self._events
        until = len(events)
        if self._readers and self._size <= HARD_FACTOR * self.limit:
            # not past what a live reader has yet to send (a stalled one is dropped
            # by its response after slow_client_timeout, or here at HARD_FACTOR)
            until = min(until, min(self._readers.values()) - self.dropped + 1)
        last = max((i for i in range(1, until) if events[i] == _STEP), default=0)
        if last <= 1:
            return  # one step: kept whole
        cut = events[1:last]
        self.steps_dropped += sum(1 for e in cut if e == _STEP)
        self._size -= sum(map(len, cut))
        self.dropped += len(cut)
        del events[1:last]

    def events_from(self, position: int) -> list[bytes] | None:
        """The events at ``position`` and after (None when some were dropped)."""
        if position <= self.dropped and (position > 0 or self.dropped > 0):
            return None
        return self._events[max(position - self.dropped, 0) :]

    async def follow(self, position: int = 0) -> AsyncIterator[bytes]:
        """The events from ``position`` (joined per write), then live ones, until the
        message ends. Stops early when the reader fell behind a drop."""
        key = self._next_reader
        self._next_reader += 1
        self._readers[key] = position
        try:
            while True:
                events = self.events_from(position)
                if events is None:
                    return
                if events:
                    position += len(events)
                    yield b"".join(events)
                    self._readers[key] = position
                    continue
                if self.done:
                    return
                await self._changed.wait()
        finally:
            del self._readers[key]
