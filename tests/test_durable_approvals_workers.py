"""Durable approvals through real worker processes (``zett worker``), on SQLite
and PostgreSQL: a run ends waiting for approval; its worker is killed while it
waits; ``zett runs approve`` (a process with no tools) decides and hands it on,
a second decision exits 12; a worker of a newer application version takes the
continuation (an upgrade strands nothing), is killed while the approved tool
runs, and, restarted, answers that call "may or may not have taken effect"
instead of sending a second invoice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")


from stores import fresh_postgres_database
from test_durable_crash import chat
from zett_agent import SessionStore, SQLiteSessionStore, ToolResultMessage
from zett_agent.approvals import ApprovalDecision
from zett_agent.durable import DurableRuns
from zett_agent.durable._runtime import system_database_for
from zett_agent.testing import ReplayServer
from zett_agent.tools import OUTCOME_UNKNOWN

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sessions(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where sessions (and DBOS's tables, beside them) live: a SQLite file, or a
    fresh PostgreSQL database dropped after."""
    if request.param == "sqlite":
        yield str(tmp_path / "sessions.sqlite3")
        return
    with fresh_postgres_database() as dsn:
        yield dsn


def open_store(sessions: str) -> SessionStore:
    if sessions.startswith("postgresql://"):
        from zett_agent.sessions.postgres import PostgresSessionStore

        return PostgresSessionStore(sessions)
    return SQLiteSessionStore(sessions)


class Worker:
    def __init__(self, sessions: str, model_url: str, effects: Path) -> None:
        self.sessions, self.model_url, self.effects = sessions, model_url, effects
        self.process: subprocess.Popen[str] | None = None

    def env(self, executor: str = "cli") -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}",
            "ZETT_TEST_MODEL_URL": self.model_url,
            "ZETT_TEST_SESSIONS": self.sessions,
            "ZETT_TEST_EFFECTS": str(self.effects),
            "ZETT_TEST_EXECUTOR": executor,
            "ZETT_SESSIONS": self.sessions,
        }

    def start(self, executor: str, version: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "zett_agent.cli", "worker", "--agent",
             "durable_approval_factory:make", "--executor-id", executor,
             "--app-version", version],
            env=self.env(executor), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, cwd=TESTS,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert f"worker {executor} ready" in line, line + self.process.stdout.read()

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None

    def zett(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", *args], env=self.env(),
            capture_output=True, text=True, timeout=120, cwd=TESTS,
        )  # fmt: skip

    def lines(self) -> list[str]:
        return self.effects.read_text().split() if self.effects.exists() else []

    def wait_for(self, line: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while line not in self.lines():
            assert time.monotonic() < deadline, f"no {line!r} in {self.lines()}"
            time.sleep(0.05)


async def test_a_durable_approval_survives_killed_workers_and_an_upgrade(
    sessions: str, tmp_path: Path
) -> None:
    with ReplayServer() as server:
        worker = Worker(sessions, server.url, tmp_path / "effects.log")
        server.add(
            chat("Billing.", (("c1", "send_invoice", '{"customer": "ACME"}'),), "tool_calls"),
            chat("Billed ACME.", finish="stop"),
        )
        store = open_store(sessions)
        worker.start("w1", "v1")  # creates the runs database
        runs = DurableRuns(system_database_for(sessions), sessions=store)
        try:
            await runs.submit("biller", "bill ACME", session_id="s", run_id="r1")
            asked = await runs.result("r1")  # the run ended at the request
            assert [c.name for c in asked.tool_calls] == ["send_invoice"]
            waiting = await runs.pending_approval("r1")
            assert waiting is not None and waiting.ids == ["c1"]
            worker.kill()  # killed while the call waits: nothing of it was running

            decided = worker.zett("runs", "approve", "r1")
            assert decided.returncode == 0, decided.stderr
            assert decided.stdout.strip() == "r1.decided-1"
            again = worker.zett("runs", "approve", "r1")
            assert again.returncode == 12, again.stderr  # approval_conflict
            assert "decided already" in again.stderr
            time.sleep(0.5)
            assert worker.lines() == []  # no tool ran in the deciding processes

            worker.start("w2", "v2")  # an upgrade: the newest version takes it
            worker.wait_for("w2:start")
            worker.kill()  # killed while the approved tool runs
            worker.start("w2", "v2")  # restarted: DBOS recovers its run
            final = await runs.result("r1.decided-1")
            assert final.text == "Billed ACME."
            assert worker.lines() == ["w2:start"]  # never sent a second time
            rows = await store.rows("s")
            decisions = [r for r in rows if isinstance(r.message, ApprovalDecision)]
            assert len(decisions) == 1
            results = [r.message for r in rows if isinstance(r.message, ToolResultMessage)]
            assert [(m.tool_call_id, m.content) for m in results] == [("c1", OUTCOME_UNKNOWN)]
            assert server.remaining == 0 and len(server.requests) == 2
            status = await runs.status("r1.decided-1")
            assert status is not None and (status.status, status.app_version) == ("SUCCESS", "v2")
        finally:
            worker.stop()
            await runs.aclose()
            await store.aclose()
