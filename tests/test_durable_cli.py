"""The command line of durable runs, on both engines (DBOS on a SQLite file beside
the sessions; Temporal on a dev server, tests/durable_engines.py): ``zett worker``
makes a plain agent durable, ``zett submit --wait`` starts a run and prints its
answer, ``zett runs`` lists it, shows its status and result, cancels it and decides
its approvals, with the same exit statuses on both; what Temporal has no use for
(``recover``, ``resume``) says so in one line, exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from durable_engines import Engine, TemporalEngine, TemporalServer, engine, temporal_server
from test_durable_crash import chat
from zett_agent.testing import ReplayServer

__all__ = ["engine", "temporal_server"]  # fixtures

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"


def engine_env(engine: Engine) -> dict[str, str]:
    """What selects ``engine`` for every zett command (the variables, not options)."""
    if isinstance(engine, TemporalEngine):
        return {
            "ZETT_ENGINE": "temporal",
            "ZETT_TEMPORAL_ADDRESS": engine.server.address,
            "ZETT_TEMPORAL_NAMESPACE": engine.namespace,
        }
    return {"ZETT_ENGINE": "dbos"}


def zett(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**env, "COLUMNS": "200", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS,
        stdin=subprocess.DEVNULL,
    )


class Worker:
    """``zett worker`` in a child process, stopped with SIGTERM at the end."""

    def __init__(self, factory: str, env: dict[str, str], executor: str = "solo") -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "zett_agent.cli", "worker", "--agent", factory,
             "--executor-id", executor],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=TESTS,
        )  # fmt: skip
        assert self.process.stdout is not None
        self.ready = self.process.stdout.readline()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def base_env(engine: Engine, tmp_path: Path, model_url: str) -> dict[str, str]:
    return {
        **os.environ,
        **engine_env(engine),
        "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}",
        "ZETT_TEST_MODEL_URL": model_url,
        "ZETT_TEST_EFFECTS": str(tmp_path / "effects.log"),
        "ZETT_TEST_EXECUTOR": "solo",
        "ZETT_TEST_TOOL_SECONDS": "0",
        "ZETT_SESSIONS": str(tmp_path / "sessions.sqlite3"),
        "ZETT_TEST_SESSIONS": str(tmp_path / "sessions.sqlite3"),
    }


@pytest.fixture
def worker_of(engine: Engine) -> Iterator[list[Worker]]:
    """The workers a test started; each must stop with exit status 0."""
    started: list[Worker] = []
    yield started
    for worker in started:
        assert worker.stop() == 0


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_worker_submit_and_runs_on_one_sqlite_file(
    engine: Engine, tmp_path: Path, worker_of: list[Worker]
) -> None:
    replies = [
        chat("Noting.", (("c1", "slow_note", '{"text": "x"}'),), "tool_calls"),
        chat("Noted x.", finish="stop"),
    ]
    with ReplayServer(replies) as server:
        env = base_env(engine, tmp_path, server.url)
        worker = Worker("durable_factory:make_plain", env)
        worker_of.append(worker)
        assert "worker solo ready (agents: noter)" in worker.ready
        done = zett(
            "submit", "--agent", "noter", "--new-session", "s", "--run-id", "r1", "--wait",
            "note x", env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["r1", "Noted", "x."]
        waiting = "ENQUEUED" if engine.name == "dbos" else "PENDING"  # each engine's word
        assert f"waits in the queue ({waiting}) for a worker" in " ".join(done.stderr.split())
        again = zett(
            "submit", "--agent", "noter", "--session", "s", "--run-id", "r1", "note x", env=env
        )
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip() == "r1"  # idempotent: nothing new runs
        status = json.loads(zett("runs", "status", "r1", env=env).stdout)
        assert (status["status"], status["agent"], status["session_id"]) == (
            "SUCCESS",
            "noter",
            "s",
        )
        listed = zett("runs", "list", env=env).stdout.splitlines()
        assert [json.loads(line)["run_id"] for line in listed] == ["r1"]
        ended = zett("runs", "list", "--status", "SUCCESS", env=env).stdout.splitlines()
        assert [json.loads(line)["status"] for line in ended] == ["SUCCESS"]
        assert zett("runs", "list", "--status", "PENDING", env=env).stdout == ""
        result = zett("runs", "result", "r1", env=env)
        assert (result.returncode, result.stdout.strip()) == (0, "Noted x.")
        for command in ("status", "result", "cancel", "resume"):
            missing = zett("runs", command, "nope", env=env)
            assert missing.returncode == 1, (command, missing.stderr)
            assert missing.stderr.strip() == "✖ no run 'nope' (zett runs list shows the runs)"
        # a mistyped session is refused, and so is a new session under a taken id
        typo = zett("submit", "--agent", "noter", "--session", "sx", "note y", env=env)
        assert typo.returncode == 1 and "no session 'sx'" in typo.stderr
        taken = zett("submit", "--agent", "noter", "--new-session", "s", "note y", env=env)
        assert taken.returncode == 1 and "exists already" in taken.stderr
        assert server.remaining == 0 and len(server.requests) == 2
        none = zett("runs", "recover", "w9", env=env)
        mine = zett("runs", "list", "--executor", "solo", env=env)
        resumed = zett("runs", "resume", "r1", env=env)
        if engine.name == "dbos":
            assert status["executor_id"] == "solo"
            assert [json.loads(line)["run_id"] for line in mine.stdout.splitlines()] == ["r1"]
            assert zett("runs", "list", "--executor", "w9", env=env).stdout == ""
            # a recover that finds nothing says so (it was silent, exit 0)
            assert none.returncode == 0 and none.stdout == ""
            assert "requeued 0 runs: executor 'w9' has no unfinished run" in none.stderr
            assert "executor_id" in none.stderr  # and how to see which worker holds a run
        else:  # the worker's --executor-id is its Temporal identity; no recover, no
            # resume, no list by worker
            assert status["executor_id"] == "solo"
            for said in (none, mine, resumed):
                assert said.returncode == 2, said.stderr
                assert said.stderr.count("\n") == 1 and "on Temporal" in said.stderr
            assert "recover has no meaning on Temporal" in none.stderr
            assert "resume has no meaning on Temporal" in resumed.stderr
    if engine.name == "dbos":
        assert (tmp_path / "sessions.dbos.sqlite3").exists()  # DBOS's file beside the sessions
    else:
        assert not (tmp_path / "sessions.dbos.sqlite3").exists()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_worker_run_that_ends_on_a_guardrail_exits_as_a_refusal(
    engine: Engine, tmp_path: Path, worker_of: list[Worker]
) -> None:
    """``zett worker --agent`` with an agent that has an input guardrail: the run
    ends on the tripwire, and ``zett submit --wait`` / ``zett runs result`` exit 3
    (a refusal), the tool of the tripped answer never ran."""
    replies = [chat("Noting.", (("c1", "slow_note", '{"text": "x"}'),), "tool_calls")]
    with ReplayServer(replies) as server:
        env = base_env(engine, tmp_path, server.url)
        worker = Worker("durable_factory:make_guarded", env)
        worker_of.append(worker)
        assert "worker solo ready (agents: guarded)" in worker.ready
        done = zett(
            "submit", "--agent", "guarded", "--new-session", "s", "--run-id", "g1",
            "--wait", "note x", env=env,
        )  # fmt: skip
        assert done.returncode == 3, done.stderr
        assert "guardrail" in done.stderr and "no notes today" in done.stderr
        result = zett("runs", "result", "g1", env=env)
        assert result.returncode == 3
        assert len(server.requests) == 1
    assert not (tmp_path / "effects.log").exists()  # the tool never ran


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_runs_approve_hands_the_decision_to_a_worker_once(
    engine: Engine, tmp_path: Path, worker_of: list[Worker]
) -> None:
    """A run ends waiting for approval; ``zett runs approve --wait`` decides it and
    prints the continuation's id and answer; a second approve exits 12 (decided
    already) and runs nothing; the tool ran once, on the worker."""
    replies = [
        chat("Billing.", (("c1", "send_invoice", '{"customer": "ACME"}'),), "tool_calls"),
        chat("Billed ACME.", finish="stop"),
    ]
    with ReplayServer(replies) as server:
        env = base_env(engine, tmp_path, server.url)
        (tmp_path / "effects.log").write_text("")  # the tool does not block (it exists)
        worker = Worker("durable_approval_factory:make", env)
        worker_of.append(worker)
        asked = zett(
            "submit", "--agent", "biller", "--new-session", "s", "--run-id", "b1", "--wait",
            "bill ACME", env=env,
        )  # fmt: skip
        assert asked.returncode == 0, asked.stderr
        assert "Billing." in asked.stdout
        nothing = zett("runs", "approve", "nope", env=env)
        assert nothing.returncode == 1 and "no durable run 'nope'" in nothing.stderr
        decided = zett("runs", "approve", "b1", "--wait", env=env)
        assert decided.returncode == 0, decided.stderr
        assert decided.stdout.split() == ["b1.decided-1", "Billed", "ACME."]
        again = zett("runs", "approve", "b1", env=env)
        assert again.returncode == 12, again.stderr  # approval_conflict
        assert "decided already" in again.stderr
        status = json.loads(zett("runs", "status", "b1.decided-1", env=env).stdout)
        assert (status["status"], status["agent"], status["session_id"]) == (
            "SUCCESS",
            "biller",
            "s",
        )
        assert (tmp_path / "effects.log").read_text().split() == ["solo:start", "solo:done"]
        assert server.remaining == 0


def run_in_its_slow_tool(
    engine: Engine, tmp_path: Path, model_url: str, worker_of: list[Worker], run_id: str
) -> dict[str, str]:
    """A worker, and run ``run_id`` submitted to it, once its tool (``slow_note``,
    6 s) has started; the environment of the commands."""
    env = {**base_env(engine, tmp_path, model_url), "ZETT_TEST_TOOL_SECONDS": "6"}
    worker_of.append(Worker("durable_factory:make_plain", env))
    started = zett("submit", "--agent", "noter", "--new-session", "s", "--run-id", run_id,
                   "note x", env=env)  # fmt: skip
    assert started.returncode == 0, started.stderr
    effects = tmp_path / "effects.log"
    deadline = time.monotonic() + 60
    while not effects.exists():
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.05)
    return env


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_cancelled_run_is_said_cancelled(
    engine: Engine, tmp_path: Path, worker_of: list[Worker]
) -> None:
    """``zett runs cancel`` of a run whose tool is slow: its status becomes
    CANCELLED on both engines and ``zett runs result`` exits 1 in one line."""
    replies = [
        chat("Noting.", (("c1", "slow_note", '{"text": "x"}'),), "tool_calls"),
        chat("Noted x.", finish="stop"),
    ]
    with ReplayServer(replies) as server:
        env = run_in_its_slow_tool(engine, tmp_path, server.url, worker_of, "c1")
        cancelled = zett("runs", "cancel", "c1", env=env)
        assert (cancelled.returncode, cancelled.stdout.strip()) == (0, "cancelled c1")
        deadline = time.monotonic() + 60
        while (status := json.loads(zett("runs", "status", "c1", env=env).stdout))[
            "status"
        ] != "CANCELLED":
            assert status["status"] == "PENDING", status
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        result = zett("runs", "result", "c1", env=env)
        assert result.returncode == 1, result.stderr
        assert result.stderr.count("\n") == 1 and "cancelled" in result.stderr
        assert len(server.requests) == 1  # the run went no further than its tool


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_terminated_temporal_run_is_said_ended_with_no_answer(
    engine: Engine, tmp_path: Path, worker_of: list[Worker]
) -> None:
    """A run an operator terminates in Temporal (``temporal workflow terminate``)
    has no final message: ``zett runs result`` says so in one line, exit 1 (it was
    a traceback)."""
    if engine.name != "temporal":
        pytest.skip("terminating a workflow is Temporal's (DBOS's runs are cancelled)")
    import asyncio

    from temporalio.client import Client

    replies = [chat("Noting.", (("c1", "slow_note", '{"text": "x"}'),), "tool_calls")]
    with ReplayServer(replies) as server:
        env = run_in_its_slow_tool(engine, tmp_path, server.url, worker_of, "t1")

        async def terminate() -> None:
            client = await Client.connect(env["ZETT_TEMPORAL_ADDRESS"], namespace=env[
                "ZETT_TEMPORAL_NAMESPACE"])  # fmt: skip
            await client.get_workflow_handle("t1").terminate(reason="an operator")

        asyncio.run(terminate())
        result = zett("runs", "result", "t1", env=env)
        assert result.returncode == 1, result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert "ended with no answer" in result.stderr and "an operator" in result.stderr
        status = json.loads(zett("runs", "status", "t1", env=env).stdout)
        assert status["status"] == "ERROR", status


UNREACHABLE = [
    ("runs", "list"),
    ("runs", "status", "r1"),
    ("runs", "result", "r1"),
    ("runs", "cancel", "r1"),
    ("runs", "approve", "r1"),
    ("submit", "--agent", "demo", "--new-session", "s1", "hi"),
]


@pytest.mark.parametrize("args", UNREACHABLE, ids=lambda a: " ".join(a[:2]))
def test_an_unreachable_temporal_is_one_line_and_exit_1(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    pytest.importorskip("temporalio", reason="the Temporal engine needs the 'temporal' extra")
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    env = {**os.environ, "PYTHONPATH": str(SRC), "ZETT_SESSIONS": str(tmp_path / "s.sqlite3")}
    done = zett(*args, "--engine", "temporal", "--temporal-address", address, env=env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert done.stderr.startswith(f"✖ cannot reach Temporal at {address}")
    assert list(tmp_path.iterdir()) == []


def test_a_worker_of_an_unreachable_temporal_is_one_line_and_exit_1(tmp_path: Path) -> None:
    pytest.importorskip("temporalio", reason="the Temporal engine needs the 'temporal' extra")
    env = {
        **os.environ,
        "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}",
        "ZETT_TEST_MODEL_URL": "http://127.0.0.1:9/v1",
        "ZETT_SESSIONS": str(tmp_path / "s.sqlite3"),
        "ZETT_ENGINE": "temporal",
        "ZETT_TEMPORAL_ADDRESS": "127.0.0.1:9",
    }
    done = zett("worker", "--agent", "durable_factory:make_plain", env=env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("✖ cannot reach Temporal at 127.0.0.1:9")
    refused = zett("worker", "--agent", "durable_factory:make_plain", "--recover", "w1", env=env)
    assert refused.returncode == 2 and "--recover has no meaning on Temporal" in refused.stderr


def test_a_namespace_that_does_not_exist_is_one_line_and_exit_1(
    temporal_server: TemporalServer, tmp_path: Path
) -> None:
    address = temporal_server.address
    env = {**os.environ, "PYTHONPATH": str(SRC), "ZETT_SESSIONS": str(tmp_path / "s.sqlite3")}
    done = zett(
        "runs", "list", "--engine", "temporal", "--temporal-address", address,
        "--namespace", "no-such-namespace", env=env,
    )  # fmt: skip
    said = (
        f"✖ no namespace 'no-such-namespace' on Temporal at {address} "
        "(--namespace N or ZETT_TEMPORAL_NAMESPACE)"
    )
    assert (done.returncode, done.stderr.strip()) == (1, said)
    # a worker says so too, before it says it is ready (it was ready, polling nothing)
    worker_env = {
        **env,
        "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}",
        "ZETT_TEST_MODEL_URL": "http://127.0.0.1:9/v1",
        "ZETT_ENGINE": "temporal",
        "ZETT_TEMPORAL_ADDRESS": address,
        "ZETT_TEMPORAL_NAMESPACE": "no-such-namespace",
    }
    worker = zett("worker", "--agent", "durable_factory:make_plain", env=worker_env)
    assert (worker.returncode, worker.stderr.strip(), worker.stdout) == (1, said, "")


def test_the_app_run_inside_a_process_returns_after_using_temporal(tmp_path: Path) -> None:
    """Only the ``zett`` entry (``zett_agent.cli:main``) leaves without finalizing
    once temporalio was used (its native threads can abort a finalizing
    interpreter); ``app`` run inside a host or a test (CliRunner) returns, so the
    process goes on (it killed the test workers that ran it, when ``app`` did)."""
    pytest.importorskip("temporalio", reason="the Temporal engine needs the 'temporal' extra")
    import socket

    from typer.testing import CliRunner

    from zett_agent.cli import app

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    args = ["runs", "status", "r1", "--engine", "temporal", "--temporal-address", address,
            "--sessions", str(tmp_path / "s.sqlite3")]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert "temporalio.bridge.temporal_sdk_bridge" in sys.modules  # temporalio was used
    assert result.exit_code == 1, result.output
