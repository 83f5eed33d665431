"""Approvals through serve: answers matched to the stored request, then the run goes on.

``POST /api/chat`` with the AI SDK's ``approval-responded`` parts and ``POST
/api/sessions/{id}/approve`` (JSON) both end here: the answers are matched to the
session's waiting request (:mod:`._approvals`), the decisions are taken once by
:meth:`AgentClient.approve_stream <zett_agent.AgentClient.approve_stream>` before
the response starts (a decision that lost is a 409), and the run that goes on
streams into the same assistant message.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing

from starlette.requests import Request
from starlette.responses import Response

from zett_agent._events import AgentEvent
from zett_agent.errors import ConfigError, ResumeError
from zett_agent.tools._approvals import ApprovalConflictError, Decision

from ._approvals import answered, decisions_for, decisions_from_json
from ._backpressure import UIStreamResponse, chunks
from ._context import State, claim, is_json, read_json, state_of
from ._history import Continuation, continuation
from ._rejoin import ResumableResponse, base_for
from ._request import (
    ApprovalResponse,
    ApproveBody,
    RequestError,
    parse,
    valid_session_id,
)

logger = logging.getLogger("zett_agent.serve")


async def answer_approvals(
    state: State, session_id: str, message_id: str | None, responses: list[ApprovalResponse]
) -> Response:
    """Match the client's approval answers to the session's waiting calls
    (:mod:`._approvals`) and go on with the decisions."""
    place = continuation(await state.client.store.rows(session_id), state.agent.continue_prompt)
    return await _go_on(state, session_id, place, decisions_for(place, message_id, responses))


async def start_decided(
    state: State,
    session_id: str,
    decisions: Mapping[str, Decision],
    request_seq: int | None,
    field: str = "decisions",
) -> tuple[AgentEvent, AsyncGenerator[AgentEvent, None]]:
    """Claim ``session_id``, store ``decisions`` and read the first event of the run
    that goes on (``(first, events)``; the caller streams the rest and releases the
    claim when it ends). Raises :class:`RequestError`: 409 for a decision that lost
    (``ApprovalConflictError``), nothing waiting any more (``ResumeError``) or a
    durable run's calls with no handoff here (``ConfigError``); 422 for a decision
    set that does not fit (``ValueError``, said under ``field``)."""
    claim(state, session_id)
    events = state.client.approve_stream(session_id, decisions, request_seq=request_seq)
    try:
        first = await anext(events)
    except BaseException as error:
        state.running.discard(session_id)
        await events.aclose()
        if isinstance(error, ApprovalConflictError | ResumeError | ConfigError):
            raise RequestError(str(error), 409) from None
        if isinstance(error, ValueError):
            raise RequestError(f"{field}: {error}", 422) from None
        raise
    return first, events


async def _go_on(
    state: State, session_id: str, place: Continuation, decisions: Mapping[str, Decision]
) -> Response:
    """Take ``decisions`` and stream the run that goes on into ``place``'s message.

    The first event is read before the response starts: that is when
    :meth:`AgentClient.approve_stream` stores the decisions, so a decision that lost
    (``ApprovalConflictError``), nothing waiting any more (``ResumeError``) or a
    decision set that does not fit (``ValueError``) is an HTTP error, not a stream."""
    base = await base_for(state, session_id, place.message_id) if state.settings.resumable else None
    first, events = await start_decided(state, session_id, decisions, place.request_seq)
    if base is not None:  # the run outlives its reader (._rejoin)
        said = answered(place, decisions)
        run = chunks(_after(first, events), place.message_id, place.tool_ids, said)
        done = lambda: state.running.discard(session_id)  # noqa: E731
        return ResumableResponse(state, session_id, place.message_id, run, done, events, base)
    return UIStreamResponse(
        chunks(_after(first, events), place.message_id, place.tool_ids, answered(place, decisions)),
        on_close=lambda: state.running.discard(session_id),
        settings=state.settings,
        stalls=state.stalls,
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


async def approve(request: Request) -> Response:
    """Decide the session's calls that wait for approval and go on, streaming the
    run as ``/api/chat`` does, for clients without the AI SDK. Body:
    ``{"decisions": {"<approval id>": {"approved": true} | {"approved": false,
    "reason": "..."}}, "request_seq"?: int}``, one per waiting call (the
    ``approvalId`` of its ``tool-approval-request``; the call's own id only beside
    ``request_seq``: :func:`~._approvals.decisions_from_json`), parsed strictly
    (:class:`~._request.ApproveBody`: ``"approved": "false"`` is a 422, never a
    yes). 409 when nothing waits, when
    the calls were decided already (another process, tab or person decided first:
    :class:`~zett_agent.approvals.ApprovalConflictError`, nothing ran), or when a
    durable run's calls cannot be handed to its workers from here; 422 for
    decisions that do not answer exactly the waiting calls."""
    state = state_of(request)
    session_id = valid_session_id(request.path_params["id"])
    if not is_json(request):
        raise RequestError("send the body as application/json", 415)
    data = await read_json(request, state.settings.max_body_bytes)
    body = parse(ApproveBody, data, 'send {"decisions": {"<approval id>": {"approved": true}}}')
    place = continuation(await state.client.store.rows(session_id), state.agent.continue_prompt)
    return await _go_on(state, session_id, place, decisions_from_json(place, body))
