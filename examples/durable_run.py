"""A run that survives kill -9, on one machine, with no server and no API key.

    python examples/durable_run.py          # kill -9 it while it counts...
    python examples/durable_run.py          # ...and start it again: it carries on

The model is scripted (offline): it asks for the tool ``count_slowly`` once, then
answers. Sessions go to ``durable-demo/sessions.sqlite3`` and DBOS's checkpoints
to ``durable-demo/sessions.dbos.sqlite3`` beside it. Delete the folder to start over.

``make`` is also a worker factory: ``zett worker --agent examples.durable_run:make``.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from zett_agent import Agent, AgentRunConfig, ModelRequest, ToolCall, ToolResultMessage
from zett_agent.durable import (
    DurableAgent,
    DurableConfig,
    idempotent,
    launch,
    shutdown,
    system_database_next_to,
)
from zett_agent.testing import ScriptedModel, ScriptedTurn, reply

FOLDER = Path("durable-demo")


@idempotent
def count_slowly(to: int) -> str:
    """Count to a number, one per second (safe to run again: it is idempotent).

    Args:
        to: the number to count to.
    """
    for n in range(1, to + 1):
        print(f"  tool: {n}/{to}  (pid {os.getpid()}: kill -9 me now)", flush=True)
        time.sleep(1)
    return f"counted to {to}"


def model_turn(request: ModelRequest) -> ScriptedTurn:
    """Ask for the tool until a result is in the conversation, then answer."""
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    if not results:
        return reply("Let me count.", [ToolCall("call-1", "count_slowly", '{"to": 20}')])
    return reply(f"Done: {results[-1].content}.")


def make() -> Agent:
    """The demo agent (named ``demo``): a scripted model and ``count_slowly``."""
    return Agent(ScriptedModel(*[model_turn] * 10_000), AgentRunConfig("demo"), [count_slowly])


async def main() -> None:
    store = FOLDER / "sessions.sqlite3"
    agent = make()
    durable = DurableAgent(agent, store)
    await launch(DurableConfig(system_database_next_to(store)))
    try:
        print(f"run demo-1 in pid {os.getpid()}", flush=True)
        final = await durable.run("Count to 20, please.", session_id="demo", run_id="demo-1")
        print("final:", final.text)
        for row in await durable.store.rows("demo"):
            print(f"  row {row.seq} ({row.key}): {type(row.message).__name__}")
    finally:
        shutdown()
        await durable.aclose()


if __name__ == "__main__":
    asyncio.run(main())
