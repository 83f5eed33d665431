"""The ASGI app: :func:`create_app` and its plain endpoint functions.

=======================================  =============================================
``GET /``                                the page (``static/``, served as it is)
``GET /api/info``                        model, tools and limits, for the page
``POST /api/chat``                       the body ``useChat`` sends; answers with the
                                         UI message stream (:mod:`.stream`)
``GET /api/chat/{id}/stream``            204: no stream to rejoin (useChat ``resume``)
``GET /api/sessions``                    the stored sessions, newest first
``GET /api/sessions/{id}``               ``{"id", "messages"}``: UI messages (:mod:`.history`)
``GET /api/sessions/{id}/parts/{sha}``   a stored image, document or audio part's bytes
                                         (:mod:`.attachments`)
``POST /api/sessions/{id}/resume``       continue a cut-off answer, streamed as a chat
``DELETE /api/sessions/{id}``            delete the session
=======================================  =============================================

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
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
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
from zett_agent.errors import ConfigError, ResumeError, SessionStoreError, ZettError
from zett_agent.events import AgentEvent
from zett_agent.messages import ToolCall, UserMessage
from zett_agent.protocols.base import user_parts
from zett_agent.resume import plan_resume
from zett_agent.sessions import InMemorySessionStore, SessionStore, live_rows
from zett_agent.sessions.base import messages_of
from zett_agent.tools.approvals import (
    ApprovalConflictError,
    ApprovalHandoff,
    Decision,
    decided_results,
)
from zett_agent.vendors import PROTOCOL_MEDIA

from .attachments import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    DEFAULT_MAX_CHAT_BODY_BYTES,
    file_parts,
    part_response,
    stored_part,
)
from .elicitations import Elicitations
from .history import assistant_message_id, ui_messages
from .request import ChatRequest, RequestError, new_input, valid_session_id
from .security import Guard, error_response, is_loopback
from .stream import DONE, UI_MESSAGE_STREAM_HEADERS, UIMessageStream, sse

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServeSettings", "create_app"]

logger = logging.getLogger("zett_agent.serve")

STATIC = Path(__file__).parent / "static"
DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024


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
    """

    host: str = "127.0.0.1"
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_chat_body_bytes: int = DEFAULT_MAX_CHAT_BODY_BYTES
    max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES


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

    ``handoff``: where the approve route hands the decided calls of a durable
    run (:class:`zett_agent.durable.runs.DurableRuns` with its session store), so
    its workers run them; without one such a decision is refused (409).
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
    text = new_input(body)
    if await state.client.pending_approval(session_id) is not None:
        raise RequestError("tool calls wait for approval: POST /api/sessions/{id}/approve", 409)
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
        _chunks(events, assistant_message_id(seq)),
        on_close=lambda: state.running.discard(session_id),
    )


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
    shown = ui_messages(rows, state.agent.continue_prompt)
    last = shown[-1] if shown else None
    message_id = (
        last["id"]
        if last is not None and last["role"] == "assistant"
        else assistant_message_id(rows[-1].seq)
    )
    _claim(state, session_id)
    events = state.client.resume_stream(session_id)
    return UIStreamResponse(
        _chunks(events, message_id), on_close=lambda: state.running.discard(session_id)
    )


