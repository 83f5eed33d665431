"""The ASGI app: :func:`create_app` and its plain endpoint functions.

=======================================  =============================================
``GET /``                                the page (``static/``, served as it is)
``GET /api/info``                        model, tools and limits, for the page
``POST /api/chat``                       the body ``useChat`` sends: a user message, or
                                         the answers to calls waiting for approval;
                                         answers with the UI message stream
                                         (:mod:`.stream`)
``GET /api/chat/{id}/stream``            204: no stream to rejoin (useChat ``resume``)
``GET /api/sessions``                    the stored sessions, newest first
``GET /api/sessions/{id}``               ``{"id", "messages"}``: UI messages (:mod:`.history`)
``GET /api/sessions/{id}/parts/{sha}``   a stored image, document or audio part's bytes
                                         (:mod:`.attachments`)
``POST /api/sessions/{id}/resume``       continue a cut-off answer, streamed as a chat
``POST /api/sessions/{id}/approve``      decide waiting calls without the SDK (JSON)
``DELETE /api/sessions/{id}``            delete the session
=======================================  =============================================

**Approvals from any AI SDK front end**: after ``addToolApprovalResponse`` the SDK
sends the message list ending with the assistant message whose tool parts are
``approval-responded``. Each answer is matched to the session's stored pending
request by its ``approval.id`` *and* ``toolCallId`` (:mod:`.approvals`);
one the server never asked for, or asked for in an earlier request, is refused (409),
and so is a set that leaves a waiting call unanswered (422). The call that runs is the
stored one; the client's ``input`` is never read. The decisions are taken by
:meth:`AgentClient.approve_stream <zett_agent.client.AgentClient.approve_stream>`
before the response starts, so a decision that lost to another one (another tab,
another process: ``ApprovalConflictError``) is a 409 the SDK shows as its error, and
the winner's outcome is what the session holds. The run that goes on streams into the
same assistant message (``start.messageId`` is its stored id).

The chat ``id`` is the session id in the :class:`~zett_agent.sessions.SessionStore`,
which is the source of truth (:mod:`.request`). One run per session at a time: a
second request for a session that is running gets 409 (kept per app, so serve with
one worker process, uvicorn's default; several workers could run one session twice
at once, which :class:`~zett_agent.client.AgentClient` does not support). A client that disconnects
cancels its run; the answer streamed so far is stored as INTERRUPTED with
``detail["cancelled"]`` (as :class:`~zett_agent.client.AgentClient` does) and can be
resumed. Bad requests get a 4xx JSON error ``{"error": {"status", "message"}}``,
never a 500 (:mod:`.security` for Host, Origin, token and size checks).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from zett_agent.agent import Agent
from zett_agent.client import AgentClient
from zett_agent.errors import ConfigError, ResumeError, SessionStoreError
from zett_agent.events import AgentEvent
from zett_agent.messages import UserMessage
from zett_agent.protocols.base import user_parts
from zett_agent.resume import cancelling, plan_resume
from zett_agent.sessions import InMemorySessionStore, SessionStore, live_rows
from zett_agent.sessions.base import messages_of
from zett_agent.tools.approvals import ApprovalConflictError, ApprovalHandoff, Decision
from zett_agent.vendors import PROTOCOL_MEDIA

from .approvals import answered, decisions_for, decisions_from_json
from .attachments import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    DEFAULT_MAX_CHAT_BODY_BYTES,
    file_parts,
    part_response,
    stored_part,
)
from .elicitations import Elicitations
from .failure import failure_text
from .history import Continuation, assistant_message_id, continuation, ui_messages
from .request import (
    ApprovalResponse,
    ChatRequest,
    RequestError,
    approval_responses,
    new_input,
    valid_session_id,
)
from .security import Guard, error_response, is_loopback
from .stream import DONE, UI_MESSAGE_STREAM_HEADERS, ToolCallIds, UIMessageStream, sse

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_SLOW_CLIENT_TIMEOUT",
    "DEFAULT_STREAM_BUFFER_BYTES",
    "ServeSettings",
    "create_app",
]

logger = logging.getLogger("zett_agent.serve")

STATIC = Path(__file__).parent / "static"
DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
DEFAULT_STREAM_BUFFER_BYTES = 256 * 1024
DEFAULT_SLOW_CLIENT_TIMEOUT = 30.0


@dataclass(frozen=True)
class ServeSettings:
    """How the server may be reached.

    Attributes:
        host: the address it listens on (for the Host check and the token rule).
        token: the bearer token ``/api/`` requires; required when ``host`` is not
            loopback (:func:`create_app` raises ``ValueError`` otherwise).
        allowed_hosts: more ``Host`` names to answer to (``"*"``: any; only with a
            token).
        cors_origins: origins allowed to call the API from another site (CORS);
            none by default.
        max_body_bytes: the largest request body, in bytes (but ``POST /api/chat``).
        max_chat_body_bytes: the largest ``POST /api/chat`` body, in bytes (it
            carries attachments as data URLs; the stock transport re-sends earlier
            ones, which are ignored: :mod:`.attachments`).
        max_attachment_bytes: bytes the file parts of one new message may hold.
        stream_buffer_bytes: bytes of a UI stream a run may get ahead of its
            client (the queue between the run and the response); a single larger
            chunk is let through alone.
        slow_client_timeout: seconds a run may wait, with that queue full, for a
            client that does not read; then the run is cancelled as a disconnect
            cancels it (INTERRUPTED, ``detail["limit"] == "slow_client_timeout"``).
    """

    host: str = "127.0.0.1"
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_chat_body_bytes: int = DEFAULT_MAX_CHAT_BODY_BYTES
    max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES
    stream_buffer_bytes: int = DEFAULT_STREAM_BUFFER_BYTES
    slow_client_timeout: float = DEFAULT_SLOW_CLIENT_TIMEOUT


@dataclass
class _State:
    agent: Agent
    client: AgentClient
    settings: ServeSettings
    own: bool
    running: set[str] = field(default_factory=set)
    elicitations: Elicitations = field(default_factory=Elicitations)


def create_app(
    agent: Agent,
    store: SessionStore | None = None,
    settings: ServeSettings | None = None,
    *,
    owns: bool = False,
    handoff: ApprovalHandoff | None = None,
    mcp: Any = None,
) -> Starlette:
    """The ASGI app serving ``agent`` over sessions in ``store`` (default: in memory).

    ``owns``: close the agent (and so its model, a local server it started) and the
    store when the app shuts down; else they stay the caller's to close. The
    app's lifespan starts the model first (``ensure_ready``: the local model's
    server). ``mcp``: an :class:`~zett_agent.mcp.MCPTools` entered for the app's
    life (in its lifespan) and attached to ``agent``; when it has no
    ``elicitation`` callback, the page answers its servers' elicitations
    (:mod:`.elicitations`). Raises ``ValueError`` for a non-loopback ``settings.host`` without a
    token, or ``"*"`` in ``allowed_hosts`` without a token.

    ``handoff``: where decisions (the approve route's, and the AI SDK's answers
    in ``/api/chat``) hand the decided calls of a durable run
    (:class:`zett_agent.durable.runs.DurableRuns` with its session store), so its
    workers run them; without one such a decision is refused (409). The stream of
    such a decision waits for the worker's run and carries what it stored, as
    whole parts (:meth:`AgentClient.approve_stream`).
    """
    settings = settings or ServeSettings()
    if settings.token is None and not is_loopback(settings.host):
        raise ValueError(f"listening on {settings.host} needs a token (ServeSettings.token)")
    if settings.token is None and "*" in settings.allowed_hosts:
        raise ValueError("allowed_hosts '*' needs a token")
    client = AgentClient(
        agent, store if store is not None else InMemorySessionStore(), handoff=handoff
    )
    state = _State(agent, client, settings, own=owns)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        ready = getattr(agent.model, "ensure_ready", None)
        if ready is not None:
            await ready()
        try:
            async with AsyncExitStack() as stack:
                if mcp is not None:
                    if mcp.elicitation is None:
                        mcp.elicitation = state.elicitations.ask
                    await stack.enter_async_context(mcp)
                    mcp.attach(agent)
                yield
        finally:
            if state.own:
                await agent.aclose()
                await client.store.aclose()

    middleware = [
        Middleware(
            Guard,
            bind_host=settings.host,
            token=settings.token,
            allowed_hosts=settings.allowed_hosts,
            cors_origins=settings.cors_origins,
            max_body_bytes=settings.max_body_bytes,
            path_body_bytes={"/api/chat": settings.max_chat_body_bytes},
        )
    ]
    if settings.cors_origins:
        middleware.insert(
            0,
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=["authorization", "content-type"],
            ),
        )
    app = Starlette(
        routes=[
            Route("/", page),
            Route("/api/info", info),
            Route("/api/chat", chat, methods=["POST"]),
            Route("/api/chat/{id}/stream", rejoin),
            Route("/api/sessions", sessions),
            Route("/api/sessions/{id}", session, methods=["GET", "DELETE"]),
            Route("/api/sessions/{id}/parts/{sha256}", stored_part_bytes),
            Route("/api/sessions/{id}/resume", resume, methods=["POST"]),
            Route("/api/sessions/{id}/approve", approve, methods=["POST"]),
            Route("/api/elicitations/{id}", elicitation, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=middleware,
        exception_handlers={
            HTTPException: _http_error,
            RequestError: _request_error,
            Exception: _server_error,
        },
        lifespan=lifespan,
    )
    app.state.zett = state
    return app


# ---------------------------------------------------------------- endpoints


PAGE_HEADERS = {
    "cache-control": "no-cache",
    # the page loads only its own files, and no other site may frame it (it runs tools);
    # attachments it shows are data: URLs it made, or blob: URLs of bytes it fetched
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data: blob:; media-src 'self' data: blob:; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


async def page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)


async def info(request: Request) -> Response:
    state = _state(request)
    agent = state.agent
    return JSONResponse(
        {
            "model": f"{agent.model.provider}:{agent.model.name}",
            "tools": sorted(agent.tools),
            "max_tokens": agent.config.max_tokens,
            "max_turns": agent.config.max_turns,
            "token_required": state.settings.token is not None,
            "attachments": {
                "max_bytes": state.settings.max_attachment_bytes,
                "media_types": _media_types(agent),
                "note": getattr(getattr(agent.model, "vendor", None), "media_note", ""),
            },
        }
    )


def _media_types(agent: Agent) -> list[str]:
    """The media types the agent's provider takes in a user message (the page's
    file picker offers them); every type a part may have when it cannot tell."""
    vendor = getattr(agent.model, "vendor", None)
    if vendor is None:
        return ["image/*", "audio/*", "application/pdf", "text/plain"]
    table = vendor.media if vendor.media is not None else PROTOCOL_MEDIA.get(vendor.protocol, {})
    return sorted({t for rule in table.values() for t in rule.media_types})


async def chat(request: Request) -> Response:
    state = _state(request)
    if not _is_json(request):
        raise RequestError("send the body as application/json", 415)
    body = _validated(await _read_json(request, state.settings.max_chat_body_bytes))
    session_id = valid_session_id(body.id)
    if body.messages[-1].role == "assistant":
        message_id, responses = approval_responses(body)
        return await _answer_approvals(state, session_id, message_id, responses)
    text = new_input(body)
    if await state.client.pending_approval(session_id) is not None:
        raise RequestError(
            "tool calls wait for approval: approve or deny them first "
            "(addToolApprovalResponse, or POST /api/sessions/{id}/approve)",
            409,
        )
    new_parts = body.messages[-1].parts
    stored: list[Any] = []
    if any(isinstance(p, dict) and p.get("type") == "file" for p in new_parts):
        stored = [row.message for row in await state.client.store.rows(session_id)]
    parts = file_parts(new_parts, session_id, stored, state.settings.max_attachment_bytes)
    vendor = getattr(state.agent.model, "vendor", None)
    if parts and vendor is not None:  # a part the provider cannot take: 422, nothing stored
        try:
            user_parts(UserMessage(text, parts), vendor, loaded=False)
        except ConfigError as error:
            raise RequestError(str(error), 422) from None
    _claim(state, session_id)
    try:
        seq = await state.client.store.append(session_id, UserMessage(text, parts))
    except BaseException:
        state.running.discard(session_id)
        raise
    events = state.client.stream(None, session_id=session_id)
    return UIStreamResponse(
        _chunks(events, assistant_message_id(seq)),  # a new message after the question
        on_close=lambda: state.running.discard(session_id),
        settings=state.settings,
    )


async def _answer_approvals(
    state: _State, session_id: str, message_id: str | None, responses: list[ApprovalResponse]
) -> Response:
    """Match the client's approval answers to the session's waiting calls
    (:mod:`.approvals`) and go on with the decisions."""
    place = continuation(await state.client.store.rows(session_id), state.agent.continue_prompt)
    return await _go_on(state, session_id, place, decisions_for(place, message_id, responses))


async def _go_on(
    state: _State, session_id: str, place: Continuation, decisions: Mapping[str, Decision]
) -> Response:
    """Take ``decisions`` and stream the run that goes on into ``place``'s message.

    The first event is read before the response starts: that is when
    :meth:`AgentClient.approve_stream` stores the decisions, so a decision that lost
    (``ApprovalConflictError``), nothing waiting any more (``ResumeError``) or a
    decision set that does not fit (``ValueError``) is an HTTP error, not a stream."""
    _claim(state, session_id)
    events = state.client.approve_stream(session_id, decisions, request_seq=place.request_seq)
    try:
        first = await anext(events)
    except BaseException as error:
        state.running.discard(session_id)
        await events.aclose()
        if isinstance(error, ApprovalConflictError):
            raise RequestError(str(error), 409) from None  # says: decided already
        if isinstance(error, ResumeError | ConfigError):  # nothing waits; a durable
            raise RequestError(str(error), 409) from None  # run's calls, no handoff here
        if isinstance(error, ValueError):
            raise RequestError(f"decisions: {error}", 422) from None
        raise
    return UIStreamResponse(
        _chunks(
            _after(first, events), place.message_id, place.tool_ids, answered(place, decisions)
        ),
        on_close=lambda: state.running.discard(session_id),
        settings=state.settings,
        events=events,
    )


async def _after(
    first: AgentEvent, rest: AsyncGenerator[AgentEvent, None]
) -> AsyncGenerator[AgentEvent, None]:
    """``first``, then the events of ``rest`` (closed with this generator)."""
    async with aclosing(rest):
        yield first
        async for event in rest:
            yield event


async def rejoin(request: Request) -> Response:
    """useChat's ``resume: true`` asks to rejoin a stream still running; zett does not
    keep streams for rejoining (a dropped client cancels its run), so: 204."""
    valid_session_id(request.path_params["id"])
    return Response(status_code=204)


async def sessions(request: Request) -> Response:
    """The stored sessions, newest first; the first :data:`TITLED` get a ``title``
    (their first user message, cut to 80 characters)."""
    client = _state(request).client
    found = await client.sessions()
    listed = []
    for n, info in enumerate(found):
        title = await _title(client, info.session_id) if n < TITLED else None
        listed.append(
            {
                "id": info.session_id,
                "title": title,
                "rows": info.rows,
                "created_at": info.created_at,
                "updated_at": info.updated_at,
            }
        )
    return JSONResponse({"sessions": listed})


TITLED = 50
"""How many sessions of ``GET /api/sessions`` get a title (each loads its session)."""


async def _title(client: AgentClient, session_id: str) -> str | None:
    try:
        messages = await client.messages(session_id)
    except SessionStoreError:
        return None
    for message in messages:
        if isinstance(message, UserMessage):
            text = " ".join(message.content.split())
            return text if len(text) <= 80 else text[:79] + "…"
    return None


async def session(request: Request) -> Response:
    state = _state(request)
    session_id = valid_session_id(request.path_params["id"])
    if request.method == "DELETE":
        if session_id in state.running:
            raise RequestError("the session is running", 409)
        if not await state.client.delete(session_id):
            raise RequestError("no such session", 404)
        return JSONResponse({"id": session_id, "deleted": True})
    rows = await state.client.store.rows(session_id)
    if not rows:
        raise RequestError("no such session", 404)
    messages = ui_messages(rows, state.agent.continue_prompt)
    return JSONResponse(
        {"id": session_id, "running": session_id in state.running, "messages": messages}
    )


async def stored_part_bytes(request: Request) -> Response:
    """A stored part's bytes (``GET /api/sessions/{id}/parts/{sha256}``): 404 unless a
    message of that session holds a part with those bytes."""
    state = _state(request)
    session_id = valid_session_id(request.path_params["id"])
    digest = request.path_params["sha256"]
    rows = await state.client.store.rows(session_id)
    part = stored_part([row.message for row in rows], digest)
    if part is None or part.url is not None:
        raise RequestError("no such part in this session", 404)
    return await part_response(part)


async def resume(request: Request) -> Response:
    state = _state(request)
    session_id = valid_session_id(request.path_params["id"])
    rows = live_rows(await state.client.store.rows(session_id))
    if not rows:
        raise RequestError("no such session", 404)
    try:
        plan_resume(messages_of(rows), state.agent.model, state.agent.continue_prompt)
    except ResumeError as error:
        raise RequestError(str(error), 409) from None
    place = continuation(rows, state.agent.continue_prompt)
    _claim(state, session_id)
    events = state.client.resume_stream(session_id)
    return UIStreamResponse(
        _chunks(events, place.message_id, place.tool_ids),
        on_close=lambda: state.running.discard(session_id),
        settings=state.settings,
    )


async def approve(request: Request) -> Response:
    """Decide the session's calls that wait for approval and go on, streaming the
    run as ``/api/chat`` does, for clients without the AI SDK. Body:
    ``{"decisions": {"<approval id or call id>": {"approved": true} | {"approved":
    false, "reason": "..."}}}``, one per waiting call (the ``approvalId`` of its
    ``tool-approval-request``, or the call's own id). 409 when nothing waits, when
    the calls were decided already (another process, tab or person decided first:
    :class:`~zett_agent.approvals.ApprovalConflictError`, nothing ran), or when a
    durable run's calls cannot be handed to its workers from here; 422 for
    decisions that do not answer exactly the waiting calls."""
    state = _state(request)
    session_id = valid_session_id(request.path_params["id"])
    if not _is_json(request):
        raise RequestError("send the body as application/json", 415)
    data = await _read_json(request, state.settings.max_body_bytes)
    place = continuation(await state.client.store.rows(session_id), state.agent.continue_prompt)
    return await _go_on(state, session_id, place, decisions_from_json(place, data))


async def elicitation(request: Request) -> Response:
    """Answer an MCP server's elicitation the page showed (the ``id`` of its
    ``data-elicitation`` chunk). Body: ``{"action": "accept", "content": {...}}``,
    or ``{"action": "decline"}`` / ``"cancel"``. 204; 404 when nothing waits for
    that id (answered already, or its run ended); 422 for another body."""
    state = _state(request)
    if not _is_json(request):
        raise RequestError("send the body as application/json", 415)
    data = await _read_json(request, state.settings.max_body_bytes)
    action = data.get("action") if isinstance(data, dict) else None
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(action, str) or (content is not None and not isinstance(content, dict)):
        raise RequestError('send {"action": "accept", "content": {...}}', 422)
    try:
        found = state.elicitations.answer(str(request.path_params["id"]), action, content)
    except ValueError as error:
        raise RequestError(str(error), 422) from None
    if not found:
        raise RequestError("nothing waits for that answer (answered, or its run ended)", 404)
    return Response(status_code=204)


# ---------------------------------------------------------------- streaming


class UIStreamResponse(StreamingResponse):
    """A UI message stream that cancels its run when the client goes away.

    The run's chunks go into a bounded queue (``settings.stream_buffer_bytes``) that
    another task sends from, while the request's ``receive`` is watched: on
    ``http.disconnect`` (or a failed send) the run is cancelled, which stores the
    answer so far as INTERRUPTED (cancelled). A client that stops reading fills the
    queue; when the run has waited ``settings.slow_client_timeout`` for room, it is
    cancelled the same way, with ``detail["limit"] == "slow_client_timeout"`` and the
    reason as the stop's message, and the connection is closed. What is queued is
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
    ) -> None:
        super().__init__(chunks, headers=dict(UI_MESSAGE_STREAM_HEADERS))
        self._chunks = chunks
        self._on_close = on_close
        self._settings = settings or ServeSettings()
        self._events = events
        self._released = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The run is read here, in the request's own task (where the route may have
        # read its first event: a session lock taken there must be released there);
        # a second task writes to the client, so a client that does not read blocks
        # only the writer, and the run is cancelled after slow_client_timeout.
        settings = self._settings
        outbox = _Outbox(settings.stream_buffer_bytes)
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
                            await send(
                                {"type": "http.response.body", "body": data, "more_body": True}
                            )
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
                            if not await outbox.put(data, settings.slow_client_timeout):
                                why = (
                                    f"the client read nothing for "
                                    f"{settings.slow_client_timeout:g} s with "
                                    f"{settings.stream_buffer_bytes} bytes of the stream "
                                    f"waiting (slow_client_timeout)"
                                )
                                logger.warning("cancelling a run: %s", why)
                                # shielded: a disconnect now must not cut the
                                # run's own cleanup (the stop it stores) short
                                with (
                                    anyio.CancelScope(shield=True),
                                    cancelling("slow_client_timeout", why),
                                ):
                                    await chunks.aclose()
                                outbox.stalled = True
                                group.cancel_scope.cancel()  # the writer waits on the client
                                break
                finally:
                    outbox.close()
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


