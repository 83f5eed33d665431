"""What every handler of the app shares: its settings, its state, and reading a body."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
from starlette.requests import ClientDisconnect, Request

from zett_agent._agent import Agent
from zett_agent._client import AgentClient

from ._attachments import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    DEFAULT_MAX_CHAT_BODY_BYTES,
)
from ._elicitations import Elicitations
from ._replay_buffer import DEFAULT_RESUME_BUFFER_BYTES
from ._request import (
    DEFAULT_MAX_PARTS_PER_BODY,
    DEFAULT_MAX_PARTS_PER_MESSAGE,
    ChatRequest,
    RequestError,
    check_part_counts,
    parse,
)

logger = logging.getLogger("zett_agent.serve")


DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
DEFAULT_STREAM_BUFFER_BYTES = 256 * 1024
DEFAULT_SLOW_CLIENT_TIMEOUT = 30.0
DEFAULT_MAX_STALLED_STREAMS = 16

PARSE_INLINE_BYTES = 64 * 1024
"""Bodies up to this size are parsed on the event loop; larger ones in a worker
thread, so that parsing a large body never holds the other requests."""

YIELD_EVERY_OBJECTS = 256
"""A worker thread parsing a large body lets go of the GIL after this many JSON
objects (about 1.3 ms of parsing): the event loop waits at most that long for it,
not the interpreter's switch interval (5 ms) at each of the turns a chat takes
(``bench/serve_hostile_clients.py --big-body``)."""


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
        max_stalled_streams: runs of this app that may wait at once, each with
            its queue full, for a client that does not read (each keeps its model
            connection while it waits); a run whose queue fills when that many
            wait already is cancelled at once, as at ``slow_client_timeout``
            (``detail["limit"] == "max_stalled_streams"``), so clients that never
            read cannot hold the model's connection pool.
        max_parts_per_message: parts one message of a ``POST /api/chat`` body may
            hold (413 past it).
        max_parts_per_body: parts all the messages of a ``POST /api/chat`` body
            may hold together (413 past it).
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
    max_stalled_streams: int = DEFAULT_MAX_STALLED_STREAMS
    max_parts_per_message: int = DEFAULT_MAX_PARTS_PER_MESSAGE
    max_parts_per_body: int = DEFAULT_MAX_PARTS_PER_BODY
    resumable: bool = False
    resume_buffer_bytes: int = DEFAULT_RESUME_BUFFER_BYTES


class Stalls:
    """How many runs of one app wait, their queue full, for a client that does
    not read (at most ``limit`` at once)."""

    __slots__ = ("count", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0


@dataclass
class State:
    agent: Agent
    client: AgentClient
    settings: ServeSettings
    own: bool
    running: set[str] = field(default_factory=set)
    elicitations: Elicitations = field(default_factory=Elicitations)
    live_runs: dict[str, Any] = field(default_factory=dict)  # ._rejoin.LiveRun per session
    stalls: Stalls = field(init=False)

    def __post_init__(self) -> None:
        self.stalls = Stalls(self.settings.max_stalled_streams)


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


async def read_json(
    request: Request,
    limit: int,
    *,
    empty: Any = None,
    check: Callable[[Any], None] | None = None,
) -> Any:
    """The request's body as JSON, at most ``limit`` bytes (413 past it). A body
    that is not JSON, or that names one key twice in an object (which answer
    would count?), is a 400; ``empty`` is returned for an empty body when given.
    ``check(data)``, when given, runs on the parsed body before it is returned
    (its :class:`RequestError` raised as is). A body larger than
    :data:`PARSE_INLINE_BYTES` is joined, parsed and checked in a worker thread,
    and one ``check`` refuses is freed there too: none of it holds the event loop."""
    size = 0
    pieces: list[bytes] = []
    try:
        async for piece in request.stream():
            size += len(piece)
            if size > limit:
                raise RequestError(f"the body is larger than {limit} bytes", 413)
            pieces.append(piece)
    except ClientDisconnect:  # gone before its body was read: nobody to answer
        raise RequestError("the client went away before its body arrived") from None
    if size > PARSE_INLINE_BYTES:
        return await anyio.to_thread.run_sync(_parse_large, pieces, check)
    body = b"".join(pieces)
    if not body and empty is not None:
        return empty
    data = _loads(body)
    if check is not None:
        check(data)
    return data


def _parse_large(pieces: list[bytes], check: Callable[[Any], None] | None) -> Any:
    """:func:`read_json`'s worker thread: join, parse (letting go of the GIL every
    :data:`YIELD_EVERY_OBJECTS` objects), check. A refused body is freed here (its
    error is raised anew, without the frames that hold it), not on the event loop,
    which a hundred thousand objects would hold for tens of milliseconds."""
    data = _loads(b"".join(pieces), _yielding_no_duplicates())
    if check is None:
        return data
    try:
        check(data)
    except RequestError as error:
        refused = RequestError(str(error), error.status)
    else:
        return data
    del data
    raise refused


class _DuplicateKeyError(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return out


def _yielding_no_duplicates() -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """:func:`_no_duplicates` that sleeps 0 s (lets go of the GIL, so a waiting
    event loop takes it at once) every :data:`YIELD_EVERY_OBJECTS` objects."""
    made = 0

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal made
        made += 1
        if not made % YIELD_EVERY_OBJECTS:
            time.sleep(0)
        return _no_duplicates(pairs)

    return hook


def _loads(
    body: bytes, hook: Callable[[list[tuple[str, Any]]], dict[str, Any]] = _no_duplicates
) -> Any:
    # the hook runs Python code per object: a worker thread parsing a large body
    # gives the event loop its turns (a C-only parse would hold the GIL throughout),
    # and the yielding hook gives them within YIELD_EVERY_OBJECTS objects
    try:
        return json.loads(body, object_pairs_hook=hook)
    except _DuplicateKeyError as error:
        raise RequestError(
            f"the body names the key {str(error)[:100]!r} twice in one object"
        ) from None
    except (ValueError, RecursionError):
        raise RequestError("the body is not valid JSON") from None


def part_counts(settings: ServeSettings) -> Callable[[Any], None]:
    """:func:`check_part_counts` with ``settings``' limits, for ``read_json(check=)``."""
    return partial(
        check_part_counts,
        per_message=settings.max_parts_per_message,
        per_body=settings.max_parts_per_body,
    )


def validated(data: Any, settings: ServeSettings) -> ChatRequest:
    """``data`` as a chat request (422 naming the fields that do not fit), its
    parts counted first (413 past ``settings``' part limits)."""
    check_part_counts(data, settings.max_parts_per_message, settings.max_parts_per_body)
    return parse(ChatRequest, data, "not a chat request")
