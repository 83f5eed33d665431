"""What the started marker costs per tool call (the ``tool_started`` row the gate
writes just before a tool is entered, on its own).

    python bench/started_marker.py [--calls 20] [--rounds 7] [--repeat 5]

The same run, measured in this process, with and without the marker: an answer
of ``--calls`` tool calls (an instant tool, an offline scripted model), each
result and answer appended to the store as the loop does (``on_message``). "with"
passes the session's journal (:class:`~zett_agent.sessions.SessionJournal`: one
``tool_started`` append per call), "without" passes none. Stores: in memory, and a
SQLite file with ``synchronous=FULL`` (the default: each append is on disk when it
returns) and ``NORMAL``. The two variants alternate, ``--repeat`` runs each per
round; a figure is the median over the rounds: ms per run, the ratio with /
without, and the marker's cost per tool call (the difference / calls).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from zett_agent import Agent, AgentRunConfig, InMemorySessionStore, SQLiteSessionStore, ToolCall  # noqa: E402
from zett_agent._events import final_message  # noqa: E402
from zett_agent.sessions import SessionJournal, SessionStore  # noqa: E402
from zett_agent.testing import ScriptedModel, reply  # noqa: E402


def lookup(key: str) -> str:
    """Look a key up (instant).

    Args:
        key: the key.
    """
    return f"value of {key}"


async def one_run(store: SessionStore, session: str, calls: int, marker: bool) -> float:
    tool_calls = [ToolCall(f"c{n}", "lookup", f'{{"key": "k{n}"}}') for n in range(calls)]
    model = ScriptedModel(reply("Looking.", tool_calls), reply("Done."))
    agent = Agent(model, AgentRunConfig("bench", telemetry=False), [lookup])
    rows = await store.rows(session)
    journal = SessionJournal(store, session, rows) if marker else None

    async def append(message: object) -> None:
        await store.append(session, message)  # type: ignore[arg-type]

    started = time.perf_counter()
    final = await final_message(agent.stream("go", history=[], on_message=append, journal=journal))
    elapsed = time.perf_counter() - started
    assert final.text == "Done."
    return elapsed


async def measure(make: str, calls: int, rounds: int, repeat: int) -> dict[str, float]:
    folder = tempfile.mkdtemp(prefix="zett-marker-")
    if make == "memory":
        store: SessionStore = InMemorySessionStore()
    else:
        store = SQLiteSessionStore(Path(folder) / "s.sqlite3", synchronous=make.split("-")[1])
    with_marker: list[float] = []
    without: list[float] = []
    try:
        await one_run(store, "warm", calls, True)  # connect, warm caches
        for round_number in range(rounds):
            times = {True: [], False: []}  # type: dict[bool, list[float]]
            for n in range(repeat * 2):
                marker = (n + round_number) % 2 == 0
                times[marker].append(await one_run(store, f"r{round_number}-{n}", calls, marker))
            with_marker.append(statistics.median(times[True]))
            without.append(statistics.median(times[False]))
    finally:
        await store.aclose()
    ratios = [a / b for a, b in zip(with_marker, without, strict=True)]
    per_call = [(a - b) / calls for a, b in zip(with_marker, without, strict=True)]
    return {
        "with_ms": statistics.median(with_marker) * 1000,
        "without_ms": statistics.median(without) * 1000,
        "ratio": statistics.median(ratios),
        "per_call_us": statistics.median(per_call) * 1e6,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; {args.calls} tool calls per run, {args.rounds} rounds")
    print(f"{'store':<22} {'without ms':>11} {'with ms':>9} {'ratio':>7} {'per call':>12}")
    for make in ("memory", "sqlite-NORMAL", "sqlite-FULL"):
        got = await measure(make, args.calls, args.rounds, args.repeat)
        print(
            f"{make:<22} {got['without_ms']:>11.2f} {got['with_ms']:>9.2f} "
            f"{got['ratio']:>6.2f}x {got['per_call_us']:>9.0f} µs"
        )


if __name__ == "__main__":
    asyncio.run(main())
