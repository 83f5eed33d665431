"""Durable runs: what they cost and how fast they carry on (extra ``durable``).

    python bench/durable.py [--runs 20] [--queued 40] [--pg DSN]

1. Overhead: the same 3-step tool run (3 model calls over a ReplayServer, 2 tool
   calls) run plainly (``AgentClient`` on the store) and as a durable run
   (``DurableAgent``: every model call, tool call and marker a checkpoint), on
   SQLite (sessions file + DBOS file beside it) and on PostgreSQL (sessions and
   DBOS in one database). Printed: ms per run and the ratio durable / plain.
2. Throughput on PostgreSQL: ``zett worker`` processes (1, 2, 4) take ``--queued``
   submitted runs (3-step, offline scripted model, instant tools): runs per second.
3. Worker death to continuation on PostgreSQL: a worker is killed while its tool
   runs; the time until the tool starts again (a) on a live worker after
   ``recover_executor``, (b) on the same worker restarted under its executor id.

PostgreSQL parts need ``--pg`` or ZETT_TEST_POSTGRES_DSN (``.ci/postgres start DIR``
makes a throwaway cluster). Ratios are measured in the same run; the machine's core
count is printed with them (workers compete for those cores with PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(SRC))

from zett_agent import (  # noqa: E402
    Agent,
    AgentClient,
    AgentRunConfig,
    Model,
    ModelRequest,
    SessionStore,
    SQLiteSessionStore,
    ToolCall,
    ToolResultMessage,
)
from zett_agent.testing import ReplayServer, Reply, ScriptedModel, ScriptedTurn, reply  # noqa: E402  # noqa: E402

# ---------------------------------------------------------------- the run


def lookup(city: str) -> str:
    """The weather of a city.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


def chat(text: str, call: tuple[str, str, str] | None = None) -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return (None, {"id": "b", "model": "m", "choices": [choice]})

    events = [chunk({"role": "assistant", "content": text})]
    if call is not None:
        function = {"name": call[1], "arguments": call[2]}
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": call[0], "type": "function", "function": function}
                    ]
                }
            )
        )
    events += [chunk({}, "tool_calls" if call else "stop"), (None, "[DONE]")]
    return Reply.sse(events)


def three_steps() -> list[Reply]:
    return [
        chat("Looking.", ("c1", "lookup", '{"city": "Paris"}')),
        chat("And Rome.", ("c2", "lookup", '{"city": "Rome"}')),
        chat("Sunny in both."),
    ]


def scripted_turn(request: ModelRequest) -> ScriptedTurn:
    done = sum(isinstance(m, ToolResultMessage) for m in request.messages)
    if done < 2:
        city = ("Paris", "Rome")[done]
        return reply("Looking.", [ToolCall(f"c{done}", "lookup", f'{{"city": "{city}"}}')])
    return reply("Sunny in both.")


# ---------------------------------------------------------------- worker factories


def _pg_store() -> SessionStore:
    from zett_agent.sessions.postgres import PostgresSessionStore

    return PostgresSessionStore(os.environ["BENCH_SESSIONS_DSN"], schema="bench")


def make_fast() -> Any:
    """``zett worker --agent durable:make_fast``: offline 3-step runs."""
    from zett_agent.durable import DurableAgent

    agent = Agent(ScriptedModel(*[scripted_turn] * 100_000), AgentRunConfig("fast"), [lookup])
    return DurableAgent(agent, _pg_store())


def slow_lookup(city: str) -> str:
    """The weather of a city, slowly (idempotent).

    Args:
        city: the city.
    """
    with Path(os.environ["BENCH_EFFECTS"]).open("a") as log:
        log.write(f"{os.environ['BENCH_EXECUTOR']} {time.time()}\n")
    time.sleep(1.0)
    return f"sunny in {city}"


def make_slow() -> Any:
    """``zett worker --agent durable:make_slow``: one slow idempotent tool call."""
    from zett_agent.durable import DurableAgent

    def turn(request: ModelRequest) -> ScriptedTurn:
        if any(isinstance(m, ToolResultMessage) for m in request.messages):
            return reply("Sunny.")
        return reply("Looking.", [ToolCall("c1", "slow_lookup", '{"city": "Paris"}')])

    agent = Agent(ScriptedModel(*[turn] * 1000), AgentRunConfig("slow"), [slow_lookup])
    return DurableAgent(agent, _pg_store(), idempotent_tools={"slow_lookup"})


# ---------------------------------------------------------------- 1. overhead


async def _timed(runs: int, one: Callable[[int], Any]) -> float:
    for n in range(2):  # warm-up
        await one(-1 - n)
    start = time.perf_counter()
    for n in range(runs):
        await one(n)
    return (time.perf_counter() - start) / runs * 1000


async def overhead(kind: str, runs: int, folder: Path, pg: str | None) -> tuple[float, float]:
    from zett_agent.durable import (
        DurableAgent,
        DurableConfig,
        launch,
        shutdown,
        system_database_next_to,
    )

    def store() -> SessionStore:
        if kind == "sqlite":
            return SQLiteSessionStore(folder / f"{kind}-{uuid.uuid4().hex[:6]}.sqlite3")
        from zett_agent.sessions.postgres import PostgresSessionStore

        assert pg is not None
        return PostgresSessionStore(pg, schema=f"b_{uuid.uuid4().hex[:8]}")

    with ReplayServer([r for _ in range(2 * (runs + 2)) for r in three_steps()]) as server:
        model = Model("openai", "m", base_url=server.url, api_key="sk-bench", max_retries=0)
        agent = Agent(model, AgentRunConfig(f"bench-{kind}"), [lookup])
        async with AgentClient(agent, store()) as client:
            plain = await _timed(runs, lambda n: client.run("weather?", session_id=f"p{n}"))
        plain_store = store()
        durable = DurableAgent(agent, plain_store)
        if kind == "sqlite":
            system = system_database_next_to(folder / "durable.sqlite3")
        else:
            assert pg is not None
            system = pg
        await launch(DurableConfig(system, executor_id=f"bench-{kind}"))
        try:
            tag = uuid.uuid4().hex[:6]
            durable_ms = await _timed(
                runs, lambda n: durable.run("weather?", session_id=f"d{n}", run_id=f"{tag}-{n}")
            )
        finally:
            shutdown()
            await durable.aclose()
            await plain_store.aclose()
        await model.aclose()
    return plain, durable_ms


