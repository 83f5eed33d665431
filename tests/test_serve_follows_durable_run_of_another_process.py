"""A page served by a ``zett serve`` that does not run the session's durable run
resumes the same answer (slow set: a ``zett worker`` subprocess).

The worker runs the run on a SQLite session file; this process serves the same
sessions (``create_app(..., handoff=DurableRuns(...))``, resumable streams) on a
real uvicorn. ``GET /api/chat/{id}/stream`` while the run's tool is still working
gets the message from its ``start`` and follows it live to its end, chunk for
chunk what a page streaming the same answer from an ordinary run gets; once the
run is over it answers 204.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")
pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import chat_body, read_chunks, running_server
from test_durable_crash import chat
from test_serve_cli import serving
from zett_agent import Agent, AgentRunConfig, Model
from zett_agent.durable import DurableRuns, system_database_next_to
from zett_agent.serve import ServeSettings, create_app
from zett_agent.sessions import InMemorySessionStore, SQLiteSessionStore
from zett_agent.testing import ReplayServer, Reply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"


def replies() -> list[Reply]:
    return [
        chat("Noting that.", (("c1", "slow_note", '{"text": "x"}'),), "tool_calls"),
        chat("Noted x, as asked.", finish="stop"),
    ]


def noter(url: str) -> Agent:
    from durable_factory import slow_note

    model = Model("openai", "m", base_url=url, api_key="sk-test")
    return Agent(model, AgentRunConfig("noter"), tools=[slow_note])


def uninterrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The chunks of the same answer streamed by an ordinary run of ``POST /api/chat``."""
    monkeypatch.setenv("ZETT_TEST_EFFECTS", str(tmp_path / "reference.log"))
    monkeypatch.setenv("ZETT_TEST_EXECUTOR", "here")
    monkeypatch.setenv("ZETT_TEST_TOOL_SECONDS", "0")
    with ReplayServer(replies()) as model:
        app = create_app(noter(model.url), InMemorySessionStore(), owns=True)
        with running_server(app) as url:
            response = httpx.post(f"{url}/api/chat", json=chat_body("s", "note x"), timeout=30)
            assert response.status_code == 200
            return read_chunks(response.text)


@contextlib.contextmanager
def served(how: str, sessions: Path, database: str, model_url: str) -> Iterator[str]:
    """The sessions served with resumable streams and the workers' durable runs:
    ``create_app(..., handoff=DurableRuns(...))`` in this process, or a ``zett serve
    --durable --resumable`` process (a second process beside the worker's)."""
    if how == "create_app":
        store = SQLiteSessionStore(sessions)
        runs = DurableRuns(database, sessions=store)
        app = create_app(noter(model_url), store, ServeSettings(resumable=True), handoff=runs)
        try:
            with running_server(app) as url:
                yield url
        finally:
            asyncio.run(runs.aclose())
            asyncio.run(store.aclose())
        return
    command = ["--durable", "--resumable", "--db", str(sessions), "--model", "openai:m"]
    with serving(*command, env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": model_url}) as url:
        yield url


@pytest.mark.parametrize("how", ["create_app", "zett serve"])
def test_a_resume_on_another_process_follows_the_durable_run_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    expected = uninterrupted(tmp_path, monkeypatch)
    sessions = tmp_path / "sessions.sqlite3"
    effects = tmp_path / "effects.log"
    with ReplayServer(replies()) as model:
        env = {
            **os.environ,
            "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}",
            "ZETT_TEST_MODEL_URL": model.url,
            "ZETT_TEST_EFFECTS": str(effects),
            "ZETT_TEST_EXECUTOR": "solo",
            "ZETT_TEST_TOOL_SECONDS": "3",
            "ZETT_SESSIONS": str(sessions),
        }
        worker = subprocess.Popen(
            [sys.executable, "-m", "zett_agent.cli", "worker", "--agent",
             "durable_factory:make_plain", "--executor-id", "solo"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=TESTS,
        )  # fmt: skip
        try:
            assert worker.stdout is not None
            assert "worker solo ready (agents: noter)" in worker.stdout.readline()
            database = system_database_next_to(sessions)

            async def submit() -> str:
                async with DurableRuns(database) as runs:
                    return await runs.submit("noter", "note x", session_id="s", run_id="r1")

            assert asyncio.run(submit()) == "r1"
            for _ in range(600):  # until the tool works: the answer is half done
                if effects.exists() and ":start" in effects.read_text():
                    break
                time.sleep(0.05)
            assert ":done" not in effects.read_text()
            with served(how, sessions, database, model.url) as url:
                response = httpx.get(f"{url}/api/chat/s/stream", timeout=60)
                assert response.status_code == 200
                resumed = read_chunks(response.text)
                assert ":done" in effects.read_text()  # it was followed live to the end
                assert resumed == expected
                assert httpx.get(f"{url}/api/chat/s/stream", timeout=30).status_code == 204
            assert len(model.requests) == 2  # this server ran nothing
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
