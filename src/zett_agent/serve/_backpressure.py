"""Between a run and a client: a bounded queue, and a slow reader's limits.

:class:`UIStreamResponse` streams a run's UI message chunks (:func:`chunks`) through
a queue bounded by ``ServeSettings.stream_buffer_bytes``: the run reads on while the
client keeps up; when the queue is full the run waits, and so stops reading its
model stream (back-pressure: the next model event is read only once the queue has
room). A client that reads nothing for ``slow_client_timeout`` seconds is dropped
(its run is cancelled and stored as INTERRUPTED, as any disconnect).

Each waiting run keeps its model connection, so the runs that may wait at once
are counted per app (:class:`~._context.Stalls`, ``ServeSettings.max_stalled_streams``): a
run whose queue fills while that many wait already is cancelled at once, the same
way, with ``detail["limit"] == "max_stalled_streams"`` (a run counts once its
client has taken nothing for :data:`STALLED_AFTER` seconds, the kernel's buffer
for the connection full: a client that reads, only slower than the model writes,
waits less and never counts). Clients that never read
can then hold at most that many of the model's connections (the pool's default is
100), never every other chat's.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from zett_agent._events import AgentEvent
from zett_agent._resume import cancelling
from zett_agent.tools._approvals import Decision

from ._context import ServeSettings, Stalls
from ._failure import failure_text
from ._stream import DONE, UI_MESSAGE_STREAM_HEADERS, ToolCallIds, UIMessageStream, sse

logger = logging.getLogger("zett_agent.serve")

# ---------------------------------------------------------------- streaming


class UIStreamResponse(StreamingResponse):
    """A UI message stream that cancels its run when the client goes away.

    The run's chunks go into a bounded queue (``settings.stream_buffer_bytes``) that
    another task sends from, while the request's ``receive`` is watched: on
    ``http.disconnect`` (or a failed send) the run is cancelled, which stores the
    answer so far as INTERRUPTED (cancelled). A client that stops reading fills the
    queue; when the run has waited ``settings.slow_client_timeout`` for room, it is
    cancelled the same way, with ``detail["limit"] == "slow_client_timeout"`` and the
    reason as the stop's message, and the connection is closed; ``stalls`` (the
    app's count of such waits) cancels it at once, ``"max_stalled_streams"``, when
    its limit of runs wait already. What is queued is
    sent in one write. ``on_close`` is called once, as soon as the run has ended
    (its tail may still be on its way to the client) or the response ends first
    (the server frees the session). ``events``: a run's events already started (their first
    event was read), closed at the end too, even when ``chunks`` never started.
    """

    def __init__(
        self,
        chunks: AsyncGenerator[bytes, None],
        on_close: Callable[[], None],
        settings: ServeSettings | None = None,
        events: AsyncGenerator[AgentEvent, None] | None = None,
        stalls: Stalls | None = None,
    ) -> None:
        super().__init__(chunks, headers=dict(UI_MESSAGE_STREAM_HEADERS))
        self._chunks = chunks
        self._on_close = on_close
        self._settings = settings or ServeSettings()
        self._events = events
        self._stalls = stalls or Stalls(self._settings.max_stalled_streams)
        self._released = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The run is read here, in the request's own task (where the route may have
        # read its first event: a session lock taken there must be released there);
        # a second task writes to the client, so a client that does not read blocks
        # only the writer, and the run is cancelled after slow_client_timeout.
        settings = self._settings
        outbox = _Outbox(settings.stream_buffer_bytes, self._stalls)
        try:
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                async def deliver() -> None:
                    try:
                        await send(
                            {
                                "type": "http.response.start",
                                "status": 200,
                                "headers": self.raw_headers,
                            }
                        )
                        while (data := await outbox.get()) is not None:
                            outbox.sending()
                            await send(
                                {"type": "http.response.body", "body": data, "more_body": True}
                            )
                            outbox.sent()
                        if not outbox.stalled:
                            await send(
                                {"type": "http.response.body", "body": b"", "more_body": False}
                            )
                    except OSError:  # the client went away while we wrote
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                group.start_soon(deliver)
                try:
                    async with aclosing(self._chunks) as chunks:
                        async for data in chunks:
                            limit = await outbox.put(data, settings.slow_client_timeout)
                            if limit is not None:
                                why = _why(limit, settings, self._stalls)
                                logger.warning("cancelling a run: %s", why)
                                # shielded: a disconnect now must not cut the
                                # run's own cleanup (the stop it stores) short
                                with (
                                    anyio.CancelScope(shield=True),
                                    cancelling(limit, why),
                                ):
                                    await chunks.aclose()
                                outbox.stalled = True
                                group.cancel_scope.cancel()  # the writer waits on the client
                                break
                finally:
                    outbox.close()
                    outbox.sent()  # this run no longer counts as stalled
                # the run is over: the session is free while its tail is written
                # (a client that stops reading now holds no session)
                self._release()
        finally:
            try:
                if self._events is not None:
                    with anyio.CancelScope(shield=True):
                        await self._events.aclose()
            finally:
                self._release()

    def _release(self) -> None:
        if not self._released:
            self._released = True
            self._on_close()


STALLED_AFTER = 1.0
"""Seconds the response may wait for its client to take bytes (a ``send`` that has
not returned: the kernel's buffer for the connection is full) before its run counts
as stalled, towards ``max_stalled_streams``; a shorter wait is ordinary
back-pressure (a client reading slower than the model writes)."""


def _why(limit: str, settings: ServeSettings, stalls: Stalls) -> str:
    if limit == "max_stalled_streams":
        return (
            f"the client took nothing for {STALLED_AFTER:g} s while {stalls.limit} other "
            "runs of this server waited for clients that do not read (max_stalled_streams)"
        )
    return (
        f"the client read nothing for {settings.slow_client_timeout:g} s with "
        f"{settings.stream_buffer_bytes} bytes of the stream waiting (slow_client_timeout)"
    )


class _Outbox:
    """The queue between a run and its response: bytes not yet sent, at most
    ``limit`` of them (one chunk larger than that waits for an empty queue); and
    whether the writer waits on its client (``sending``), for :class:`Stalls`."""

    __slots__ = (
        "_counted", "_items", "_limit", "_ready", "_room", "_size", "_stalls",
        "done", "sending_since", "stalled",
    )  # fmt: skip

    def __init__(self, limit: int, stalls: Stalls) -> None:
        self._items: deque[bytes] = deque()
        self._limit = limit
        self._stalls = stalls
        self._counted = False  # this run is one of stalls.count
        self._size = 0
        self._ready = anyio.Event()  # set: something to send, or done
        self._room = anyio.Event()  # set: the sender took what was queued
        self.done = False
        self.stalled = False  # the run was cancelled for a client that did not read
        self.sending_since: float | None = None  # a send to the client has not returned

    def _full(self, size: int) -> bool:
        return self._size > 0 and self._size + size > self._limit

    def sending(self) -> None:
        """The writer starts a send to the client."""
        self.sending_since = anyio.current_time()

    def sent(self) -> None:
        """The client took what was sent (or the response ended): not stalled."""
        self.sending_since = None
        if self._counted:
            self._counted = False
            self._stalls.count -= 1

    def _stall_limit(self) -> str | None:
        """Count this run as stalled once its send has waited STALLED_AFTER; the
        limit it finds reached (then it must end), or None."""
        since = self.sending_since
        if self._counted or since is None or anyio.current_time() < since + STALLED_AFTER:
            return None
        stalls = self._stalls
        if stalls.count >= stalls.limit:
            return "max_stalled_streams"
        stalls.count += 1
        self._counted = True
        return None

    async def put(self, data: bytes, timeout: float) -> str | None:
        """Queue ``data``; the limit that ended the run's wait instead:
        ``"slow_client_timeout"`` when the queue stayed full for ``timeout`` seconds,
        ``"max_stalled_streams"`` when the client has taken nothing for
        :data:`STALLED_AFTER` seconds while the app's limit of stalled runs wait
        already."""
        limit = self._stall_limit()
        if limit is not None:
            return limit
        size = len(data)
        deadline = anyio.current_time() + timeout
        while self._full(size):
            now = anyio.current_time()
            until = deadline
            if not self._counted and self.sending_since is not None:
                until = min(until, self.sending_since + STALLED_AFTER)
            if await self._room_within(size, max(0.0, until - now)):
                break
            if anyio.current_time() >= deadline:
                return "slow_client_timeout"
            limit = self._stall_limit()
            if limit is not None:
                return limit
        self._items.append(data)
        self._size += size
        self._ready.set()
        return None

    async def _room_within(self, size: int, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            while self._full(size):
                self._room = anyio.Event()
                await self._room.wait()
        return not self._full(size)

    async def get(self) -> bytes | None:
        """Everything queued, joined (None once the run is done and all is sent)."""
        while not self._items:
            if self.done:
                return None
            self._ready = anyio.Event()
            await self._ready.wait()
        items = self._items
        data = items.popleft() if len(items) == 1 else b"".join(items)
        items.clear()
        self._size = 0
        self._room.set()
        return data

    def close(self) -> None:
        self.done = True
        self._ready.set()


async def chunks(
    events: AsyncGenerator[AgentEvent, None],
    message_id: str,
    tool_ids: ToolCallIds | None = None,
    answered: Sequence[tuple[str, str, Decision]] = (),
) -> AsyncGenerator[bytes, None]:
    """The SSE bytes of one run: the encoder's chunks, then ``[DONE]``. ``tool_ids``
    and ``answered``: a run that goes on in a message streamed before (its tool call
    ids; the approvals it answers). An error ends the message with an ``error``
    chunk whose text says what kind of failure it was (:func:`._failure.failure_text`;
    the details go to the log); a cancellation propagates (the client is gone)."""
    encoder = UIMessageStream(message_id, tool_ids)
    opening = encoder.start() + encoder.approval_responses(answered)
    if opening:  # start itself waits for the first part (UIMessageStream)
        yield b"".join(map(sse, opening))
    try:
        async with aclosing(events) as run:
            async for event in run:
                chunks = encoder.feed(event)
                if chunks:  # one write per event
                    yield b"".join(map(sse, chunks))
    except Exception as error:
        logger.warning("run of UI message %s failed: %r", message_id, error)
        yield b"".join(map(sse, encoder.fail(failure_text(error))))
    else:
        yield b"".join(map(sse, encoder.finish()))
    yield DONE