# ---------------------------------------------------------------- 2. and 3. workers


class Database:
    """A fresh PostgreSQL database on the server of ``base``."""

    def __init__(self, base: str) -> None:
        import psycopg

        self.base = base
        self.name = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {self.name}")
        self.dsn = base.rsplit("/", 1)[0] + "/" + self.name

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


def start_worker(db: str, factory: str, executor: str, effects: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": f"{SRC}{os.pathsep}{HERE}",
        "BENCH_SESSIONS_DSN": db,
        "BENCH_EFFECTS": str(effects),
        "BENCH_EXECUTOR": executor,
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zett_agent.cli",
            "worker",
            "--agent",
            f"durable:{factory}",
            "--db",
            db,
            "--executor-id",
            executor,
            "--concurrency",
            "8",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if "ready" not in line:
        raise RuntimeError(line + process.stdout.read())
    return process


def stop(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


async def throughput(base: str, workers: int, queued: int, folder: Path) -> float:
    from zett_agent.durable import DurableRuns

    database = Database(base)
    processes: list[subprocess.Popen[str]] = []
    try:
        processes = [
            start_worker(database.dsn, "make_fast", f"w{i}", folder / "fx.log")
            for i in range(workers)
        ]
        async with DurableRuns(database.dsn) as runs:
            start = time.perf_counter()
            ids = [
                await runs.submit("fast", "weather?", session_id=f"s{n}", run_id=f"r{n}")
                for n in range(queued)
            ]
            for run_id in ids:
                await runs.result(run_id, poll=0.05)
            elapsed = time.perf_counter() - start
    finally:
        stop(processes)
        database.drop()
    return queued / elapsed


def _wait_line(effects: Path, count: int, timeout: float = 60) -> tuple[str, float]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = effects.read_text().splitlines() if effects.exists() else []
        if len(lines) >= count:
            executor, at = lines[count - 1].split()
            return executor, float(at)
        time.sleep(0.01)
    raise RuntimeError(f"the tool did not start ({count})")


async def continuation(base: str, folder: Path, takeover: bool) -> float:
    """Seconds from SIGKILL of the worker running the tool to the tool's next start."""
    from zett_agent.durable import DurableRuns

    database = Database(base)
    effects = folder / f"slow-{uuid.uuid4().hex[:6]}.log"
    processes: dict[str, subprocess.Popen[str]] = {}
    try:
        names = ["wA", "wB"] if takeover else ["wA"]
        for name in names:
            processes[name] = start_worker(database.dsn, "make_slow", name, effects)
        async with DurableRuns(database.dsn) as runs:
            await runs.submit("slow", "weather?", session_id="s", run_id="r1")
            owner, _ = _wait_line(effects, 1)
            processes[owner].send_signal(signal.SIGKILL)
            killed = time.time()
            processes.pop(owner).wait()
            if takeover:
                await runs.recover_executor(owner)
            else:
                processes[owner] = start_worker(database.dsn, "make_slow", owner, effects)
            _, resumed = _wait_line(effects, 2)
            await runs.result("r1", poll=0.05)
    finally:
        stop(list(processes.values()))
        database.drop()
    return resumed - killed


# ---------------------------------------------------------------- main


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per overhead measure")
    parser.add_argument("--queued", type=int, default=40, help="runs submitted per worker count")
    parser.add_argument("--pg", default=os.environ.get("ZETT_TEST_POSTGRES_DSN"))
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()} (shared with PostgreSQL and the ReplayServer)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        kinds = ["sqlite"] + (["postgres"] if args.pg else [])
        for kind in kinds:
            plain, durable = await overhead(kind, args.runs, folder, args.pg)
            print(
                f"overhead {kind:8}  plain {plain:7.1f} ms/run  durable {durable:7.1f} ms/run"
                f"  ratio {durable / plain:5.2f}x  (3 model calls, 2 tools, {args.runs} runs)"
            )
        if not args.pg:
            print("PostgreSQL parts skipped: give --pg DSN or ZETT_TEST_POSTGRES_DSN")
            return
        rates = {}
        for workers in (1, 2, 4):
            rates[workers] = await throughput(args.pg, workers, args.queued, folder)
            print(
                f"throughput {workers} worker(s)  {rates[workers]:6.1f} runs/s"
                f"  ({rates[workers] / rates[1]:4.2f}x of 1 worker; {args.queued} runs)"
            )
        taken = await continuation(args.pg, folder, takeover=True)
        print(f"death -> continuation on a live worker (recover_executor): {taken:5.2f} s")
        restarted = await continuation(args.pg, folder, takeover=False)
        print(
            f"death -> continuation on the restarted worker (same executor id): "
            f"{restarted:5.2f} s (includes starting the process)"
        )


if __name__ == "__main__":
    asyncio.run(main())
