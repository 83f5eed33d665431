"""Resumable streams: a page that reloads mid-answer picks the answer up.

With ``ServeSettings.resumable`` on, ``POST /api/chat`` runs its run in the
request's task but no longer ties it to the client: the run's SSE events go into a
:class:`~._replay_buffer.ReplayBuffer` kept per session (:class:`LiveRun`), and the
response is one *reader* of it. A client that disconnects ends only its reader;
the run goes on and stores its answer. The AI SDK's resume request (``GET
/api/chat/{id}/stream``, what ``DefaultChatTransport.reconnectToStream`` sends,
``ai`` 7.0.173: no body, no offset) gets another reader: the running message from
its ``start`` (its ``messageId`` the stored id), then live events; 204 when
nothing runs (or ran less than :data:`GRACE` seconds ago). ``POST
/api/chat/{id}/stop`` cancels the run (stored as INTERRUPTED, ``detail["limit"] ==
"stop_endpoint"``); every reader gets the stored ``data-stop`` and ``finish``
(``interrupted``), the end a restored session shows too.

**The restored session and the replay divide the work** by the message id: ``GET
/api/sessions/{id}`` gives the stored messages, the running one with the steps it
has stored; the replay is always the *whole* running message from ``start``. On a
resume the SDK starts a fresh message state and, seeing ``start.messageId``, replaces
the restored message of that id with the replayed one, so no part is shown twice.

A reader that cannot send for ``slow_client_timeout`` seconds, or falls behind
what the bounded buffer keeps, is closed (the run goes on; the page can resume).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from zett_agent._resume import cancelling

from ._context import State, state_of
from ._durable_follow import follow_durable
from ._history import ui_messages
from ._replay_buffer import ReplayBuffer, split_events
from ._request import RequestError, valid_session_id
from ._stream import DONE, UI_MESSAGE_STREAM_HEADERS, sse

__all__ = [
    "GRACE",
    "LiveRun",
    "ResumableResponse",
    "base_for",
    "live_run",
    "rejoin",
    "stop",
    "stored_chunks",
]

logger = logging.getLogger("zett_agent.serve")

GRACE = 5.0
"""Seconds a finished run's buffer is still replayed: a page that read the session
while the run streamed and asks to resume just after it ended still gets the end."""

_ABORT = sse({"type": "abort", "reason": "stopped"}) + DONE


class OpenParts:
    """The text and reasoning parts, and the step, a stream has open (to close
    them when its run is stopped)."""

    def __init__(self) -> None:
        self.open: dict[str, str] = {}  # part id -> "text" | "reasoning"
        self.step = False

    def see(self, data: bytes) -> None:
        if b'-start"' not in data and b'-end"' not in data and b'-step"' not in data:
            return
        for event in split_events(data):
            if not event.startswith(b"data: {"):
                continue
            chunk = json.loads(event[len(b"data: ") :])
            kind = chunk.get("type", "")
            if kind in ("text-start", "reasoning-start"):
                self.open[chunk["id"]] = kind[: -len("-start")]
            elif kind in ("text-end", "reasoning-end"):
                self.open.pop(chunk["id"], None)
            elif kind in ("start-step", "finish-step"):
                self.step = kind == "start-step"

    def close(self) -> list[Any]:
        out: list[Any] = [{"type": f"{kind}-end", "id": pid} for pid, kind in self.open.items()]
        if self.step:
            out.append({"type": "finish-step"})
        self.open.clear()
        self.step = False
        return out


@dataclass
class LiveRun:
    """One run of a session that readers can join (see the module)."""

    session_id: str
    message_id: str
    buffer: ReplayBuffer
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    ended_at: float | None = None
    readers: int = 0
    stopped: bool = False
    parts: OpenParts = field(default_factory=lambda: OpenParts())
    base: bytes = b""  # the message's parts before this run (a run after an approval)
    base_steps: int = 0

    def stop(self) -> None:
        self.stopped = True
        self.scope.cancel()


def _runs(state: State) -> dict[str, LiveRun]:
    """The session's live runs, those that ended more than :data:`GRACE` s ago
    forgotten (so a finished run's buffer is freed by the next request)."""
    runs: dict[str, LiveRun] = state.live_runs
    now = time.monotonic()
    for session_id, run in list(runs.items()):
        if run.ended_at is not None and now - run.ended_at > GRACE:
            del runs[session_id]
    return runs


def live_run(state: State, session_id: str) -> LiveRun | None:
    """The run of ``session_id`` readers may join (None: none, or ended > GRACE ago)."""
    return _runs(state).get(session_id)


def _streamed(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` without the ``content-length`` an empty Response gets."""
    return [(k, v) for k, v in headers if k != b"content-length"]


class _Reader(Response):
    """A response that follows a :class:`ReplayBuffer` (``prefix`` first)."""

    def __init__(self, state: State, run: LiveRun, prefix: bytes = b"", start: int = 0) -> None:
        super().__init__(headers=dict(UI_MESSAGE_STREAM_HEADERS))
        self.raw_headers = _streamed(self.raw_headers)
        self._state = state
        self._run = run
        self._prefix = prefix
        self._start = start

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _read(
            self._state, self._run, self._prefix, self._start, receive, send, self.raw_headers
        )


async def _read(
    state: State,
    run: LiveRun,
    prefix: bytes,
    start: int,
    receive: Receive,
    send: Send,
    headers: list[tuple[bytes, bytes]],
) -> None:
    timeout = state.settings.slow_client_timeout
    run.readers += 1
    try:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                if prefix:
                    await send({"type": "http.response.body", "body": prefix, "more_body": True})
                async for data in run.buffer.follow(start):
                    with anyio.move_on_after(timeout) as waited:
                        await send({"type": "http.response.body", "body": data, "more_body": True})
                    if waited.cancelled_caught:
                        logger.warning(
                            "dropping a resumable stream's reader: it read nothing "
                            "for %g s (the run goes on)",
                            timeout,
                        )
                        return  # (the connection is closed, the watcher cancelled)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                pass
            finally:
                group.cancel_scope.cancel()
    finally:
        run.readers -= 1


class ResumableResponse(Response):
    """The response of a run that readers can join: the run (``chunks``, the SSE
    bytes of :func:`~._backpressure.chunks`) is read in this request's task into
    the session's :class:`LiveRun`, and this response is its first reader.
    ``on_close`` is called once the run has ended (the session is free).
    ``events``: a run's events already started, closed at the end too; ``base``:
    the message's parts before this run and their steps (:func:`base_of`), which a
    rejoining reader gets after ``start``."""

    def __init__(
        self,
        state: State,
        session_id: str,
        message_id: str,
        chunks: AsyncGenerator[bytes, None],
        on_close: Callable[[], None],
        events: AsyncGenerator[Any, None] | None = None,
        base: tuple[bytes, int] = (b"", 0),
    ) -> None:
        super().__init__(headers=dict(UI_MESSAGE_STREAM_HEADERS))
        self.raw_headers = _streamed(self.raw_headers)
        self._state = state
        self._chunks = chunks
        self._on_close = on_close
        self._events = events
        self.run = LiveRun(session_id, message_id, ReplayBuffer(state.settings.resume_buffer_bytes))
        self.run.base, self.run.base_steps = base

    async def _stopped(self) -> bytes:
        """The end of a stopped run's message, as the store has it: what is open
        closed, the stored ``data-stop``, ``finish`` with its reason and metadata
        (so a live reader, a resumed one and the restored session agree); ``abort``
        when the store has no stop for it."""
        run = self.run
        rows = await self._state.client.store.rows(run.session_id)
        messages = ui_messages(rows, self._state.agent.continue_prompt)
        message = next((m for m in messages if m.get("id") == run.message_id), None)
        parts = message.get("parts", []) if message else []
        if not parts or parts[-1].get("type") != "data-stop":
            return b"".join(map(sse, run.parts.close())) + _ABORT
        metadata = message.get("metadata") if message else None
        reason = (metadata or {}).get("finishReason") or "interrupted"
        end: list[Any] = [
            *run.parts.close(),
            {"type": "data-stop", "data": parts[-1]["data"]},
            {"type": "finish", "finishReason": reason, "messageMetadata": metadata},
        ]
        return b"".join(map(sse, end)) + DONE

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        run = self.run
        _runs(self._state)[run.session_id] = run
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_read, self._state, run, b"", 0, receive, send, self.raw_headers)
                try:
                    why = "stopped by POST /api/chat/{id}/stop"
                    with run.scope, cancelling("stop_endpoint", why):
                        async with aclosing(self._chunks) as chunks:
                            async for data in chunks:
                                run.buffer.append(data)
                                run.parts.see(data)
                                await anyio.lowlevel.checkpoint()  # readers send it
                    if run.scope.cancelled_caught:
                        with anyio.CancelScope(shield=True):
                            run.buffer.append(await self._stopped())
                finally:
                    run.ended_at = time.monotonic()
                    run.buffer.close()
                    self._on_close()
        finally:
            run.buffer.close()
            if self._events is not None:  # a run already started (its first event read)
                with anyio.CancelScope(shield=True):
                    await self._events.aclose()


async def rejoin(request: Request) -> Response:
    """``GET /api/chat/{id}/stream``: join the running message (see the module)."""
    state = state_of(request)
    session_id = valid_session_id(request.path_params["id"])
    run = live_run(state, session_id) if state.settings.resumable else None
    if run is None:  # a durable run another process runs (._durable_follow)
        followed = await follow_durable(state, session_id) if state.settings.resumable else None
        return followed if followed is not None else Response(status_code=204)
    buffer = run.buffer
    if not buffer.dropped and not run.base:
        return _Reader(state, run)
    # start, the steps the message had before this run, the dropped steps rebuilt
    # from the store (past the bound), then what is kept
    rebuilt = b""
    if buffer.dropped:
        rows = await state.client.store.rows(session_id)
        messages = ui_messages(rows, state.agent.continue_prompt)
        chunks = stored_chunks(messages, run.message_id, buffer.steps_dropped, run.base_steps)
        rebuilt = b"".join(map(sse, chunks))
    prefix = buffer.first + run.base + rebuilt
    return _Reader(state, run, prefix, buffer.dropped + 1)


async def stop(request: Request) -> Response:
    """``POST /api/chat/{id}/stop``: cancel the session's run (204; 404 when none runs).
    The answer so far is stored as INTERRUPTED (``detail["limit"] == "stop_endpoint"``)."""
    state = state_of(request)
    session_id = valid_session_id(request.path_params["id"])
    run = live_run(state, session_id)
    if run is None or run.ended_at is not None:
        raise RequestError("nothing runs in this session", 404)
    run.stop()
    return Response(status_code=204)


def stored_chunks(
    messages: list[dict[str, Any]], message_id: str, steps: int | None = None, skip: int = 0
) -> list[Any]:
    """The chunks of the stored UI message ``message_id``, as whole parts: of its
    steps after the first ``skip``, ``steps`` of them (None: all). What the dropped
    steps of a replay, or the earlier steps of a message a run goes on in, are
    rebuilt from."""
    message = next((m for m in messages if m.get("id") == message_id), None)
    if message is None:
        return []
    out: list[Any] = []
    seen = 0
    n = 0
    last = None if steps is None else skip + steps
    for part in message.get("parts", []):
        kind = part.get("type", "")
        if kind == "step-start":
            if skip < seen:
                out.append({"type": "finish-step"})
            seen += 1
            if last is not None and seen > last:
                return out
            if skip < seen:
                out.append({"type": "start-step"})
            continue
        if seen <= skip:
            continue
        n += 1
        pid = f"{message_id}-s{skip}-{n}"
        if kind in ("text", "reasoning"):
            out += [
                {"type": f"{kind}-start", "id": pid},
                {"type": f"{kind}-delta", "id": pid, "delta": part.get("text", "")},
                {"type": f"{kind}-end", "id": pid},
            ]
        elif kind == "data-stop":
            out.append({"type": "data-stop", "data": part.get("data")})
        elif kind.startswith("tool-"):
            out += _tool_chunks(part, kind[len("tool-") :])
    if skip < seen:
        out.append({"type": "finish-step"})
    return out


async def base_for(state: State, session_id: str, message_id: str) -> tuple[bytes, int]:
    """What the stored message ``message_id`` a run goes on in (a run after an
    approval) holds already: its parts as SSE chunks, and how many steps they are."""
    rows = await state.client.store.rows(session_id)
    messages = ui_messages(rows, state.agent.continue_prompt)
    message = next((m for m in messages if m.get("id") == message_id), None)
    if message is None:
        return b"", 0
    steps = sum(1 for part in message.get("parts", []) if part.get("type") == "step-start")
    return b"".join(map(sse, stored_chunks(messages, message_id))), steps


def _tool_chunks(part: dict[str, Any], name: str) -> list[Any]:
    call = part.get("toolCallId")
    out: list[Any] = [{"type": "tool-input-start", "toolCallId": call, "toolName": name}]
    stage = part.get("state")
    if stage == "output-error" and "output" not in part and isinstance(part.get("input"), str):
        out.append(
            {
                "type": "tool-input-error",
                "toolCallId": call,
                "toolName": name,
                "input": part.get("input"),
                "errorText": part.get("errorText", ""),
            }
        )
        return out
    out.append(
        {
            "type": "tool-input-available",
            "toolCallId": call,
            "toolName": name,
            "input": part.get("input"),
        }
    )
    if stage == "output-available":
        out.append(
            {"type": "tool-output-available", "toolCallId": call, "output": part.get("output")}
        )
    elif stage == "output-error":
        out.append(
            {
                "type": "tool-output-error",
                "toolCallId": call,
                "errorText": part.get("errorText", ""),
            }
        )
    elif stage == "output-denied":
        out.append({"type": "tool-output-denied", "toolCallId": call})
    elif stage in ("approval-requested", "approval-responded"):
        approval = part.get("approval") or {}
        out.append(
            {"type": "tool-approval-request", "approvalId": approval.get("id"), "toolCallId": call}
        )
    return out
