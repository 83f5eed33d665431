"""What every handler of the app shares: its settings, its state, and reading a body."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request

from zett_agent._agent import Agent
from zett_agent._client import AgentClient

from ._attachments import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    DEFAULT_MAX_CHAT_BODY_BYTES,
)
from ._elicitations import Elicitations
from ._replay_buffer import DEFAULT_RESUME_BUFFER_BYTES
from ._request import (
    ChatRequest,
    RequestError,
)

logger = logging.getLogger("zett_agent.serve")


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
            ones, which are ignored: :mod:`._attachments`).
        max_attachment_bytes: bytes the file parts of one new message may hold.
        stream_buffer_bytes: bytes of a UI stream a run may get ahead of its
            client (the queue between the run and the response); a single larger
            chunk is let through alone.
        slow_client_timeout: seconds a run may wait, with that queue full, for a
            client that does not read; then the run is cancelled as a disconnect
            cancels it (INTERRUPTED, ``detail["limit"] == "slow_client_timeout"``).
        resumable: runs outlive their client and a page may rejoin them (the AI
            SDK's ``resume: true``; ``POST /api/chat/{id}/stop`` stops one): :mod:`._rejoin`.
        resume_buffer_bytes: bytes of a running message kept for rejoining readers
            (past it, complete steps are rebuilt from the store): :mod:`._replay_buffer`.
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
    resumable: bool = False
    resume_buffer_bytes: int = DEFAULT_RESUME_BUFFER_BYTES


@dataclass
class State:
    agent: Agent
    client: AgentClient
    settings: ServeSettings
    own: bool
    running: set[str] = field(default_factory=set)
    elicitations: Elicitations = field(default_factory=Elicitations)
    live_runs: dict[str, Any] = field(default_factory=dict)  # ._rejoin.LiveRun per session


# ---------------------------------------------------------------- helpers


def state_of(request: Request) -> State:
    state: State = request.app.state.zett
    return state


def claim(state: State, session_id: str) -> None:
    if session_id in state.running:
        raise RequestError("the session is already running; wait for it or stop it", 409)
    state.running.add(session_id)


def is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


async def read_json(request: Request, limit: int) -> Any:
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


def validated(data: Any) -> ChatRequest:
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
