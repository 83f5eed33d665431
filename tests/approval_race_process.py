"""One of the two deciders of tests/test_approval_decision_race.py, a long-lived process.

``python approval_race_process.py STORE EFFECTS``: STORE is a SQLite file, or
``postgres:<schema>`` (the server of ZETT_TEST_POSTGRES_DSN). Prints ``ready``
once its store is open, then for each line ``go SESSION CALL_ID`` read on
stdin approves that call waiting in SESSION (the tool appends ``SESSION PID`` to the
file EFFECTS) and prints one JSON line: ``{"session", "outcome"}`` with outcome
``won``, ``conflict`` (ApprovalConflictError) or ``error: ...``. Ends at EOF.
"""

from __future__ import annotations

import json
import os
import sys

import anyio

from zett_agent import Agent, AgentClient, ApprovalConflictError, SessionStore, SQLiteSessionStore
from zett_agent.approvals import approve, requires_approval
from zett_agent.testing import ScriptedModel, reply

EFFECTS = sys.argv[2]


def send_invoice(customer: str) -> str:
    """Send an invoice (not idempotent: every run is one more invoice).

    Args:
        customer: who gets it.
    """
    session = os.environ["ZETT_RACE_SESSION"]
    fd = os.open(EFFECTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{session} {os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return f"invoice sent to {customer}"


def open_store(spec: str) -> SessionStore:
    if spec.startswith("postgres:"):
        from zett_agent.sessions.postgres import PostgresSessionStore

        dsn = os.environ["ZETT_TEST_POSTGRES_DSN"]
        return PostgresSessionStore(dsn, schema=spec.removeprefix("postgres:"))
    return SQLiteSessionStore(spec)


async def main(spec: str) -> None:
    model = ScriptedModel(*[reply("done") for _ in range(1000)])
    agent = Agent(model, tools=[requires_approval(send_invoice)])
    store = open_store(spec)
    async with AgentClient(agent, store) as client:
        await store.list_sessions()  # connected before the first race
        print("ready", flush=True)
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not line:
                break
            _, session, call_id = line.split()
            os.environ["ZETT_RACE_SESSION"] = session
            try:
                await client.approve(session, {call_id: approve()})
                outcome = "won"
            except ApprovalConflictError:
                outcome = "conflict"
            except Exception as error:  # reported to the test, which fails on it
                outcome = f"error: {type(error).__name__}: {error}"
            print(json.dumps({"session": session, "outcome": outcome}), flush=True)
    await store.aclose()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
