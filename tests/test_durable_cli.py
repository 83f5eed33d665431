"""The command line of durable runs on one machine (slow set): ``zett worker`` on a
SQLite session file makes a plain agent durable, ``zett submit --wait`` queues a run
and prints its answer, ``zett runs`` lists it and shows its status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from test_durable_crash import chat
from zett_agent.testing import ReplayServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"


def zett(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS,
    )


def test_worker_submit_and_runs_on_one_sqlite_file(tmp_path: Path) -> None:
    replies = [
        chat("Noting.", (("c1", "slow_note", '{"text": "x"}'),), "tool_calls"),
        chat("Noted x.", finish="stop"),
    ]
    with ReplayServer(replies) as server:
        env = {
            **os.environ,
            "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}",
            "ZETT_TEST_MODEL_URL": server.url,
            "ZETT_TEST_EFFECTS": str(tmp_path / "effects.log"),
            "ZETT_TEST_EXECUTOR": "solo",
            "ZETT_TEST_TOOL_SECONDS": "0",
            "ZETT_SESSIONS": str(tmp_path / "sessions.sqlite3"),
        }
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "zett_agent.cli",
                "worker",
                "--agent",
                "durable_factory:make_plain",
                "--executor-id",
                "solo",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=TESTS,
        )
        try:
            assert worker.stdout is not None
            assert "worker solo ready (agents: noter)" in worker.stdout.readline()
            done = zett(
                "submit",
                "--agent",
                "noter",
                "--new-session",
                "s",
                "--run-id",
                "r1",
                "--wait",
                "note x",
                env=env,
            )
            assert done.returncode == 0, done.stderr
            assert done.stdout.split() == ["r1", "Noted", "x."]
            again = zett(
                "submit", "--agent", "noter", "--session", "s", "--run-id", "r1", "note x", env=env
            )
            assert again.stdout.strip() == "r1"  # idempotent: nothing new runs
            status = json.loads(zett("runs", "status", "r1", env=env).stdout)
            assert (status["status"], status["executor_id"], status["agent"]) == (
                "SUCCESS",
                "solo",
                "noter",
            )
            listed = zett("runs", "list", env=env).stdout.splitlines()
            assert [json.loads(line)["run_id"] for line in listed] == ["r1"]
            missing = zett("runs", "status", "nope", env=env)
            assert missing.returncode == 1 and "no run 'nope'" in missing.stderr
            mine = zett("runs", "list", "--executor", "solo", env=env).stdout.splitlines()
            assert [json.loads(line)["run_id"] for line in mine] == ["r1"]
            assert zett("runs", "list", "--executor", "w9", env=env).stdout == ""
            # a recover that finds nothing says so (it was silent, exit 0)
            none = zett("runs", "recover", "w9", env=env)
            assert none.returncode == 0 and none.stdout == ""
            assert "requeued 0 runs: executor 'w9' has no unfinished run" in none.stderr
            assert "executor_id" in none.stderr  # and how to see which worker holds a run
            # a mistyped session is refused, and so is a new session under a taken id
            typo = zett("submit", "--agent", "noter", "--session", "sx", "note y", env=env)
            assert typo.returncode == 1 and "no session 'sx'" in typo.stderr
            taken = zett("submit", "--agent", "noter", "--new-session", "s", "note y", env=env)
            assert taken.returncode == 1 and "exists already" in taken.stderr
            assert server.remaining == 0 and len(server.requests) == 2
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
    assert (tmp_path / "sessions.dbos.sqlite3").exists()  # DBOS's file beside the sessions


def test_a_worker_run_that_ends_on_a_guardrail_exits_as_a_refusal(tmp_path: Path) -> None:
    """``zett worker --agent`` with an agent that has an input guardrail: the run
    ends on the tripwire, and ``zett submit --wait`` / ``zett runs result`` exit 3
    (a refusal), the tool of the tripped answer never ran."""
    replies = [chat("Noting.", (("c1", "slow_note", '{"text": "x"}'),), "tool_calls")]
    with ReplayServer(replies) as server:
        env = {
            **os.environ,
            "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}",
            "ZETT_TEST_MODEL_URL": server.url,
            "ZETT_TEST_EFFECTS": str(tmp_path / "effects.log"),
            "ZETT_TEST_EXECUTOR": "solo",
            "ZETT_TEST_TOOL_SECONDS": "0",
            "ZETT_SESSIONS": str(tmp_path / "sessions.sqlite3"),
        }
        worker = subprocess.Popen(
            [
                sys.executable, "-m", "zett_agent.cli", "worker", "--agent",
                "durable_factory:make_guarded", "--executor-id", "solo",
            ],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=TESTS,
        )  # fmt: skip
        try:
            assert worker.stdout is not None
            assert "worker solo ready (agents: guarded)" in worker.stdout.readline()
            done = zett(
                "submit", "--agent", "guarded", "--new-session", "s", "--run-id", "g1",
                "--wait", "note x", env=env,
            )  # fmt: skip
            assert done.returncode == 3, done.stderr
            assert "guardrail" in done.stderr and "no notes today" in done.stderr
            result = zett("runs", "result", "g1", env=env)
            assert result.returncode == 3
            assert len(server.requests) == 1
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
    assert not (tmp_path / "effects.log").exists()  # the tool never ran
