"""``POST /api/ag-ui``: an AG-UI ``RunAgentInput`` in (:mod:`._ag_ui_request`), the
run's AG-UI events out (:class:`~._ag_ui.AGUIEventStream`), through the bounded,
disconnect-aware stream of :mod:`._backpressure`; approvals answered with
``resume`` go through :meth:`AgentClient.approve_stream
<zett_agent.AgentClient.approve_stream>` (the table and the rules are in
:mod:`._ag_ui`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from zett_agent._events import AgentEvent
from zett_agent._messages import UserMessage
from zett_agent.tools._approvals import Decision

from ._ag_ui import AGUIEventStream, encode_event
from ._ag_ui_request import RunInput, parse_run_input
from ._approval_flow import start_decided
from ._backpressure import UIStreamResponse
from ._context import State, claim, is_json, read_json, state_of
from ._failure import failure_text
from ._history import continuation
from ._request import RequestError, valid_session_id

__all__ = ["EventStreamResponse", "ag_ui_run"]

logger = logging.getLogger("zett_agent.serve")


class EventStreamResponse(UIStreamResponse):
    """The bounded, disconnect-aware stream of :mod:`._backpressure` with plain
    server-sent-event headers (``text/event-stream``, no AI SDK header): AG-UI's,
    and A2A's streaming responses (:mod:`zett_agent.a2a`)."""

    def __init__(self, chunks: AsyncGenerator[bytes, None], **options: Any) -> None:
        super().__init__(chunks, **options)
        extra = {b"x-vercel-ai-ui-message-stream"}
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k not in extra]


async def _sse(
    encoder: AGUIEventStream,
    events: AsyncGenerator[AgentEvent, None],
    first: Sequence[AgentEvent] = (),
) -> AsyncGenerator[bytes, None]:
    yield b"".join(map(encode_event, encoder.start()))
    try:
        async with aclosing(events) as run:
            opening = encoder.feed_all(first)
            if opening:
                yield b"".join(map(encode_event, opening))
            async for event in run:
                out = encoder.feed(event)
                if out:
                    yield b"".join(map(encode_event, out))
    except Exception as error:
        logger.warning(
            "AG-UI run %s of session %s failed: %r", encoder.run_id, encoder.thread_id, error
        )
        yield b"".join(map(encode_event, encoder.fail(failure_text(error), type(error).__name__)))
    else:
        yield b"".join(map(encode_event, encoder.finish()))


async def ag_ui_run(request: Request) -> Response:
    """``POST /api/ag-ui``: an AG-UI ``RunAgentInput`` (:mod:`._ag_ui_request`),
    answered with the run's AG-UI events as server-sent events. 415 for another
    content type, 422 for a body that is not a strict ``RunAgentInput`` (the
    message names the field), 409 when the session is running, when calls wait for
    approval and a new question came, when a ``resume`` answers no waiting call or
    lost to another decider."""
    state = state_of(request)
    if not is_json(request):
        raise RequestError("send the body as application/json", 415)
    run, message = parse_run_input(await read_json(request, state.settings.max_body_bytes))
    session_id = valid_session_id(run.thread_id)
    model = f"{state.agent.model.provider}:{state.agent.model.name}"
    if message is None:
        return await _resume(state, session_id, run, model)
    if await state.client.pending_approval(session_id) is not None:
        raise RequestError(
            "tool calls wait for approval: answer their interrupts with resume first", 409
        )
    claim(state, session_id)
    try:
        await state.client.store.append(session_id, UserMessage(message.text()))
    except BaseException:
        state.running.discard(session_id)
        raise
    encoder = AGUIEventStream(session_id, run.run_id, state=run.state, model=model)
    events = state.client.stream(None, session_id=session_id)
    return EventStreamResponse(
        _sse(encoder, events),
        on_close=_release(state, session_id),
        settings=state.settings,
    )


def _release(state: State, session_id: str) -> Callable[[], None]:
    return lambda: state.running.discard(session_id)


async def _resume(state: State, session_id: str, run: RunInput, model: str) -> Response:
    """Answer the waiting calls with ``run.resume`` and stream the run that goes on."""
    place = continuation(await state.client.store.rows(session_id), state.agent.continue_prompt)
    if not place.waiting:
        raise RequestError("resume: no interrupt waits in this thread (answered already?)", 409)
    by_id = {w.approval_id: w for w in place.waiting}
    decisions: dict[str, Decision] = {}
    for n, entry in enumerate(run.resume or ()):
        waiting = by_id.get(entry.interrupt_id)
        if waiting is None:
            raise RequestError(
                f"resume.{n}.interruptId: {entry.interrupt_id!r} answers no interrupt that "
                "waits in this thread (answered already, or never asked)",
                409,
            )
        if entry.status == "cancelled":
            decisions[waiting.call.id] = Decision(False, "the interrupt was cancelled")
        elif entry.payload is None:
            raise RequestError(f"resume.{n}.payload: a resolved approval needs its answer", 422)
        else:
            decisions[waiting.call.id] = Decision(entry.payload.approved, entry.payload.reason)
    missing = [w.approval_id for w in place.waiting if w.call.id not in decisions]
    if missing:
        raise RequestError(f"resume: no answer for the interrupts {', '.join(missing)}", 422)
    first, events = await start_decided(state, session_id, decisions, place.request_seq, "resume")
    encoder = AGUIEventStream(
        session_id, run.run_id, tool_ids=place.tool_ids, state=run.state, model=model
    )
    return EventStreamResponse(
        _sse(encoder, events, [first]),
        on_close=_release(state, session_id),
        settings=state.settings,
        events=events,
    )
