"""Workers on PostgreSQL (``zett worker`` processes, slow set): a worker killed
mid-run has its run finished by another worker (``recover_executor``) or by
itself restarted under the same executor id; a worker's concurrency limit holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")


from stores import fresh_postgres_database
from test_durable_crash import chat
from zett_agent.durable import DurableRuns
from zett_agent.testing import ReplayServer, Reply

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(180)]

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh PostgreSQL database (sessions and DBOS's tables), dropped after."""
    with fresh_postgres_database() as dsn:
        yield dsn


@pytest.fixture
async def runs(database: str) -> AsyncIterator[DurableRuns]:
    async with DurableRuns(database) as made:
        yield made


class Workers:
    def __init__(self, database: str, model_url: str, effects: Path) -> None:
        self.database = database
        self.model_url = model_url
        self.effects = effects
        self.processes: dict[str, subprocess.Popen[str]] = {}

    def start(self, executor: str, *extra: str) -> subprocess.Popen[str]:
        env = {
            **os.environ,
            "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}",
            "ZETT_TEST_MODEL_URL": self.model_url,
            "ZETT_TEST_SESSIONS_DSN": self.database,
            "ZETT_TEST_SCHEMA": "sessions",
            "ZETT_TEST_EFFECTS": str(self.effects),
            "ZETT_TEST_EXECUTOR": executor,
        }
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "zett_agent.cli",
                "worker",
                "--agent",
                "durable_factory:make",
                "--db",
                self.database,
                "--executor-id",
                executor,
                "--concurrency",
                "1",
                *extra,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=TESTS,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        assert f"worker {executor} ready" in line, line + process.stdout.read()
        self.processes[executor] = process
        return process

    def kill(self, executor: str) -> None:
        process = self.processes.pop(executor)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                assert process.wait(timeout=30) == 0
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes.clear()

    def lines(self) -> list[str]:
        return self.effects.read_text().split() if self.effects.exists() else []

    def wait_for(self, suffix: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [line for line in self.lines() if line.endswith(suffix)]
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no {suffix!r} in {self.lines()}")


def note_run(text: str = "x") -> list[Reply]:
    return [
        chat("Noting.", (("c1", "slow_note", f'{{"text": "{text}"}}'),), "tool_calls"),
        chat(f"Noted {text}.", finish="stop"),
    ]


@pytest.fixture
def workers(database: str, tmp_path: Path) -> Iterator[tuple[Workers, ReplayServer]]:
    with ReplayServer() as server:
        made = Workers(database, server.url, tmp_path / "effects.log")
        try:
            yield made, server
        finally:
            made.stop_all()


async def test_a_killed_workers_run_finishes_on_another_worker(
    workers: tuple[Workers, ReplayServer], runs: DurableRuns
) -> None:
    pool, server = workers
    pool.start("wA")
    pool.start("wB")
    server.add(*note_run())
    assert await runs.submit("noter", "note x", session_id="s", run_id="r1") == "r1"
    assert await runs.submit("noter", "note x", session_id="s", run_id="r1") == "r1"  # no-op
    dead = pool.wait_for(":x:start").split(":")[0]
    live = "wB" if dead == "wA" else "wA"
    pool.kill(dead)
    status = await runs.status("r1")
    assert status is not None and (status.status, status.executor_id) == ("PENDING", dead)
    assert await runs.recover_executor(dead) == ["r1"]
    final = await runs.result("r1")
    assert final.text == "Noted x."
    status = await runs.status("r1")
    assert status is not None and (status.status, status.executor_id) == ("SUCCESS", live)
    assert pool.lines() == [f"{dead}:x:start", f"{live}:x:start", f"{live}:x:done"]
    assert server.remaining == 0 and len(server.requests) == 2  # no model call repeated
    listed = await runs.list_runs()
    assert [(r.run_id, r.agent, r.session_id, r.prompt) for r in listed] == [
        ("r1", "noter", "s", "note x")
    ]


async def test_a_restarted_worker_carries_its_runs_on(
    workers: tuple[Workers, ReplayServer], runs: DurableRuns
) -> None:
    pool, server = workers
    pool.start("wA")
    server.add(*note_run())
    await runs.submit("noter", "note x", session_id="s", run_id="r1")
    pool.wait_for("wA:x:start")
    pool.kill("wA")
    pool.start("wA")  # the same executor id: DBOS recovers its runs at launch
    assert (await runs.result("r1")).text == "Noted x."
    assert pool.lines() == ["wA:x:start", "wA:x:start", "wA:x:done"]


async def test_a_workers_concurrency_limit_holds(
    workers: tuple[Workers, ReplayServer], runs: DurableRuns
) -> None:
    pool, server = workers
    server.add(*note_run("a"), *note_run("b"))
    pool.start("wA")  # --concurrency 1
    await runs.submit("noter", "note a", session_id="sa", run_id="ra")
    await runs.submit("noter", "note b", session_id="sb", run_id="rb")
    assert (await runs.result("ra")).text == "Noted a."
    assert (await runs.result("rb")).text == "Noted b."
    # one run at a time: each tool call finished before the next one started
    assert pool.lines() == ["wA:a:start", "wA:a:done", "wA:b:start", "wA:b:done"]
    cancelled = await runs.submit("noter", "note c", session_id="sc", run_id="rc")
    await runs.cancel(cancelled)
    status = await runs.status("rc")
    assert status is not None and status.status == "CANCELLED"


async def test_a_worker_stopped_with_sigterm_mid_tool_carries_on_after_restart(
    workers: tuple[Workers, ReplayServer], runs: DurableRuns, database: str
) -> None:
    from zett_agent.sessions.postgres import PostgresSessionStore

    pool, server = workers
    pool.start("wA")
    server.add(*note_run())
    await runs.submit("noter", "note x", session_id="s", run_id="r1")
    pool.wait_for("wA:x:start")
    process = pool.processes.pop("wA")
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    pool.start("wA")
    assert (await runs.result("r1")).text == "Noted x."
    async with PostgresSessionStore(database, schema="sessions") as store:
        stored = await store.rows("s")
    # the messages once each, and the call's started marker (its own row) once
    assert [r.key for r in stored] == ["r1:0", "r1:1", "r1:started:c1", "r1:2", "r1:3"]
    assert stored[3].message.content == "noted x"  # type: ignore[union-attr]


async def test_a_new_worker_takes_over_a_dead_workers_runs_with_recover(
    workers: tuple[Workers, ReplayServer], runs: DurableRuns
) -> None:
    pool, server = workers
    pool.start("wA")
    server.add(*note_run())
    await runs.submit("noter", "note x", session_id="s", run_id="r1")
    pool.wait_for("wA:x:start")
    pool.kill("wA")  # wA never comes back
    pool.start("wB", "--recover", "wA")
    assert (await runs.result("r1")).text == "Noted x."
    status = await runs.status("r1")
    assert status is not None and status.executor_id == "wB"
    assert pool.lines() == ["wA:x:start", "wB:x:start", "wB:x:done"]
    assert [r.run_id for r in await runs.list_runs(executor_id="wB")] == ["r1"]
