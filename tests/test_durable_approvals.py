"""Tool calls that wait for approval in durable runs (in this process, on each
engine: DBOS on SQLite, Temporal; tests/durable_engines.py): the run ends at the
request, which is stored in the session (and set as a DBOS event on DBOS); the
decision is taken once (the same compare-and-set as a plain session) and carried
on by a continuation run keyed by the request; an approved call runs once through
the gate's steps, a denied one never runs. The worker processes (kill -9 while
waiting and while the tool runs) are in test_durable_approvals_workers.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from dbos import DBOS

from durable_engines import Engine, TemporalEngine, engine, step_names, temporal_server
from zett_agent import (
    Agent,
    AgentClient,
    AgentRunConfig,
    ApprovalConflictError,
    ConfigError,
    ToolCall,
    ToolResultMessage,
)
from zett_agent.approvals import (
    ApprovalDecision,
    ApprovalRequest,
    PendingApprovalError,
    approve,
    deny,
    requires_approval,
)
from zett_agent.durable import (
    DurableAgent,
    DurableConfig,
    DurableRuns,
    TemporalRuns,
    ashutdown,
    decided_run_id,
    launch,
    shutdown,
)
from zett_agent.durable._runtime import APPROVAL_EVENT
from zett_agent.testing import ScriptedModel, reply

__all__ = ["engine", "temporal_server"]  # the fixtures this module uses

pytestmark = pytest.mark.timeout(60)

SENT: list[str] = []


def send_invoice(customer: str) -> str:
    """Send an invoice.

    Args:
        customer: who gets it.
    """
    SENT.append(customer)
    return f"invoice sent to {customer}"


@pytest.fixture
async def durable(tmp_path: Path, engine: Engine) -> AsyncIterator[DurableAgent]:
    SENT.clear()
    model = ScriptedModel(
        reply("Billing.", [ToolCall("c1", "send_invoice", '{"customer": "ACME"}')]),
        reply("Billed ACME."),
    )
    agent = Agent(model, AgentRunConfig("biller"), [requires_approval(send_invoice)])
    made = DurableAgent(agent, tmp_path / "s.sqlite3")
    try:  # a launch that fails still leaves no agent registered for the next test
        await launch(engine.config(tmp_path))
        yield made
    finally:
        await ashutdown()
        await made.aclose()


def test_a_continuation_id_is_derived_from_the_request() -> None:
    assert decided_run_id("r1") == "r1.decided-1"
    assert decided_run_id("r1.decided-1") == "r1.decided-2"
    assert decided_run_id("r1.decided-9") == "r1.decided-10"


async def test_a_durable_run_ends_at_the_request_and_an_approval_runs_the_call_once(
    durable: DurableAgent, engine: Engine
) -> None:
    final = await durable.run("bill ACME", session_id="s", run_id="r1")
    assert final.tool_calls and not SENT  # ended waiting: nothing ran
    waiting = await durable.pending_approval("s")
    assert waiting is not None and waiting.ids == ["c1"]
    assert waiting.run_id == "r1" and waiting.durable_agent == "biller"
    # stored like a plain run's request: a plain client of the store sees it too
    rows = await durable.store.rows("s")
    assert [r.key for r in rows if isinstance(r.message, ApprovalRequest)] == ["r1:approval"]
    if engine.name == "dbos":
        event = await DBOS.get_event_async("r1", APPROVAL_EVENT, timeout_seconds=0)
        assert json.loads(event) == [
            {"id": "c1", "name": "send_invoice", "arguments": '{"customer": "ACME"}'}
        ]
        status = await DBOS.get_workflow_status_async("r1")
        assert status is not None and status.status == "SUCCESS"  # nothing waits in DBOS

    done = await durable.approve("s", {"c1": approve()})
    assert done.text == "Billed ACME."
    assert SENT == ["ACME"]
    assert await durable.pending_approval("s") is None
    steps = [s for s in await step_names(engine, "r1.decided-1") if not s.endswith(".append")]
    assert (
        steps[1:3]
        if engine.name == "temporal"
        else steps[:2] == ["biller.tool.send_invoice.started", "biller.tool.send_invoice"]
    )
    # the same decision again conflicts: nothing stored, nothing runs
    with pytest.raises(ApprovalConflictError) as caught:
        await durable.approve("s", {"c1": approve()})
    assert caught.value.decided == ApprovalDecision({"c1": approve()})
    assert SENT == ["ACME"]
    decisions = [
        r for r in await durable.store.rows("s") if isinstance(r.message, ApprovalDecision)
    ]
    assert [r.key for r in decisions] == ["decision:" + str(rows[-1].seq)]


async def test_a_denied_durable_call_never_runs(durable: DurableAgent) -> None:
    await durable.run("bill ACME", session_id="s", run_id="r2")
    done = await durable.approve("s", {"c1": deny("not this month")})
    assert done.text == "Billed ACME."
    assert SENT == []
    results = [m for m in await durable.store.load("s") if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == [
        "A person denied this tool call; it was not run. Reason: not this month"
    ]


async def test_a_client_decides_a_durable_request_only_by_handing_it_to_the_workers(
    durable: DurableAgent, tmp_path: Path, engine: Engine
) -> None:
    await durable.run("bill ACME", session_id="s", run_id="r3")
    plain = AgentClient(durable.agent, durable.store)
    with pytest.raises(ConfigError, match="zett runs approve r3"):
        await plain.approve("s", {"c1": approve()})
    assert not [r for r in await durable.store.rows("s") if isinstance(r.message, ApprovalDecision)]
    runs: DurableRuns | TemporalRuns = (
        DurableRuns(f"sqlite:///{tmp_path / 'dbos.sqlite3'}", sessions=durable.store)
        if not isinstance(engine, TemporalEngine)
        else TemporalRuns(engine.server.address, namespace=engine.namespace, sessions=durable.store)
    )
    async with runs:
        assert (await runs.pending_approval("r3")) is not None
        handing = AgentClient(durable.agent, durable.store, handoff=runs)
        final = await handing.approve("s", {"c1": approve()})
        assert final.text == "Billed ACME."
        assert SENT == ["ACME"]
        assert await runs.pending_approval("r3") is None
        with pytest.raises(ApprovalConflictError):
            await runs.approve("r3", {"c1": approve()})
        assert [i.run_id for i in await runs.list_runs()][:2] == ["r3.decided-1", "r3"]
    assert SENT == ["ACME"]


@pytest.mark.slow  # three CLI processes, each importing DBOS
async def test_zett_runs_approve_decides_once_and_exits_12_the_second_time(
    tmp_path: Path,
) -> None:
    import os
    import subprocess
    import sys

    import anyio

    from zett_agent.durable import system_database_next_to

    SENT.clear()
    sessions = tmp_path / "s.sqlite3"
    model = ScriptedModel(
        reply("Billing.", [ToolCall("c1", "send_invoice", '{"customer": "ACME"}')]),
        reply("Billed ACME."),
    )
    agent = Agent(model, AgentRunConfig("biller"), [requires_approval(send_invoice)])
    durable = DurableAgent(agent, sessions)
    await launch(DurableConfig(system_database_next_to(sessions), executor_id="test"))
    try:
        await durable.run("bill ACME", session_id="s", run_id="r4")

        def zett(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "zett_agent.cli", "runs", *args, "--sessions",
                 str(sessions)],
                capture_output=True, text=True, timeout=90, env=os.environ.copy(),
            )  # fmt: skip

        first = await anyio.to_thread.run_sync(zett, "approve", "r4")
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == "r4.decided-1"
        assert (await durable.result("r4.decided-1")).text == "Billed ACME."  # run here
        second = await anyio.to_thread.run_sync(zett, "approve", "r4", "--deny", "no")
        assert second.returncode == 12, second.stderr
        assert "decided already" in second.stderr
        none = await anyio.to_thread.run_sync(zett, "approve", "nope")
        assert none.returncode == 1 and "no durable run 'nope'" in none.stderr
        assert "Traceback" not in none.stderr
        assert SENT == ["ACME"]
    finally:
        shutdown()
        await durable.aclose()


async def test_serve_hands_a_durable_runs_decision_to_the_workers(
    durable: DurableAgent, tmp_path: Path, engine: Engine
) -> None:
    if engine.name != "dbos":
        pytest.skip("DurableRuns (serve's handoff) watches DBOS's runs")
    pytest.importorskip("starlette", reason="the serve extra is not installed")
    import anyio
    import httpx

    from serve_support import read_chunks, running_server
    from zett_agent.serve import create_app

    await durable.run("bill ACME", session_id="s", run_id="r5")
    async with DurableRuns(
        f"sqlite:///{tmp_path / 'dbos.sqlite3'}", sessions=durable.store
    ) as runs:
        plain = create_app(durable.agent, durable.store)
        handing = create_app(durable.agent, durable.store, handoff=runs)
        decisions = {"decisions": {"c1@r5": {"approved": True}}}  # its approval id

        def post(app: object) -> httpx.Response:
            with running_server(app) as url:
                return httpx.post(f"{url}/api/sessions/s/approve", json=decisions, timeout=60)

        refused = await anyio.to_thread.run_sync(post, plain)
        assert refused.status_code == 409 and "zett runs approve r5" in refused.text
        assert SENT == []
        done = await anyio.to_thread.run_sync(post, handing)
        assert done.status_code == 200, done.text
        chunks = read_chunks(done.text)
        assert chunks[-1]["type"] == "finish"
        # what the worker's run stored streams as if it had arrived whole: the
        # approved call's output, then the answer (a page shows it without a reload)
        kinds = [c["type"] for c in chunks]
        [output] = [c for c in chunks if c["type"] == "tool-output-available"]
        assert output["output"] == "invoice sent to ACME"
        text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
        assert text == "Billed ACME."
        assert kinds.index("tool-output-available") < kinds.index("text-delta")
        assert SENT == ["ACME"]  # run by the worker (this process's DBOS), once
        again = await anyio.to_thread.run_sync(post, handing)
        assert again.status_code == 409
    assert SENT == ["ACME"]


async def test_a_new_prompt_while_calls_wait_is_refused_as_a_plain_session_does(
    durable: DurableAgent, tmp_path: Path, engine: Engine
) -> None:
    """One rule for a durable run, AgentClient and serve (409): calls that wait for a
    decision are never answered "not run" by a new prompt; the prompt is refused
    with PendingApprovalError and nothing is stored or started."""
    await durable.run("bill ACME", session_id="s", run_id="r5")
    before = await durable.store.rows("s")
    with pytest.raises(PendingApprovalError) as caught:
        await durable.run("something else", session_id="s", run_id="r6")
    assert [c.id for c in caught.value.calls] == ["c1"]
    with pytest.raises(PendingApprovalError):
        await durable.submit("something else", session_id="s", run_id="r7")
    plain = AgentClient(durable.agent, durable.store)
    with pytest.raises(PendingApprovalError):  # the same rule, the same error
        await plain.run("something else", session_id="s")
    if engine.name == "dbos":  # a run queued from another process: the workflow refuses
        runs = DurableRuns(f"sqlite:///{tmp_path / 'dbos.sqlite3'}", sessions=durable.store)
        async with runs:  # (DurableRuns, the other process's queue, is DBOS's)
            queued = await runs.submit("biller", "something else", session_id="s", run_id="r8")
            with pytest.raises(PendingApprovalError):
                await runs.result(queued, poll=0.05)
        assert await DBOS.get_workflow_status_async("r6") is None
    assert await durable.store.rows("s") == before
    assert SENT == []
    done = await durable.approve("s", {"c1": approve()})  # the calls still wait
    assert done.text == "Billed ACME." and SENT == ["ACME"]


async def test_two_deciders_at_once_run_the_approved_call_once(durable: DurableAgent) -> None:
    import anyio

    await durable.run("bill ACME", session_id="s", run_id="r-race")
    outcomes: list[object] = []

    async def decide() -> None:
        try:
            outcomes.append((await durable.approve("s", {"c1": approve()})).text)
        except ApprovalConflictError as error:
            outcomes.append(error)

    async with anyio.create_task_group() as group:
        group.start_soon(decide)
        group.start_soon(decide)
    assert SENT == ["ACME"]  # one decision stored, one continuation, one call
    assert sorted(map(type, outcomes), key=str) == sorted([str, ApprovalConflictError], key=str)
    decisions = [
        r for r in await durable.store.rows("s") if isinstance(r.message, ApprovalDecision)
    ]
    assert len(decisions) == 1
