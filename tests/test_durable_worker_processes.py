"""Durable runs across real worker processes (tests/durable_child.py ``serve``),
on each engine where it can run (``engine``; tests/durable_engines.py; slow set):
two workers, one killed mid-run, every run finishes on the other; two processes
decide the same waiting call at the same moment, one decision is taken, the
approved tool runs once and the other decider hears of the conflict."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from durable_engines import Engine, engine, temporal_server
from test_durable_crash import chat, effects, start
from zett_agent import Agent, AgentRunConfig, Model, SQLiteSessionStore, ToolResultMessage
from zett_agent.approvals import ApprovalDecision
from zett_agent.durable import TOOL_INTERRUPTED, DurableAgent, DurableRuns, ashutdown, launch
from zett_agent.durable._runtime import system_database_next_to
from zett_agent.testing import RecordedRequest, ReplayServer, Reply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
__all__ = ["engine", "temporal_server"]  # the fixtures this module uses


def _prompt(request: RecordedRequest) -> str:
    """The run's prompt (``go <name>``): its last word names the run."""
    users = [m for m in request.json["messages"] if m["role"] == "user"]
    return str(users[0]["content"]).split()[-1]


def _calls(request: RecordedRequest) -> int:
    return sum(m["role"] == "assistant" for m in request.json["messages"])


class Workers:
    """Worker processes of one workdir (its session file), killed at the end."""

    def __init__(self, engine: Engine, workdir: Path, url: str, mode: str) -> None:
        self.engine, self.workdir, self.url, self.mode = engine, workdir, url, mode
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        process = start(self.engine, self.workdir, self.url, self.mode, {"ZETT_TEST_WORKER": name})
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip() == b"ready", line + process.stdout.read()
        self.processes[name] = process

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def kill_all(self) -> None:
        for name in list(self.processes):
            self.kill(name)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    made = tmp_path / "w"
    made.mkdir()
    return made


class Client:
    """Submits runs of agent ``crashy`` and waits for them, from the test process:
    on Temporal a DurableAgent launched with no worker, on DBOS DurableRuns."""

    def __init__(self, engine: Engine, workdir: Path) -> None:
        self.engine, self.workdir = engine, workdir
        self.store = SQLiteSessionStore(workdir / "sessions.sqlite3")
        model = Model("openai", "m", base_url="http://127.0.0.1:9", api_key="unused")
        self.durable = DurableAgent(Agent(model, AgentRunConfig("crashy")), self.store)
        self.runs: DurableRuns | None = None

    async def open(self) -> None:
        if self.engine.name == "temporal":
            await launch(replace(self.engine.config(self.workdir), worker=False))
        else:
            url = system_database_next_to(self.workdir / "sessions.sqlite3")
            self.runs = DurableRuns(url, sessions=self.store)

    async def submit(self, prompt: str, session_id: str, run_id: str) -> None:
        if self.runs is not None:
            await self.runs.submit("crashy", prompt, session_id=session_id, run_id=run_id)
        else:
            await self.durable.submit(prompt, session_id=session_id, run_id=run_id)

    async def result(self, run_id: str) -> Any:
        if self.runs is not None:
            return await self.runs.result(run_id)
        return await self.durable.result(run_id)

    async def close(self) -> None:
        if self.runs is not None:
            await self.runs.aclose()
        else:
            await ashutdown()
        await self.durable.aclose()
        await self.store.aclose()


@pytest.fixture
async def client(engine: Engine, workdir: Path) -> AsyncIterator[Client]:
    made = Client(engine, workdir)
    try:
        yield made
    finally:
        await made.close()


# ---------------------------------------------------------- two workers


def lookup_reply(request: RecordedRequest) -> Reply:
    """Per run (named by its prompt): look the weather up, then say it."""
    city = _prompt(request)
    if _calls(request) == 0:
        return chat("Looking.", (("c1", "lookup", json.dumps({"city": city})),), "tool_calls")
    return chat(f"Sunny in {city}.", finish="stop")


@pytest.fixture
def lookup_server() -> Iterator[ReplayServer]:
    with ReplayServer(route=lookup_reply) as server:
        yield server


async def test_two_workers_one_killed_mid_run_every_run_finishes_on_the_other(
    engine: Engine, workdir: Path, lookup_server: ReplayServer, client: Client
) -> None:
    if engine.name == "dbos":
        pytest.skip(
            "DBOS hands a dead executor's runs to another only through recover_executor "
            "(PostgreSQL): tests/test_durable_workers.py::"
            "test_a_killed_workers_run_finishes_on_another_worker"
        )
    runs = [f"r{n}" for n in range(4)]
    workers = Workers(engine, workdir, lookup_server.url, "serve,sleep:lookup")
    try:
        workers.start("wA")
        workers.start("wB")
        await client.open()
        for run in runs:
            await client.submit(f"go {run}", session_id=f"s-{run}", run_id=run)
        deadline = time.monotonic() + 60
        while not any(line.endswith(":start") for line in effects(workdir)):
            assert time.monotonic() < deadline, effects(workdir)
            time.sleep(0.05)
        dead = effects(workdir)[0].split(":")[0]  # mid-run: in the slow lookup
        live = "wB" if dead == "wA" else "wA"
        workers.kill(dead)
        for run in runs:
            assert (await client.result(run)).text == f"Sunny in {run}."
        lines = effects(workdir)
        killed = {line.split(":")[2] for line in lines if line.startswith(f"{dead}:")}
        assert killed and not any(line.endswith(":done") for line in lines if dead in line)
        for run in runs:  # each run's (idempotent) lookup ended once, on the live worker
            assert [line for line in lines if line.endswith(f":{run}:done")] == [
                f"{live}:lookup:{run}:done"
            ], lines
        assert len(lookup_server.requests) == 2 * len(runs)  # no model call sent twice
    finally:
        workers.kill_all()


