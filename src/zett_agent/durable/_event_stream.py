"""The events of a durable run, kept in DBOS's system database as the run makes them.

A run writes its :class:`~zett_agent.AgentEvent` values to the DBOS stream
:data:`EVENTS_STREAM` of its workflow (the run id), so any process that reaches the
system database (another ``zett serve``, not the worker) can follow the running
answer from its first event (offset 0) to its end: the stream is closed when the
run ends (DBOS also ends a reader when the workflow is over). Each value is a list
of events: the deltas of a model step are written together with the event that
follows them (a durable model call is one step, streamed to its end before its
deltas are yielded, :class:`~zett_agent.durable._steps.DurableModel`), so a
follower sees a step at a time, one write per step.

The writes do not take workflow step numbers (they go in as a step's writes do),
so a run's checkpoints, and its replay after a crash, are the same with or
without them. A run carried on by recovery after its worker died writes its
events again into the same stream, from its own start (without the deltas of the
steps it replays): a follower stops where that attempt starts (its second
``RUN_STARTED``), and a reload shows the stored answer (not done: following a
recovered attempt). A failed write is
logged, and that run writes no more; the run itself goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from dbos import DBOSClient

from zett_agent._events import AgentEvent, AgentEventType

__all__ = ["EVENTS_STREAM", "EventWriter", "follow_events"]

EVENTS_STREAM = "zett.events"
"""The DBOS stream key of a run's events (lists of pickled events, DBOS's default
serialization). Persisted data: never renamed."""

_DELTAS = frozenset(
    {
        AgentEventType.TEXT_DELTA,
        AgentEventType.REASONING_DELTA,
        AgentEventType.TOOL_CALL_DELTA,
        AgentEventType.PARTIAL_OUTPUT,
    }
)

logger = logging.getLogger("zett_agent.durable")


class EventWriter:
    """Writes the events of run ``run_id`` (a workflow running in this process) to
    its :data:`EVENTS_STREAM`: call :meth:`add` per event, :meth:`close` at the end."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._held: list[AgentEvent] = []
        self._broken = False

    async def add(self, event: AgentEvent) -> None:
        """Hold a delta; write what is held with any other event."""
        self._held.append(event)
        if event.type not in _DELTAS:
            held, self._held = self._held, []
            await self._write(held)

    async def close(self) -> None:
        """Write what is held, then the stream's end marker."""
        if self._held:
            held, self._held = self._held, []
            await self._write(held)
        await self._write(None)

    async def _write(self, events: list[AgentEvent] | None) -> None:
        if self._broken:
            return
        try:
            await asyncio.to_thread(_write_sync, self.run_id, events)
        except Exception as error:  # the run goes on; a follower ends at its end
            self._broken = True
            logger.warning("run %s: cannot write its events to DBOS: %r", self.run_id, error)


def _write_sync(run_id: str, events: list[AgentEvent] | None) -> None:
    """One value (or the end marker) at the stream's next offset, as a step's write
    (``function_id`` 0: no workflow step number is taken). dbos 3.4.0's system
    database API: ``DBOS.write_stream`` from the workflow itself would take a step
    number per write, and the number of writes differs on replay."""
    from dbos._dbos import _get_dbos_instance
    from dbos._serialization import WorkflowSerializationFormat

    sys_db = _get_dbos_instance()._sys_db  # see the docstring
    if events is None:
        sys_db.close_stream_from_step(run_id, 0, EVENTS_STREAM)
    else:
        sys_db.write_stream_from_step(
            run_id, 0, EVENTS_STREAM, events, serialization_type=WorkflowSerializationFormat.DEFAULT
        )


async def follow_events(client: DBOSClient, run_id: str) -> AsyncIterator[AgentEvent]:
    """The events run ``run_id`` wrote, from its first, then live until the run
    ends (its end marker, or DBOS seeing the workflow over), or until a recovered
    attempt of it starts writing (its second ``RUN_STARTED``)."""
    values = client.read_stream_async(run_id, EVENTS_STREAM, polling_interval_sec=0.05)
    started = False
    try:
        async for value in values:
            for event in value:
                if event.type is AgentEventType.RUN_STARTED:
                    if started:  # a recovered attempt writes from its start again
                        return
                    started = True
                yield event
    finally:
        await values.aclose()
