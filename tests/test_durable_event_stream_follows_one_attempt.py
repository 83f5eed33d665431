"""Following a durable run's events (``DurableRuns.follow``) reads one attempt: a run
recovered after its worker died writes its events again from its own start, and
a follower stops there instead of sending the answer twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from zett_agent import AgentEvent, AgentEventType
from zett_agent.durable._event_stream import EVENTS_STREAM, follow_events


def event(kind: AgentEventType, text: str | None = None) -> AgentEvent:
    return AgentEvent(kind, run_id="r1", text=text)


class Written:
    """What a DBOS client reads back: the values written to the stream."""

    def __init__(self, values: list[list[AgentEvent]]) -> None:
        self.values = values
        self.asked: list[tuple[str, str]] = []

    async def read_stream_async(self, run_id: str, key: str, **_: Any) -> AsyncIterator[Any]:
        self.asked.append((run_id, key))
        for value in self.values:
            yield value


async def test_a_follower_stops_where_a_recovered_attempt_starts_again() -> None:
    first = [
        [event(AgentEventType.RUN_STARTED)],
        [event(AgentEventType.TEXT_DELTA, "Hel"), event(AgentEventType.TEXT_DELTA, "lo")],
    ]
    again = [[event(AgentEventType.RUN_STARTED)], [event(AgentEventType.RUN_COMPLETED)]]
    client = Written(first + again)
    seen = [e async for e in follow_events(client, "r1")]  # type: ignore[arg-type]
    assert [(e.type, e.text) for e in seen] == [
        (AgentEventType.RUN_STARTED, None),
        (AgentEventType.TEXT_DELTA, "Hel"),
        (AgentEventType.TEXT_DELTA, "lo"),
    ]
    assert client.asked == [("r1", EVENTS_STREAM)]