# ------------------------------------------------------ racing deciders


def pay_reply(request: RecordedRequest) -> Reply:
    if _calls(request) == 0:
        return chat("Paying.", (("c1", "pay", '{"amount": 100}'),), "tool_calls")
    return chat("Paid 100.", finish="stop")


async def test_two_processes_deciding_one_waiting_call_at_once_run_it_once(
    engine: Engine, workdir: Path, client: Client
) -> None:
    with ReplayServer(route=pay_reply) as server:
        workers = Workers(engine, workdir, server.url, "serve,approvals")
        deciders: list[subprocess.Popen[bytes]] = []
        try:
            workers.start("w")
            await client.open()
            await client.submit("go pay", session_id="s", run_id="r1")
            asked = await client.result("r1")  # the run ended at the request
            assert [c.name for c in asked.tool_calls] == ["pay"]
            scope = {"ZETT_TEST_RUN_ID": "r1"}
            for _ in range(2):
                deciders.append(start(engine, workdir, server.url, "decide,race,approvals", scope))
            deadline = time.monotonic() + 90
            while len(list(workdir.glob("ready-*"))) < 2:
                assert time.monotonic() < deadline and all(d.poll() is None for d in deciders)
                time.sleep(0.02)
            (workdir / "go").touch()  # both decide now
            outs = []
            for decider in deciders:
                out, _ = decider.communicate(timeout=120)
                outs.append((decider.returncode, out.decode()))
            # both had read the waiting call and reached the store's compare-and-set
            assert len(list(workdir.glob("at-cas-*"))) == 2, outs
            codes = sorted(code for code, _ in outs)
            assert codes == [0, 12], outs  # one decision taken; the other: a conflict
            won = next(out for code, out in outs if code == 0)
            lost = next(out for code, out in outs if code == 12)
            assert "final: Paid 100." in won, outs
            assert "conflict:" in lost and "decided already" in lost, outs
            assert [line.split(":", 1)[1] for line in effects(workdir)] == [
                "pay:100:start",
                "pay:100:done",
            ]  # the approved (not idempotent) tool ran once
            stored = await client.store.rows("s")
            assert sum(isinstance(r.message, ApprovalDecision) for r in stored) == 1
            assert len(server.requests) == 2
        finally:
            for decider in deciders:
                if decider.poll() is None:
                    decider.send_signal(signal.SIGKILL)
                    decider.wait(timeout=30)
            workers.kill_all()


async def test_an_approved_call_survives_killed_workers_and_runs_at_most_once(
    engine: Engine, workdir: Path, client: Client
) -> None:
    """A worker killed while the call waits, the decision taken from a process with
    no worker, the worker that takes the continuation killed inside the approved
    (not idempotent) tool: the next worker answers it "may or may not have taken
    effect" and the run ends; the tool started once."""
    with ReplayServer(route=pay_reply) as server:
        workers = Workers(engine, workdir, server.url, "serve,approvals,tool:pay")
        decider = None
        try:
            workers.start("w1")
            await client.open()
            await client.submit("go pay", session_id="s", run_id="r1")
            asked = await client.result("r1")
            assert [c.name for c in asked.tool_calls] == ["pay"]
            workers.kill("w1")  # killed while the call waits: nothing of it was running
            (workdir / "armed-tool-pay").touch()
            (workdir / "go").touch()
            scope = {"ZETT_TEST_RUN_ID": "r1"}
            decider = start(engine, workdir, server.url, "decide,approvals", scope)
            workers.start("w2")
            dying = workers.processes.pop("w2")
            assert dying.wait(timeout=120) == -signal.SIGKILL  # inside pay
            assert not (workdir / "armed-tool-pay").exists()
            workers.start("w3")
            out, _ = decider.communicate(timeout=120)
            assert decider.returncode == 0 and "final: Paid 100." in out.decode(), out
            assert effects(workdir) == ["w2:pay:100:start"]  # never a second time
            stored = await client.store.rows("s")
            assert sum(isinstance(r.message, ApprovalDecision) for r in stored) == 1
            results = [r.message for r in stored if isinstance(r.message, ToolResultMessage)]
            assert [(m.name, m.content, m.is_error) for m in results] == [
                ("pay", TOOL_INTERRUPTED, True)
            ]
            assert len(server.requests) == 2  # each model call once
        finally:
            if decider is not None and decider.poll() is None:
                decider.send_signal(signal.SIGKILL)
                decider.wait(timeout=30)
            workers.kill_all()
