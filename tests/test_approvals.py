"""Tool calls that wait for a person's approval: a replayed model (ReplayServer,
Anthropic stream) asks for them, the run ends with them pending, and decisions
resume it, in memory and across processes through a SQLite session store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from mcp_helpers import sent_tool_results, text_reply, tool_reply
from stores import STORE_KINDS, open_store
from zett_agent import (
    AgentClient,
    AgentEventType,
    AgentRunConfig,
    Model,
    SQLiteSessionStore,
    StopReason,
    ToolCall,
    UserMessage,
    create_agent,
)
from zett_agent.approvals import (
    ApprovalDecision,
    ApprovalRequest,
    PendingApprovalError,
    approve,
    deny,
    requires_approval,
)
from zett_agent.errors import ResumeError, SessionStoreError
from zett_agent.sessions import SCHEMA_VERSION
from zett_agent.sessions._base import decode_row
from zett_agent.testing import ReplayServer

E = AgentEventType
RAN: list[str] = []


def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append(f"delete {path}")
    return f"deleted {path}"


def read_file(path: str) -> str:
    """Read a file."""
    RAN.append(f"read {path}")
    return f"contents of {path}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def model_for(server: ReplayServer) -> Model:
    return Model("anthropic", "m", base_url=server.url, api_key="test-key")


TWO_CALLS = (("c1", "delete_file", '{"path": "/tmp/x"}'), ("c2", "read_file", '{"path": "/a"}'))


async def test_a_call_that_needs_approval_waits_and_the_others_run_at_once() -> None:
    with ReplayServer([tool_reply(*TWO_CALLS), text_reply("Deleted.")]) as server:
        agent = await create_agent(
            model_for(server), tools=[requires_approval(delete_file), read_file]
        )
        events = [event async for event in agent.stream("clean up")]
        assert RAN == ["read /a"]  # the call that needs no approval ran at once
        kinds = [e.type for e in events]
        assert E.MODEL_STOPPED not in kinds  # the model did not stop abnormally
        asked = [e.tool_call for e in events if e.type is E.TOOL_APPROVAL_REQUESTED]
        assert [c.id for c in asked] == ["c1"]
        assert kinds.index(E.TOOL_CALL_COMPLETED) < kinds.index(E.TOOL_APPROVAL_REQUESTED)
        done = events[-1]
        assert done.type is E.RUN_COMPLETED and done.stop is None
        assert done.approval is not None and done.approval.ids == ["c1"]
        assert done.to_dict()["approval"][0]["name"] == "delete_file"
        assert agent.pending_approval == done.approval
        assert len(server.requests) == 1

        with pytest.raises(PendingApprovalError, match="delete_file"):
            await agent.run("something else")
        with pytest.raises(PendingApprovalError):
            await agent.resume()

        final = await agent.approve({"c1": approve()})
        await agent.aclose()
    assert RAN == ["read /a", "delete /tmp/x"]
    assert final.text == "Deleted." and agent.pending_approval is None
    results = {r["tool_use_id"]: r for r in sent_tool_results(server.requests[1].json)}
    assert results["c1"]["content"] == "deleted /tmp/x"
    assert results["c2"]["content"] == "contents of /a"


async def test_a_denied_call_is_answered_with_the_reason_and_never_runs() -> None:
    with ReplayServer([tool_reply(*TWO_CALLS), text_reply("Understood.")]) as server:
        agent = await create_agent(
            model_for(server), tools=[requires_approval(delete_file), read_file]
        )
        await agent.run("clean up")
        final = await agent.approve({"c1": deny("not that file")})
        await agent.aclose()
    assert RAN == ["read /a"]
    assert final.text == "Understood."
    denied = next(r for r in sent_tool_results(server.requests[1].json) if r["tool_use_id"] == "c1")
    assert denied["is_error"] is True and "not that file" in denied["content"]


async def test_decisions_must_answer_exactly_the_pending_calls() -> None:
    with ReplayServer([tool_reply(*TWO_CALLS)]) as server:
        agent = await create_agent(
            model_for(server), tools=[requires_approval(delete_file), read_file]
        )
        await agent.run("clean up")
        with pytest.raises(ValueError, match="no decision for c1"):
            await agent.approve({})
        with pytest.raises(ValueError, match="no pending call c9"):
            await agent.approve({"c1": approve(), "c9": approve()})
        assert agent.pending_approval is not None  # nothing ran, still waiting
        await agent.aclose()
    assert RAN == ["read /a"]


async def test_nothing_pending_is_a_resume_error() -> None:
    agent = await create_agent(Model("anthropic", "m", base_url="http://127.0.0.1:9", api_key="k"))
    with pytest.raises(ResumeError):
        await agent.approve({"c1": approve()})
    await agent.aclose()


async def test_a_policy_decides_per_call_and_fails_closed() -> None:
    seen: list[str] = []

    def policy(call: ToolCall) -> bool:
        seen.append(call.id)
        path = call.parsed_arguments().get("path", "")
        if path == "/boom":
            raise RuntimeError("policy broke")
        return path.startswith("/etc")

    calls = (
        ("c1", "read_file", '{"path": "/etc/passwd"}'),  # the policy says wait
        ("c2", "read_file", '{"path": "/home/a"}'),  # the policy says run
        ("c3", "read_file", '["not", "an", "object"]'),  # malformed: waits, policy not asked
        ("c4", "read_file", '{"path": "/boom"}'),  # the policy raised: waits
    )
    with ReplayServer([tool_reply(*calls)]) as server:
        config = AgentRunConfig(approval=policy)
        agent = await create_agent(model_for(server), config, tools=[read_file])
        await agent.run("read")
        await agent.aclose()
    assert agent.pending_approval is not None
    assert agent.pending_approval.ids == ["c1", "c3", "c4"]
    assert RAN == ["read /home/a"]
    assert seen == ["c1", "c2", "c4"]


async def test_withheld_and_cut_off_calls_never_become_pending() -> None:
    refused = tool_reply(
        ("c1", "delete_file", '{"path": "/x"}'),
        stop_reason="refusal",
        stop_details={"type": "refusal", "category": "cyber", "explanation": "No."},
    )
    cut = tool_reply(("c2", "delete_file", '{"path": "/'), stop_reason="max_tokens")
    with ReplayServer([refused, cut, text_reply("ok")]) as server:
        agent = await create_agent(model_for(server), tools=[requires_approval(delete_file)])
        events = [e async for e in agent.stream("one")]
        assert events[-1].approval is None and agent.pending_approval is None
        assert events[-1].stop is not None and events[-1].stop.reason is StopReason.REFUSAL
        events = [e async for e in agent.stream("two")]
        await agent.aclose()
    assert E.TOOL_APPROVAL_REQUESTED not in [e.type for e in events]
    assert agent.pending_approval is None and RAN == []
    [result] = sent_tool_results(server.requests[2].json)
    assert result["is_error"] is True and "cut off" in result["content"]


async def test_client_stores_request_and_decision_rows_and_refuses_a_new_prompt(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite3"
    with ReplayServer([tool_reply(*TWO_CALLS), text_reply("Done.")]) as server:
        agent = await create_agent(
            model_for(server), tools=[requires_approval(delete_file), read_file]
        )
        async with AgentClient(agent, db, session_id="s1") as client:
            await client.run("clean up")
            pending = await client.pending_approval()
            assert pending is not None and pending.ids == ["c1"]
            with pytest.raises(PendingApprovalError):
                await client.run("more")
            with pytest.raises(PendingApprovalError):
                await client.resume()
            final = await client.approve("s1", {"c1": approve()})
            assert final.text == "Done." and await client.pending_approval() is None
            rows = await client.store.rows("s1")
            messages = await client.messages()
        await agent.aclose()
    kinds = [type(row.message).__name__ for row in rows]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolStarted",  # read_file is entered at once
        "ToolResultMessage",
        "ApprovalRequest",
        "ApprovalDecision",  # stored before delete_file ran
        "ToolStarted",
        "ToolResultMessage",
        "AssistantMessage",
    ]
    assert all(row.schema_version == 3 for row in rows)
    assert not any(isinstance(m, ApprovalRequest | ApprovalDecision) for m in messages)


def test_rows_of_old_sessions_still_load_and_old_versions_cannot_hold_approvals() -> None:
    old = json.dumps({"role": "user", "content": "hi"})
    assert decode_row("s", 1, 1, old).content == "hi"  # type: ignore[union-attr]
    assert decode_row("s", 1, 0, old).content == "hi"  # type: ignore[union-attr]
    request = json.dumps({"role": "approval_request", "calls": [{"id": "c", "name": "t"}]})
    assert isinstance(decode_row("s", 2, 2, request), ApprovalRequest)
    with pytest.raises(SessionStoreError, match="needs schema version 2"):
        decode_row("s", 2, 1, request)


SCRIPT = Path(__file__).parent / "approval_process.py"


def in_process(*args: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_approval_round_trips_across_a_process_restart(tmp_path: Path) -> None:
    db, marker = tmp_path / "s.sqlite3", tmp_path / "deleted.txt"
    env = {"ZETT_TEST_MARKER": str(marker)}
    call = ("c1", "delete_file", json.dumps({"path": "/tmp/x"}))
    with ReplayServer([tool_reply(call), text_reply("Deleted it.")]) as server:
        env["ZETT_TEST_URL"] = server.url
        first = in_process("run", str(db), env=env)
        assert first == {"pending": ["c1"], "ran": False}
        assert not marker.exists()
        second = in_process("approve", str(db), env=env)
    assert second == {"pending": [], "ran": True, "text": "Deleted it."}
    assert marker.read_text() == "/tmp/x"
    results = sent_tool_results(server.requests[1].json)
    assert results[0]["content"] == "deleted /tmp/x"


async def test_a_stored_session_reopened_by_a_fresh_store_keeps_the_pending_calls(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite3"
    with ReplayServer([tool_reply(*TWO_CALLS)]) as server:
        agent = await create_agent(
            model_for(server), tools=[requires_approval(delete_file), read_file]
        )
        async with AgentClient(agent, db, session_id="s1") as client:
            await client.run("clean up")
        await agent.aclose()
    async with SQLiteSessionStore(db) as store:
        rows = await store.rows("s1")
    assert isinstance(rows[-1].message, ApprovalRequest)
    assert rows[-1].message.calls[0].arguments == '{"path": "/tmp/x"}'


async def test_the_request_is_stored_even_when_the_consumer_stops_at_the_announcement(
    tmp_path: Path,
) -> None:
    with ReplayServer([tool_reply(*TWO_CALLS)]) as server:
        agent = await create_agent(
            model_for(server), tools=[requires_approval(delete_file), read_file]
        )
        async with AgentClient(agent, tmp_path / "s.sqlite3", session_id="s1") as client:
            async with aclosing(client.stream("clean up")) as events:
                async for event in events:
                    if event.type is E.TOOL_APPROVAL_REQUESTED:
                        break
            pending = await client.pending_approval()
            rows = await client.store.rows("s1")
        await agent.aclose()
    assert pending is not None and pending.ids == ["c1"]
    assert sum(isinstance(row.message, ApprovalRequest) for row in rows) == 1


async def test_a_second_round_of_approval_is_its_own_request(tmp_path: Path) -> None:
    first = tool_reply(("c1", "delete_file", '{"path": "/a"}'))
    second = tool_reply(("c2", "delete_file", '{"path": "/b"}'))
    with ReplayServer([first, second, text_reply("Both gone.")]) as server:
        agent = await create_agent(model_for(server), tools=[requires_approval(delete_file)])
        async with AgentClient(agent, tmp_path / "s.sqlite3", session_id="s1") as client:
            await client.run("delete both")
            await client.approve("s1", {"c1": approve()})
            pending = await client.pending_approval()
            assert pending is not None and pending.ids == ["c2"]
            with pytest.raises(ValueError, match="no pending call c1"):
                await client.approve("s1", {"c1": approve(), "c2": approve()})
            final = await client.approve("s1", {"c2": approve()})
            rows = await client.store.rows("s1")
        await agent.aclose()
    assert RAN == ["delete /a", "delete /b"] and final.text == "Both gone."
    decisions = [row.message for row in rows if isinstance(row.message, ApprovalDecision)]
    assert [list(d.decisions) for d in decisions] == [["c1"], ["c2"]]


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_every_store_keeps_approval_rows_and_load_leaves_them_out(
    kind: str, tmp_path: Path
) -> None:
    request = ApprovalRequest((ToolCall("c1", "delete_file", '{"path": "/x"}'),), "run1")
    decision = ApprovalDecision({"c1": deny("no")})
    async with open_store(kind, tmp_path) as store:
        await store.append("s1", UserMessage("hi"))
        await store.append("s1", request)
        await store.append("s1", decision)
        rows = await store.rows("s1")
        loaded = await store.load("s1")
    assert [row.message for row in rows[1:]] == [request, decision]
    assert [row.schema_version for row in rows] == [SCHEMA_VERSION] * 3
    assert loaded == [UserMessage("hi")]
