""":func:`create_a2a_app`: an agent as an A2A 1.0 server (JSON-RPC binding).

==========================================  ==========================================
``GET /.well-known/agent-card.json``        the agent card (one JSONRPC interface at
                                            ``/api/a2a``, protocol version 1.0,
                                            streaming, no push notifications)
``POST /api/a2a``                           JSON-RPC 2.0: ``SendMessage``,
                                            ``SendStreamingMessage`` (server-sent
                                            events of ``StreamResponse``),
                                            ``GetTask``, ``CancelTask``
==========================================  ==========================================

A **context is a session** of the store (``contextId`` is the session id; a message
without one starts a new session), so a context survives the process; tasks are
kept in memory for the app's life (the last :data:`MAX_TASKS`: the oldest ended ones
are forgotten first). One task runs per context at a time. The task's
state follows the run's stop (:mod:`._wire`): refusal ``rejected``, cut or
interrupted ``failed``, waiting for approval ``input-required``, with the stop in
the status message's metadata (``metadata.zett.stop``).

**Approvals**: an ``input-required`` task's status message holds a data part
``{"zett": {"approvals": [{"id", "name", "arguments"}]}}``; the client answers with
a message on the same ``taskId`` whose data part is ``{"approvals": {"<id>":
{"approved": true | false, "reason"?: "..."}}}`` (``approved`` a JSON boolean), one
per waiting call. The decisions are taken by :meth:`AgentClient.approve_stream
<zett_agent.AgentClient.approve_stream>` (the compare-and-set every decider shares:
one that lost is a JSON-RPC error and nothing runs), and the same task goes on.

Params are parsed strictly (unknown fields of the request, the message or a part
refused as ``-32602`` naming the field); ``message/send`` and the other v0.3 names
are ``-32601`` with the 1.0 name. The Host/Origin/token checks are ``zett serve``'s
(:mod:`zett_agent.serve._security`): a token, when set, is required on ``/api/a2a``.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from zett_agent._agent import Agent
from zett_agent._client import AgentClient
from zett_agent._events import AgentEvent
from zett_agent.serve._ag_ui_route import EventStreamResponse
from zett_agent.serve._context import DEFAULT_MAX_BODY_BYTES, ServeSettings, read_json
from zett_agent.serve._history import continuation
from zett_agent.serve._request import RequestError, valid_session_id
from zett_agent.serve._security import guard_middleware, is_loopback
from zett_agent.sessions import InMemorySessionStore, SessionStore
from zett_agent.tools._approvals import ApprovalConflictError, Decision

from ._rpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    NO_PUSH,
    PARSE_ERROR,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    UNSUPPORTED,
    Approvals,
    MessageIn,
    RPCError,
    SendParams,
    TaskParams,
    parse_params,
)
from ._tasks import Run, ServerState, Task
from ._wire import (
    CANCELED,
    INPUT_REQUIRED,
    PROTOCOL_VERSION,
    TERMINAL,
    WORKING,
    agent_message,
)

__all__ = ["create_a2a_app"]

logger = logging.getLogger("zett_agent.a2a")

CARD_PATH = "/.well-known/agent-card.json"

MAX_TASKS = 10_000
"""Tasks kept for ``GetTask``; past it the oldest ended ones are forgotten."""

V03_NAMES = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
}


# ---------------------------------------------------------------- methods


def _text_of(message: MessageIn) -> str:
    return "".join(p.text for p in message.parts if p.text)


def _user_json(message: MessageIn, task: Task) -> dict[str, Any]:
    record = message.model_dump(exclude_none=True)
    record["contextId"], record["taskId"] = task.context_id, task.id
    return record


async def _start(
    state: ServerState, params: SendParams
) -> tuple[Run, AsyncGenerator[AgentEvent, None]]:
    """The task a ``SendMessage`` starts or continues, and the events of its run."""
    message = params.message
    if params.configuration is not None and params.configuration.taskPushNotificationConfig:
        raise RPCError(NO_PUSH, "push notifications are not supported (the card says so)")
    if message.taskId:
        task = state.tasks.get(message.taskId)
        if task is None:
            raise RPCError(TASK_NOT_FOUND, f"no task {message.taskId!r}")
        if task.state != INPUT_REQUIRED:
            raise RPCError(UNSUPPORTED, f"task {task.id!r} is {task.state}: it takes no more input")
        return await _answer(state, task, message)
    try:
        context = valid_session_id(message.contextId) if message.contextId else uuid.uuid4().hex
    except RequestError as error:
        raise RPCError(INVALID_PARAMS, f"params.message.contextId: {error}") from None
    text = _text_of(message)
    if not text.strip():
        raise RPCError(INVALID_PARAMS, "params.message.parts: no text part with the question")
    if await state.client.pending_approval(context) is not None:
        raise RPCError(
            UNSUPPORTED, "calls wait for approval in this context: answer the task first"
        )
    if context in state.running:
        raise RPCError(UNSUPPORTED, "a task of this context is running; wait for it or cancel it")
    task = Task(uuid.uuid4().hex, context)
    task.history.append(_user_json(message, task))
    _forget_old(state.tasks)
    state.tasks[task.id] = task
    state.running.add(context)
    return Run(state, task), state.client.stream(text, session_id=context)


def _forget_old(tasks: dict[str, Task]) -> None:
    """Room for one more task: the oldest ended tasks go (dicts keep insertion order)."""
    if len(tasks) < MAX_TASKS:
        return
    for task_id in [t.id for t in tasks.values() if t.state in TERMINAL][: len(tasks) // 10 + 1]:
        del tasks[task_id]


async def _answer(
    state: ServerState, task: Task, message: MessageIn
) -> tuple[Run, AsyncGenerator[AgentEvent, None]]:
    """Decisions for an input-required task's waiting calls, and the run that goes on."""
    data = next((p.data for p in message.parts if p.data is not None), None)
    answers = parse_params(Approvals, data)
    place = continuation(
        await state.client.store.rows(task.context_id), state.agent.continue_prompt
    )
    by_id = {w.approval_id: w.call.id for w in place.waiting}
    decisions: dict[str, Decision] = {}
    for key, answer in answers.approvals.items():
        if key not in by_id:
            raise RPCError(
                INVALID_PARAMS, f"params.message.parts.data.approvals.{key}: no such call"
            )
        decisions[by_id[key]] = Decision(answer.approved, answer.reason)
    if task.context_id in state.running:
        raise RPCError(UNSUPPORTED, "a task of this context is running")
    state.running.add(task.context_id)
    events = state.client.approve_stream(task.context_id, decisions, request_seq=place.request_seq)
    try:
        first = await anext(events)
    except BaseException as error:
        state.running.discard(task.context_id)
        await events.aclose()
        if isinstance(error, ApprovalConflictError):
            raise RPCError(UNSUPPORTED, f"decided already: {error}") from None
        if isinstance(error, ValueError):
            raise RPCError(INVALID_PARAMS, f"params.message: {error}") from None
        raise
    task.history.append(_user_json(message, task))

    async def go_on() -> AsyncGenerator[AgentEvent, None]:
        async with aclosing(events):
            yield first
            async for event in events:
                yield event

    return Run(state, task), go_on()


