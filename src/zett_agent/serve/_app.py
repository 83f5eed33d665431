"""The ASGI app: :func:`create_app`, its routes (the endpoint functions are in
:mod:`._routes`, the approval flow in :mod:`._approval_flow`) and its error handlers.

=======================================  =============================================
``GET /``                                the page (``static/``, served as it is)
``GET /api/info``                        model, tools and limits, for the page
``POST /api/chat``                       the body ``useChat`` sends: a user message, or
                                         the answers to calls waiting for approval;
                                         answers with the UI message stream
                                         (:mod:`._stream`)
``GET /api/chat/{id}/stream``            rejoin a running message (useChat ``resume``;
                                         :mod:`._rejoin`), 204 when none runs
``POST /api/chat/{id}/stop``             stop the session's run (:mod:`._rejoin`)
``GET /api/sessions``                    the stored sessions, newest first
``GET /api/sessions/{id}``               ``{"id", "messages"}``: UI messages (:mod:`._history`)
``GET /api/sessions/{id}/parts/{sha}``   a stored image, document or audio part's bytes
                                         (:mod:`._attachments`)
``POST /api/sessions/{id}/resume``       continue a cut-off answer, streamed as a chat
``POST /api/sessions/{id}/approve``      decide waiting calls without the SDK (JSON)
``DELETE /api/sessions/{id}``            delete the session
``POST /api/elicitations/{id}``          the page's answer to an MCP server's question
                                         (:mod:`._elicitations`)
``POST /api/ag-ui``                      an AG-UI 1.0 ``RunAgentInput`` (thread = session):
                                         the run as AG-UI events, approvals as
                                         interrupts, the stop in ``zett.stop``
                                         (:mod:`._ag_ui`)
=======================================  =============================================

**Approvals from any AI SDK front end**: after ``addToolApprovalResponse`` the SDK
sends the message list ending with the assistant message whose tool parts are
``approval-responded``. Each answer is matched to the session's stored pending
request by its ``approval.id`` *and* ``toolCallId`` (:mod:`._approvals`);
one the server never asked for, or asked for in an earlier request, is refused (409),
and so is a set that leaves a waiting call unanswered (422). The call that runs is the
stored one; the client's ``input`` is never read. The decisions are taken by
:meth:`AgentClient.approve_stream <zett_agent.AgentClient.approve_stream>`
before the response starts, so a decision that lost to another one (another tab,
another process: ``ApprovalConflictError``) is a 409 the SDK shows as its error, and
the winner's outcome is what the session holds. The run that goes on streams into the
same assistant message (``start.messageId`` is its stored id).

The chat ``id`` is the session id in the :class:`~zett_agent.sessions.SessionStore`,
which is the source of truth (:mod:`._request`). One run per session at a time: a
second request for a session that is running gets 409 (kept per app, so serve with
one worker process, uvicorn's default; several workers could run one session twice
at once, which :class:`~zett_agent.AgentClient` does not support). A client that disconnects
cancels its run; the answer streamed so far is stored as INTERRUPTED with
``detail["cancelled"]`` (as :class:`~zett_agent.AgentClient` does) and can be
resumed. Every request body is parsed by one strict schema per route
(:mod:`._request`), and bad requests get a 4xx JSON error ``{"error": {"status",
"message"}}`` naming the field, never a 500 (:mod:`._security` for Host, Origin,
token and size checks).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from zett_agent._agent import Agent
from zett_agent._client import AgentClient
from zett_agent.errors import SessionStoreError
from zett_agent.sessions import InMemorySessionStore, SessionStore
from zett_agent.tools._approvals import ApprovalHandoff

from ._ag_ui_route import ag_ui_run
from ._approval_flow import approve
from ._context import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_SLOW_CLIENT_TIMEOUT,
    DEFAULT_STREAM_BUFFER_BYTES,
    ServeSettings,
    State,
)
from ._rejoin import stop as stop_run
from ._request import (
    RequestError,
)
from ._routes import (
    STATIC,
    chat,
    elicitation,
    info,
    page,
    rejoin,
    resume,
    session,
    sessions,
    stored_part_bytes,
)
from ._security import error_response, guard_middleware, is_loopback

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_SLOW_CLIENT_TIMEOUT",
    "DEFAULT_STREAM_BUFFER_BYTES",
    "ServeSettings",
    "create_app",
]

logger = logging.getLogger("zett_agent.serve")


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
    (:mod:`._elicitations`). Raises ``ValueError`` for a non-loopback ``settings.host`` without a
    token, or ``"*"`` in ``allowed_hosts`` without a token.

    ``handoff``: where decisions (the approve route's, and the AI SDK's answers
    in ``/api/chat``) hand the decided calls of a durable run
    (:class:`zett_agent.durable.DurableRuns` with its session store), so its
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
    state = State(agent, client, settings, own=owns)

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

    chat_limit = {"/api/chat": settings.max_chat_body_bytes}
    middleware = [guard_middleware(settings, path_body_bytes=chat_limit)]
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
            Route("/api/chat/{id}/stop", stop_run, methods=["POST"]),
            Route("/api/sessions", sessions),
            Route("/api/sessions/{id}", session, methods=["GET", "DELETE"]),
            Route("/api/sessions/{id}/parts/{sha256}", stored_part_bytes),
            Route("/api/sessions/{id}/resume", resume, methods=["POST"]),
            Route("/api/sessions/{id}/approve", approve, methods=["POST"]),
            Route("/api/elicitations/{id}", elicitation, methods=["POST"]),
            Route("/api/ag-ui", ag_ui_run, methods=["POST"]),
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
