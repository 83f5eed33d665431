"""On Temporal a run's payloads stay small: a 50-turn run whose tool returns
100 KiB each time records no payload over 64 KiB (long results stand in the
workflow as references to the session store's blobs), while the session stores
every result whole. The history's size is printed (``-s``)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="the Temporal engine needs the 'temporal' extra")

from durable_engines import Engine, engine, launched, temporal_server
from zett_agent import Agent, AgentRunConfig, ToolCall, ToolResultMessage
from zett_agent.durable import DurableAgent
from zett_agent.testing import ScriptedModel, reply

__all__ = ["engine", "launched", "temporal_server"]  # the fixtures this module uses

pytestmark = pytest.mark.timeout(300)

TURNS = 50
BIG = 100 * 1024


def fetch(n: int) -> str:
    """A large document.

    Args:
        n: which one.
    """
    return f"doc {n}:" + "x" * BIG


@pytest.mark.slow  # 50 turns, 5 MB through the session store
async def test_a_50_turn_run_of_100_kib_results_records_no_payload_over_64_kib(
    launched: Path, engine: Engine
) -> None:
    if engine.name != "temporal":
        pytest.skip("payload sizes are Temporal's limit (DBOS stores checkpoints in its database)")
    from zett_agent.durable._temporal import running

    script = [
        reply(f"turn {n}", [ToolCall(f"c{n}", "fetch", f'{{"n": {n}}}')]) for n in range(TURNS)
    ]
    model = ScriptedModel(*script, reply("Read them all."))
    agent = Agent(
        model, AgentRunConfig("big", max_turns=TURNS + 1, max_tool_result_chars=None), [fetch]
    )
    async with DurableAgent(agent, launched / "s.sqlite3") as durable:
        final = await durable.run("read", session_id="s", run_id="r-big")
        assert final.text == "Read them all."
        stored = [m for m in await durable.store.load("s") if isinstance(m, ToolResultMessage)]
        assert len(stored) == TURNS and all(len(m.content) > BIG for m in stored)
        # the model saw whole results, not references
        assert all(
            len(m.content) > BIG
            for m in model.requests[-1].messages
            if isinstance(m, ToolResultMessage)
        )
        history = await running().client.get_workflow_handle("r-big").fetch_history()
    total = sum(event.ByteSize() for event in history.events)
    largest = max(e.ByteSize() for e in history.events)
    print(
        f"\nhistory: {len(history.events)} events, {total / 1024:.0f} KiB, "
        f"largest event {largest / 1024:.1f} KiB"
    )
    assert largest < 64 * 1024