async def _send(state: ServerState, params: SendParams) -> dict[str, Any]:
    run, events = await _start(state, params)
    async for _ in run.drive(events):
        pass
    return {"task": run.task.to_json()}


async def _stream(state: ServerState, params: SendParams, rpc_id: Any) -> Response:
    """``SendStreamingMessage``: the task, then its updates, as server-sent events of
    JSON-RPC responses, read in the request's own task (a session lock taken there
    is released there) and sent through ``zett serve``'s bounded queue."""
    run, events = await _start(state, params)
    context = run.task.context_id

    def frame(result: Mapping[str, Any]) -> bytes:
        body = {"jsonrpc": "2.0", "id": rpc_id, "result": result}
        return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"

    async def frames() -> AsyncGenerator[bytes, None]:
        run.task.state = WORKING
        yield frame({"task": run.task.to_json()})
        async for out in run.drive(events):
            yield frame(out)
        yield frame(run.final())

    return EventStreamResponse(
        frames(),
        on_close=lambda: state.running.discard(context),
        settings=state.settings,
        events=events,
    )


def _get(state: ServerState, params: TaskParams) -> dict[str, Any]:
    task = state.tasks.get(params.id)
    if task is None:
        raise RPCError(TASK_NOT_FOUND, f"no task {params.id!r}")
    return task.to_json()


