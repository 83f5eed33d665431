"""A call's outcome after a crash: "may or may not have taken effect" is never
reported as "not run" (zett_agent.tools._outcomes).

Sessions keep a ``tool_started`` row just before a tool is entered; a call that
started and has no result is answered "may or may not have taken effect" (and a
TOOL_OUTCOME_UNKNOWN event names it), re-run on resume only when the tool is
idempotent; a call that never started is still "not run". Proven in process on
stored sessions, and with a real ``kill -9`` inside an approved tool.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_helpers import text_reply, tool_reply
from zett_agent import (
    AgentClient,
    AgentEventType,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    create_agent,
)
from zett_agent.sessions import SQLiteSessionStore
from zett_agent.testing import ReplayServer, ScriptedModel, reply
from zett_agent.tools import NOT_RUN, OUTCOME_UNKNOWN, ToolStarted, idempotent

RAN: list[str] = []


def send_invoice(customer: str) -> str:
    """Send an invoice.

    Args:
        customer: who gets it.
    """
    RAN.append(f"invoice:{customer}")
    return "sent"


@idempotent
def refresh_report(customer: str) -> str:
    """Rebuild a report.

    Args:
        customer: whose report.
    """
    RAN.append(f"report:{customer}")
    return "rebuilt"


CALLS = (
    ToolCall("c1", "send_invoice", '{"customer": "acme"}'),
    ToolCall("c2", "refresh_report", '{"customer": "acme"}'),
    ToolCall("c3", "send_invoice", '{"customer": "zeta"}'),
)


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


async def crashed_session(path: Path) -> None:
    """A session as a process killed while c1 and c2 ran leaves it: the answer,
    both started markers, no results; c3 never started."""
    async with SQLiteSessionStore(path) as store:
        await store.append("s", UserMessage("bill acme and zeta"))
        await store.append("s", AssistantMessage(tool_calls=CALLS))
        await store.append("s", ToolStarted("c1", "send_invoice", "r1"))
        await store.append("s", ToolStarted("c2", "refresh_report", "r1"))


def results(messages: list[Any]) -> dict[str, str]:
    return {m.tool_call_id: m.content for m in messages if isinstance(m, ToolResultMessage)}


async def test_resume_reruns_only_the_idempotent_started_call(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    await crashed_session(db)
    model = ScriptedModel(reply("Done."))
    agent = await create_agent(model, tools=[send_invoice, refresh_report])
    async with AgentClient(agent, db, session_id="s") as client:
        events = [event async for event in client.resume_stream("s")]
        stored = await client.messages()
    unknown = [e.tool_call.id for e in events if e.type is AgentEventType.TOOL_OUTCOME_UNKNOWN]
    assert unknown == ["c1"]  # the host is told which call may have had its effect
    assert RAN == ["report:acme"]  # the idempotent one ran again; the invoice did not
    assert results(stored) == {"c1": OUTCOME_UNKNOWN, "c2": "rebuilt"}  # c3: never stored
    sent = results(model.requests[0].messages)
    assert sent == {"c1": OUTCOME_UNKNOWN, "c2": "rebuilt", "c3": NOT_RUN}
    assert "may or may not have taken effect" in OUTCOME_UNKNOWN
    assert "was not run" in NOT_RUN


async def test_a_new_prompt_answers_every_started_call_as_unknown_and_runs_none(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite3"
    await crashed_session(db)
    model = ScriptedModel(reply("Noted."))
    agent = await create_agent(model, tools=[send_invoice, refresh_report])
    async with AgentClient(agent, db, session_id="s") as client:
        events = [event async for event in client.stream("what happened?", session_id="s")]
        stored = await client.messages()
    unknown = [e.tool_call.id for e in events if e.type is AgentEventType.TOOL_OUTCOME_UNKNOWN]
    assert unknown == ["c1", "c2"] and RAN == []
    assert results(stored) == {"c1": OUTCOME_UNKNOWN, "c2": OUTCOME_UNKNOWN}
    # the results come before the new prompt, where the calls were
    kinds = [type(m).__name__ for m in stored]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "ToolResultMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert results(model.requests[0].messages)["c3"] == NOT_RUN


async def test_an_agent_without_a_store_keeps_saying_not_run() -> None:
    """No journal, no started marker: a history with unanswered calls is repaired
    with "not run" at send time, as before."""
    model = ScriptedModel(reply("ok"))
    agent = await create_agent(model, tools=[send_invoice])
    history = [UserMessage("bill"), AssistantMessage(tool_calls=CALLS[:1])]
    events = [e async for e in agent.stream(None, history=history)]
    assert not any(e.type is AgentEventType.TOOL_OUTCOME_UNKNOWN for e in events)
    assert results(model.requests[0].messages) == {"c1": NOT_RUN}


SCRIPT = Path(__file__).parent / "tool_crash_process.py"


def _process(action: str, db: Path, tool: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), action, str(db), tool],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    ("tool", "rerun"), [("send_invoice", False), ("refresh_report", True)], ids=["plain", "idem"]
)
def test_kill_9_inside_an_approved_tool_is_may_or_may_not_never_not_run(
    tmp_path: Path, tool: str, rerun: bool
) -> None:
    db, marker = tmp_path / "s.sqlite3", tmp_path / "entered.txt"
    env = {"ZETT_TEST_MARKER": str(marker)}
    call = ("c1", tool, json.dumps({"customer": "ACME"}))
    with ReplayServer([tool_reply(call), text_reply("Billed."), text_reply("Checked.")]) as server:
        env["ZETT_TEST_URL"] = server.url
        assert _process("run", db, tool, env)["pending"] == ["c1"]
        approving = subprocess.Popen(
            [sys.executable, str(SCRIPT), "approve", str(db), tool],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not marker.exists():  # the tool was entered: it is doing its work now
            assert approving.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        approving.send_signal(signal.SIGKILL)
        approving.wait(timeout=30)
        resumed = _process("resume", db, tool, env)
    sent = [
        block
        for message in server.requests[1].json["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    (result,) = sent
    if rerun:
        assert resumed["unknown"] == [] and resumed["runs"] == 1
        assert "done for ACME" in json.dumps(result["content"])
    else:
        assert resumed["unknown"] == ["c1"] and resumed["runs"] == 0
        assert "may or may not have taken effect" in json.dumps(result["content"])
        assert "not run" not in json.dumps(result["content"])
    assert resumed["text"] == "Billed."
