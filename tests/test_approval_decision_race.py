"""Decisions are taken once: two long-lived processes approve the same waiting call
at the same moment (released together, per session), over many sessions, in
each store. Exactly one stores its decision and runs the tool; the other gets
ApprovalConflictError and runs nothing. In memory (one process), two clients race
the same way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import anyio
import pytest

from stores import postgres_dsn
from zett_agent import (
    Agent,
    AgentClient,
    ApprovalConflictError,
    AssistantMessage,
    InMemorySessionStore,
    SessionStore,
    SQLiteSessionStore,
    ToolCall,
    UserMessage,
)
from zett_agent.approvals import ApprovalDecision, ApprovalRequest, approve, requires_approval
from zett_agent.testing import ScriptedModel, reply

pytestmark = pytest.mark.timeout(120)

SESSIONS = 60
HERE = Path(__file__).parent


async def waiting_sessions(store: SessionStore, count: int) -> list[tuple[str, str]]:
    """``count`` sessions, each with one send_invoice call waiting for approval."""
    made = []
    for n in range(count):
        session, call = f"race-{n}", ToolCall(f"call_{n}", "send_invoice", '{"customer": "ACME"}')
        await store.append(session, UserMessage("bill ACME"))
        await store.append(session, AssistantMessage("", tool_calls=(call,)))
        await store.append(session, ApprovalRequest((call,), run_id=f"run-{n}"))
        made.append((session, call.id))
    return made


async def check_once(store: SessionStore, sessions: list[tuple[str, str]]) -> None:
    """Each session holds one decision, one result, one final answer."""
    for session, call_id in sessions:
        rows = [r.message for r in await store.rows(session)]
        assert sum(isinstance(m, ApprovalDecision) for m in rows) == 1, (session, rows)
        answers = [m for m in rows if isinstance(m, AssistantMessage) and m.text == "done"]
        assert len(answers) == 1, (session, rows)
        results = [
            m for m in await store.load(session) if getattr(m, "tool_call_id", "") == call_id
        ]
        assert len(results) == 1 and results[0].content == "invoice sent to ACME"


def start_decider(spec: str, effects: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "approval_race_process.py"), spec, str(effects)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def race(spec: str, effects: Path, sessions: list[tuple[str, str]]) -> list[dict[str, str]]:
    """Both deciders on every session: each is told "go" at once (one write each,
    back to back, while both wait on their input) and answers with its outcome."""
    deciders = [start_decider(spec, effects) for _ in range(2)]
    outcomes = []
    try:
        for decider in deciders:
            assert decider.stdout is not None and decider.stdout.readline().strip() == "ready"
        for session, call_id in sessions:
            for decider in deciders:
                assert decider.stdin is not None
                decider.stdin.write(f"go {session} {call_id}\n")
            for decider in deciders:  # flushed together: the barrier is released
                assert decider.stdin is not None
                decider.stdin.flush()
            for decider in deciders:
                assert decider.stdout is not None
                outcomes.append(json.loads(decider.stdout.readline()))
    finally:
        for decider in deciders:
            if decider.stdin is not None:
                decider.stdin.close()
        for decider in deciders:
            decider.wait(timeout=30)
    return outcomes


def assert_one_winner_per_session(
    outcomes: list[dict[str, str]], effects: Path, sessions: list[tuple[str, str]]
) -> None:
    by_session: dict[str, list[str]] = {}
    for record in outcomes:
        by_session.setdefault(record["session"], []).append(record["outcome"])
    errors = [o for o in outcomes if o["outcome"] not in ("won", "conflict")]
    assert not errors, errors
    assert {s: sorted(o) for s, o in by_session.items()} == {
        s: ["conflict", "won"] for s, _ in sessions
    }
    runs = Counter(line.split()[0] for line in effects.read_text().splitlines())
    assert runs == {s: 1 for s, _ in sessions}  # zero double runs, zero lost runs


async def test_two_processes_deciding_one_call_on_sqlite_run_it_once(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    effects = tmp_path / "effects.log"
    async with SQLiteSessionStore(path) as store:
        sessions = await waiting_sessions(store, SESSIONS)
    outcomes = await anyio.to_thread.run_sync(race, str(path), effects, sessions)
    assert_one_winner_per_session(outcomes, effects, sessions)
    async with SQLiteSessionStore(path) as store:
        await check_once(store, sessions)


@pytest.mark.postgres
async def test_two_processes_deciding_one_call_on_postgres_run_it_once(tmp_path: Path) -> None:
    from zett_agent.sessions.postgres import PostgresSessionStore

    schema = f"race_{uuid.uuid4().hex[:10]}"
    effects = tmp_path / "effects.log"
    async with PostgresSessionStore(postgres_dsn(), schema=schema) as store:
        sessions = await waiting_sessions(store, SESSIONS)
        outcomes = await anyio.to_thread.run_sync(race, f"postgres:{schema}", effects, sessions)
        assert_one_winner_per_session(outcomes, effects, sessions)
        await check_once(store, sessions)


async def test_two_clients_deciding_one_call_in_memory_run_it_once() -> None:
    store = InMemorySessionStore()
    sessions = await waiting_sessions(store, SESSIONS)
    ran: list[str] = []

    def send_invoice(customer: str) -> str:
        """Send an invoice.

        Args:
            customer: who gets it.
        """
        ran.append(customer)
        return f"invoice sent to {customer}"

    clients = [
        AgentClient(
            Agent(
                ScriptedModel(*[reply("done")] * SESSIONS), tools=[requires_approval(send_invoice)]
            ),
            store,
        )
        for _ in range(2)
    ]

    async def decide(
        client: AgentClient, go: anyio.Event, session: str, call_id: str, outcomes: list[str]
    ) -> None:
        await go.wait()
        try:
            await client.approve(session, {call_id: approve()})
            outcomes.append("won")
        except ApprovalConflictError:
            outcomes.append("conflict")

    for session, call_id in sessions:
        go = anyio.Event()
        outcomes: list[str] = []
        before = len(ran)
        async with anyio.create_task_group() as group:
            for client in clients:
                group.start_soon(decide, client, go, session, call_id, outcomes)
            await anyio.sleep(0)
            go.set()
        assert sorted(outcomes) == ["conflict", "won"]
        assert len(ran) == before + 1
    await check_once(store, sessions)
