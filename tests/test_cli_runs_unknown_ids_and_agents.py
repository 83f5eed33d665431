"""``zett runs result|cancel|resume`` of an id that is no run say so in one line
and exit 1 (as ``runs status`` does), never a DBOS traceback; ``zett submit
--agent NAME`` of an agent no earlier run had says the run waits for a worker that
has it. The runs database is made by DBOS launched in a child process (as a worker
makes it), then read by the commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

pytestmark = pytest.mark.timeout(120)

SRC = Path(__file__).resolve().parents[1] / "src"

MAKE_DATABASE = """
import asyncio, sys
from zett_agent.durable import DurableConfig, launch, shutdown
from zett_agent.durable._runtime import system_database_for

async def main():
    await launch(DurableConfig(system_database_for(sys.argv[1]), executor_id="t"))
    shutdown()

asyncio.run(main())
"""


def zett(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("runs") / "sessions.sqlite3")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    subprocess.run([sys.executable, "-c", MAKE_DATABASE, path], env=env, check=True, timeout=90)
    return path


@pytest.mark.parametrize("command", ["result", "cancel", "resume", "status"])
def test_a_run_id_that_is_no_run_is_one_line_and_exit_1(sessions: str, command: str) -> None:
    done = zett("runs", command, "no-such-run", "--sessions", sessions)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "✖ no run 'no-such-run' (zett runs list shows the runs)"
    ]


def test_submitting_to_an_agent_no_run_had_says_it_waits(sessions: str) -> None:
    done = zett(
        "submit", "hi", "--agent", "typo", "--new-session", "s1", "--run-id", "r-typo",
        "--sessions", sessions,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "r-typo"
    said = " ".join(done.stderr.split())
    assert "no run of agent 'typo' is known here" in said
    assert "waits in the queue (ENQUEUED) for a worker that has it" in said
    again = zett(
        "submit", "hi", "--agent", "other", "--new-session", "s2", "--sessions", sessions
    )  # fmt: skip
    assert "agents of earlier runs: typo" in " ".join(again.stderr.split())