class _Outbox:
    """The queue between a run and its response: bytes not yet sent, at most
    ``limit`` of them (one chunk larger than that waits for an empty queue)."""

    __slots__ = ("_items", "_limit", "_ready", "_room", "_size", "done", "stalled")

    def __init__(self, limit: int) -> None:
        self._items: deque[bytes] = deque()
        self._limit = limit
        self._size = 0
        self._ready = anyio.Event()  # set: something to send, or done
        self._room = anyio.Event()  # set: the sender took what was queued
        self.done = False
        self.stalled = False  # the run was cancelled for a client that did not read

    def _full(self, size: int) -> bool:
        return self._size > 0 and self._size + size > self._limit

    async def put(self, data: bytes, timeout: float) -> bool:
        """Queue ``data``; False when the queue stayed full for ``timeout`` seconds."""
        if self._full(len(data)):
            with anyio.move_on_after(timeout):
                while self._full(len(data)):
                    self._room = anyio.Event()
                    await self._room.wait()
            if self._full(len(data)):
                return False
        self._items.append(data)
        self._size += len(data)
        self._ready.set()
        return True

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


async def _chunks(
    events: AsyncGenerator[AgentEvent, None],
    message_id: str,
    tool_ids: ToolCallIds | None = None,
    answered: Sequence[tuple[str, str, Decision]] = (),
) -> AsyncGenerator[bytes, None]:
    """The SSE bytes of one run: the encoder's chunks, then ``[DONE]``. ``tool_ids``
    and ``answered``: a run that goes on in a message streamed before (its tool call
    ids; the approvals it answers). An error ends the message with an ``error``
    chunk whose text says what kind of failure it was (:func:`.failure.failure_text`;
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


# ---------------------------------------------------------------- helpers


def _state(request: Request) -> _State:
    state: _State = request.app.state.zett
    return state


def _claim(state: _State, session_id: str) -> None:
    if session_id in state.running:
        raise RequestError("the session is already running; wait for it or stop it", 409)
    state.running.add(session_id)


def _is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


async def _read_json(request: Request, limit: int) -> Any:
    size = 0
    pieces: list[bytes] = []
    async for piece in request.stream():
        size += len(piece)
        if size > limit:
            raise RequestError(f"the body is larger than {limit} bytes", 413)
        pieces.append(piece)
    try:
        return json.loads(b"".join(pieces))
    except (ValueError, RecursionError):
        raise RequestError("the body is not valid JSON") from None


def _validated(data: Any) -> ChatRequest:
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
            for e in error.errors()[:5]
        )
        raise RequestError(f"not a chat request: {problems}", 422) from None
    except RecursionError:
        raise RequestError("the body is nested too deeply", 422) from None


# ---------------------------------------------------------------- errors


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    return error_response(exc.status_code, str(exc.detail), **headers)


async def _request_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestError)
    return error_response(exc.status, str(exc))


async def _server_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, SessionStoreError):
        logger.error("session store error: %s", exc)
        return error_response(500, f"the session cannot be read: {exc}")
    logger.exception("internal error")
    return error_response(500, "internal error; the server log has the details")
