"""A durable run's Temporal history: its size is reported (a log record at the
run's end, and ``history_size(run_id)`` for a client), and it replays with the
code of this checkout, both a run made now and the runs recorded in
``tests/durable_histories/`` by an earlier zett (a change that would make a run
in flight take other steps fails here: see docs/durable.md, "On Temporal").

The recorded histories are regenerated, deliberately (after a change to the
steps a run takes, which needs Temporal worker versioning for runs in flight),
with::

    ZETT_RECORD_HISTORIES=1 python -m pytest tests/test_durable_temporal_history.py -k recorded
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="the Temporal engine needs the 'temporal' extra")

from durable_engines import Engine, engine, launched, temporal_server
from durable_weather import weather_agent
from zett_agent.approvals import approve
from zett_agent.durable import DurableAgent

__all__ = ["engine", "launched", "temporal_server"]  # the fixtures this module uses

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.parametrize("engine", ["temporal"], indirect=True),  # histories are Temporal's
]

HISTORIES = Path(__file__).with_name("durable_histories")
RECORDED = HISTORIES / "weather_approved.json"
"""A run that reads the session, checks a guardrail, calls the model, runs a tool
(marker, call, a hook), asks again, and ends waiting for approval; then its
continuation, which runs the approved call and asks the model once more."""


async def _history_json(run_id: str) -> str:
    from zett_agent.durable._temporal import running

    history = await running().client.get_workflow_handle(run_id).fetch_history()
    return str(history.to_json())


async def test_a_runs_history_size_is_logged_at_its_end_and_read_by_run_id(
    launched: Path, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    from temporalio.service import RPCError, RPCStatusCode

    from zett_agent.durable._temporal import history_size, running

    caplog.set_level(logging.INFO, logger="zett_agent.durable")
    async with DurableAgent(weather_agent(), launched / "s.sqlite3") as durable:
        await durable.run("Weather in Paris?", session_id="s", run_id="r-size")
        size = await history_size("r-size")
        history = await running().client.get_workflow_handle("r-size").fetch_history()
        with pytest.raises(RPCError) as unknown:
            await history_size("r-unknown")
        assert unknown.value.status is RPCStatusCode.NOT_FOUND
    assert size.events == len(history.events) > 10
    assert size.bytes == sum(event.ByteSize() for event in history.events)
    assert 0 < size.largest_event < size.bytes
    (record,) = [r for r in caplog.records if getattr(r, "zett_run_id", None) == "r-size"]
    assert record.name == "zett_agent.durable" and record.levelno == logging.INFO
    # as of the task that ended the run: all but its last few events
    events: int = record.zett_history_events  # type: ignore[attr-defined]
    size_bytes: int = record.zett_history_bytes  # type: ignore[attr-defined]
    assert size.events - 5 <= events < size.events
    assert 0 < size_bytes < size.bytes
    assert f"history of {events} events, {size_bytes} bytes" in record.getMessage()


async def test_a_run_made_now_replays_with_this_code(launched: Path, engine: Engine) -> None:
    from zett_agent.durable._temporal import replay_history

    async with DurableAgent(weather_agent(), launched / "s.sqlite3") as durable:
        await durable.run("Weather in Paris?", session_id="s", run_id="r-now")
        done = await durable.approve("s", {"c2": approve()})
        assert done.text == "Booked Paris."
        for run_id in ("r-now", "r-now.decided-1"):
            await replay_history(run_id, await _history_json(run_id))


async def test_the_recorded_runs_replay_with_this_code(launched: Path, engine: Engine) -> None:
    """A run recorded by an earlier zett replays with this code: the same steps in
    the same order, no nondeterminism (a replay runs no step: nothing is asked
    of the model, no tool runs, nothing is stored)."""
    from zett_agent.durable._temporal import replay_history

    if os.environ.get("ZETT_RECORD_HISTORIES") == "1":
        async with DurableAgent(weather_agent(), launched / "rec.sqlite3") as durable:
            await durable.run("Weather in Paris?", session_id="s", run_id="rec")
            await durable.approve("s", {"c2": approve()})
            runs = ("rec", "rec.decided-1")
            recorded = {run_id: json.loads(await _history_json(run_id)) for run_id in runs}
        HISTORIES.mkdir(exist_ok=True)
        RECORDED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    histories = json.loads(RECORDED.read_text())
    assert set(histories) == {"rec", "rec.decided-1"}
    agent = weather_agent()
    async with DurableAgent(agent, launched / "replay.sqlite3") as durable:  # the runs' agent
        for run_id, history in histories.items():
            await replay_history(run_id, json.dumps(history))
        assert await durable.store.rows("s") == []  # nothing stored
    assert agent.model.requests == []  # type: ignore[attr-defined]  # nothing asked