async def approve(request: Request) -> Response:
    """Decide the session's calls that wait for approval and go on, streaming the
    run as ``/api/chat`` does. Body: ``{"decisions": {"<call id>": {"approved": true}
    | {"approved": false, "reason": "..."}}}``, one per waiting call (the
    ``approvalId`` of its ``tool-approval-request``). 409 when nothing waits, when
    the calls were decided already (another process, tab or person decided first:
    :class:`~zett_agent.approvals.ApprovalConflictError`, nothing ran), or when a
    durable run's calls cannot be handed to its workers from here; 422 for
    decisions that do not answer exactly the waiting calls."""
    state = _state(request)
    session_id = valid_session_id(request.path_params["id"])
    if not _is_json(request):
        raise RequestError("send the body as application/json", 415)
    data = await _read_json(request, state.settings.max_body_bytes)
    waiting = await state.client.pending_approval(session_id)
    if waiting is None:
        raise RequestError("no tool calls wait for approval in this session", 409)
    raw = data.get("decisions") if isinstance(data, dict) else None
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise RequestError('send {"decisions": {"<call id>": {"approved": true}}}', 422)
    decisions = {
        str(call_id): Decision(bool(d.get("approved")), _reason(d.get("reason")))
        for call_id, d in raw.items()
    }
    try:
        decided_results(waiting, decisions)
    except ValueError as error:
        raise RequestError(f"decisions: {error}", 422) from None
    rows = live_rows(await state.client.store.rows(session_id))
    shown = ui_messages(rows, state.agent.continue_prompt)
    last = shown[-1] if shown else None
    message_id = (
        last["id"]
        if last is not None and last["role"] == "assistant"
        else assistant_message_id(rows[-1].seq)
    )
    _claim(state, session_id)
    events = state.client.approve_stream(session_id, decisions)
    try:
        # the decision is a compare-and-set taken before the first event: a
        # decision that lost (another process or tab decided first) is a 409
        # before the stream starts, and nothing ran
        first = await anext(events)
    except BaseException as error:
        await events.aclose()
        state.running.discard(session_id)
        if isinstance(error, ApprovalConflictError):
            raise RequestError(str(error), 409) from None
        if isinstance(error, ConfigError):
            raise RequestError(str(error), 409) from None
        raise
    return UIStreamResponse(
        _chunks(_primed(first, events), message_id, waiting.calls),
        on_close=lambda: state.running.discard(session_id),
    )


async def _primed(
    first: AgentEvent, rest: AsyncGenerator[AgentEvent, None]
) -> AsyncGenerator[AgentEvent, None]:
    """``first`` (already taken from ``rest``), then the rest of ``rest``."""
    async with aclosing(rest):
        yield first
        async for event in rest:
            yield event


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


def _reason(value: Any) -> str | None:
    return value[:2000] if isinstance(value, str) else None


# ---------------------------------------------------------------- streaming


class UIStreamResponse(StreamingResponse):
    """A UI message stream that cancels its run when the client goes away.

    The run's chunks are sent as they come while the request's ``receive`` is
    watched: on ``http.disconnect`` (or a failed send) the run is cancelled, which
    stores the answer so far as INTERRUPTED (cancelled). ``on_close`` is called once
    whatever happens (the server frees the session).
    """

    def __init__(self, chunks: AsyncGenerator[bytes, None], on_close: Callable[[], None]) -> None:
        super().__init__(chunks, headers=dict(UI_MESSAGE_STREAM_HEADERS))
        self._chunks = chunks
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                try:
                    await send(
                        {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
                    )
                    async with aclosing(self._chunks) as chunks:
                        async for data in chunks:
                            await send(
                                {"type": "http.response.body", "body": data, "more_body": True}
                            )
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except OSError:  # the client went away while we wrote
                    pass
                group.cancel_scope.cancel()
        finally:
            self._on_close()


async def _chunks(
    events: AsyncGenerator[AgentEvent, None],
    message_id: str,
    waiting: Sequence[ToolCall] = (),
) -> AsyncGenerator[bytes, None]:
    """The SSE bytes of one run: the encoder's chunks, then ``[DONE]``. An error
    ends the message with an ``error`` chunk whose text names the error's type only
    (details go to the log); a cancellation propagates (the client is gone)."""
    encoder = UIMessageStream(message_id)
    encoder.continue_calls(waiting)  # approved calls of an earlier stream
    yield b"".join(map(sse, encoder.start()))
    try:
        async with aclosing(events) as run:
            async for event in run:
                chunks = encoder.feed(event)
                if chunks:  # one write per event
                    yield b"".join(map(sse, chunks))
    except Exception as error:
        logger.warning("run of UI message %s failed: %r", message_id, error)
        yield b"".join(map(sse, encoder.fail(_error_text(error))))
    else:
        yield b"".join(map(sse, encoder.finish()))
    yield DONE


def _error_text(error: Exception) -> str:
    if isinstance(error, ZettError):
        return f"The run failed: {type(error).__name__}. The server log has the details."
    return "The run failed with an internal error. The server log has the details."


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
