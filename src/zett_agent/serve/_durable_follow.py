"""A resume of a durable run that another process runs (a worker, another ``zett
serve``): ``GET /api/chat/{id}/stream`` on a server that does not hold the
session's run in memory follows the run's events in DBOS's system database
(:mod:`zett_agent.durable._event_stream`), when the app's ``handoff`` is a
:class:`~zett_agent.durable.DurableRuns` (any object with its ``running_in`` and
``follow``). The events go through the same encoder as a live run
(:func:`._backpressure.chunks`), so the message is the one a page streaming the
run from its start gets: ``start`` (the stored id of the message after the run's
prompt row, key ``<run id>:0``), every step, then the live ones, to the run's end.
Only a prompt's run is followed (a continuation after a decision is not: 204).
A reader that leaves ends only its reading; the run is the worker's.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Protocol, runtime_checkable

from starlette.responses import Response

from zett_agent._events import AgentEvent

from ._backpressure import UIStreamResponse, chunks
from ._context import State
from ._history import assistant_message_id

__all__ = ["DurableFollow", "follow_durable"]


@runtime_checkable
class DurableFollow(Protocol):
    """What following a durable run needs of the app's handoff."""

    async def running_in(self, session_id: str) -> str | None: ...

    def follow(self, run_id: str) -> AsyncIterator[AgentEvent]: ...


async def follow_durable(state: State, session_id: str) -> Response | None:
    """The stream of the durable run going on in ``session_id``, or None (nothing
    runs there, or the handoff cannot follow runs)."""
    runs = state.client.handoff
    if not isinstance(runs, DurableFollow):
        return None
    run_id = await runs.running_in(session_id)
    if run_id is None:
        return None
    events = runs.follow(run_id)
    try:
        first = await anext(aiter(events))
    except StopAsyncIteration:
        return None  # it ended (or wrote nothing) meanwhile: the session has it
    rows = await state.client.store.rows(session_id)
    prompt = next((row for row in rows if row.key == f"{run_id}:0"), None)
    if prompt is None:  # not a prompt's run as we know it
        await _aclose(events)
        return None

    async def replayed() -> AsyncGenerator[AgentEvent, None]:
        try:
            yield first
            async for event in events:
                yield event
        finally:
            await _aclose(events)

    message_id = assistant_message_id(prompt.seq)
    return UIStreamResponse(
        chunks(replayed(), message_id),
        on_close=lambda: None,  # the run is not this server's
        settings=state.settings,
        stalls=state.stalls,
    )


async def _aclose(events: AsyncIterator[AgentEvent]) -> None:
    close = getattr(events, "aclose", None)
    if close is not None:
        await close()