async def _cancel(state: ServerState, params: TaskParams) -> dict[str, Any]:
    task = state.tasks.get(params.id)
    if task is None:
        raise RPCError(TASK_NOT_FOUND, f"no task {params.id!r}")
    if task.state in TERMINAL:
        raise RPCError(TASK_NOT_CANCELABLE, f"task {task.id!r} is {task.state}")
    if task.scope is not None:
        task.scope.cancel()
        with anyio.move_on_after(5):
            while task.scope is not None:
                await anyio.sleep(0.01)
    elif task.state == INPUT_REQUIRED and task.request is not None:
        # the waiting calls are denied (the session takes new questions again)
        decisions = {c.id: Decision(False, "the task was canceled") for c in task.request.calls}
        events = state.client.approve_stream(task.context_id, decisions)
        async with aclosing(events) as run:
            async for _ in run:
                pass
    task.state = CANCELED
    task.message = agent_message(
        "The task was canceled.",
        context_id=task.context_id,
        task_id=task.id,
        message_id=uuid.uuid4().hex,
        stop=task.stop,
    )
    return task.to_json()


# ---------------------------------------------------------------- the app


def _rpc_error(rpc_id: Any, code: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}}
    )


async def _rpc(request: Request) -> Response:
    state: ServerState = request.app.state.zett_a2a
    rpc_id: Any = None
    try:
        try:
            body = await read_json(request, state.settings.max_body_bytes)
        except RequestError as error:
            code = PARSE_ERROR if "JSON" in str(error) else INVALID_REQUEST
            raise RPCError(code, str(error)) from None
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
            raise RPCError(INVALID_REQUEST, 'not a JSON-RPC 2.0 request ("jsonrpc": "2.0")')
        rpc_id = body.get("id")
        method = body.get("method")
        params = body.get("params", {})
        if method in V03_NAMES:
            raise RPCError(
                METHOD_NOT_FOUND,
                f"{method} is A2A 0.3; this server speaks 1.0: {V03_NAMES[method]}",
            )
        if method == "SendMessage":
            result = await _send(state, parse_params(SendParams, params))
        elif method == "SendStreamingMessage":
            return await _stream(state, parse_params(SendParams, params), rpc_id)
        elif method == "GetTask":
            result = _get(state, parse_params(TaskParams, params))
        elif method == "CancelTask":
            result = await _cancel(state, parse_params(TaskParams, params))
        else:
            raise RPCError(METHOD_NOT_FOUND, f"no method {method!r}")
    except RPCError as error:
        return _rpc_error(rpc_id, error.code, str(error))
    return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "result": result})


async def _card(request: Request) -> Response:
    state: ServerState = request.app.state.zett_a2a
    base = str(request.url.replace(query="")).removesuffix(CARD_PATH)  # mounted: its prefix
    tools = sorted(state.agent.tools)
    card = {
        "name": state.name,
        "description": state.description,
        "supportedInterfaces": [
            {
                "url": f"{base}/api/a2a",
                "protocolBinding": "JSONRPC",
                "protocolVersion": PROTOCOL_VERSION,
            }
        ],
        "version": "1.0",
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [
            {
                "id": "chat",
                "name": state.name,
                "description": state.description,
                "tags": ["zett", *tools],
            }
        ],
    }
    return JSONResponse(card)


def create_a2a_app(
    agent: Agent,
    store: SessionStore | None = None,
    settings: ServeSettings | None = None,
    *,
    name: str | None = None,
    description: str = "A zett-agent agent: every answer says why the model stopped.",
    owns: bool = False,
) -> Starlette:
    """The ASGI app serving ``agent`` as an A2A 1.0 agent over sessions in ``store``
    (default in memory); the routes and the rules are in this module's docstring.

    ``settings``: the host, token and body limit of ``zett serve``
    (:class:`~zett_agent.serve.ServeSettings`); ``ValueError`` for a non-loopback
    host without a token. ``name``: the card's name (default the agent's).
    ``owns``: close the agent and the store when the app shuts down."""
    settings = settings or ServeSettings()
    if settings.token is None and not is_loopback(settings.host):
        raise ValueError(f"listening on {settings.host} needs a token (ServeSettings.token)")
    client = AgentClient(agent, store if store is not None else InMemorySessionStore())
    state = ServerState(agent, client, settings, name or agent.config.name, description)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owns:
                await agent.aclose()
                await client.store.aclose()

    app = Starlette(
        routes=[
            Route(CARD_PATH, _card),
            Route("/api/a2a", _rpc, methods=["POST"]),
        ],
        middleware=[
            guard_middleware(
                settings, max_body_bytes=settings.max_body_bytes or DEFAULT_MAX_BODY_BYTES
            )
        ],
        lifespan=lifespan,
    )
    app.state.zett_a2a = state
    return app
