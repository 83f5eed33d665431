"""Every tool call passes one gate (zett_agent.tools._gate), in its documented order.

Through the public API with ScriptedModel (offline): calls the request did not
allow never run; limits come before approval; the started marker is written just
before a tool is entered and never for a call that did not get there; each result
is stored as its call ends while the model and a reloaded session see the calls'
order; and every field of Tool survives every wrapper.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import anyio
import pytest

from zett_agent import (
    AgentClient,
    AgentEventType,
    AgentRunConfig,
    ToolCall,
    ToolResultMessage,
    create_agent,
)
from zett_agent.approvals import requires_approval
from zett_agent.extensions import Extension
from zett_agent.stop import StopReason
from zett_agent.testing import ScriptedModel, reply
from zett_agent.tools import (
    CUT_OFF_ARGUMENTS,
    NOT_OFFERED_TOOL_CALLS,
    Tool,
    ToolStarted,
    as_tool,
    idempotent,
    is_idempotent,
)

pytestmark = pytest.mark.looptime  # virtual time: tool timeouts and waits cost no wall time

RAN: list[str] = []


def delete_all() -> str:
    """Delete everything."""
    RAN.append("delete_all")
    return "deleted"


def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: what to look up.
    """
    RAN.append(f"lookup:{query}")
    return f"found {query}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def call(name: str, arguments: dict[str, Any] | None = None, call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments or {}))


def results(messages: list[Any]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


# ---------------------------------------------------------------- calls the request allowed


@pytest.mark.parametrize("stop", [None, StopReason.OTHER])
async def test_under_tool_choice_none_no_call_runs_and_the_stop_names_it(
    stop: StopReason | None,
) -> None:
    """Gemini's UNEXPECTED_TOOL_CALL (OTHER) or a provider that ignores "none":
    the call is answered with an error, never run, and the answer's stop says so."""
    model = ScriptedModel(reply("", [call("delete_all")], stop=stop), reply("ok"))
    agent = await create_agent(model, AgentRunConfig(tool_choice="none"), tools=[delete_all])
    events = [event async for event in agent.stream("go")]
    assert RAN == []
    answer = next(e.message for e in events if e.type is AgentEventType.MODEL_COMPLETED)
    assert answer is not None and answer.stop is not None
    assert answer.stop.detail[NOT_OFFERED_TOOL_CALLS] == ["delete_all"]
    (result,) = results(agent.messages)
    assert result.is_error and "tool_choice none" in result.content
    # "none" is never reset once a tool result exists: the next request says none too
    assert [r.tool_choice for r in model.requests] == ["none", "none"]


async def test_a_call_of_another_tool_than_the_forced_one_is_not_run() -> None:
    model = ScriptedModel(
        reply("", [call("lookup", {"query": "x"}), call("delete_all", call_id="c2")]),
        reply("ok"),
    )
    agent = await create_agent(
        model, AgentRunConfig(tool_choice="lookup"), tools=[lookup, delete_all]
    )
    await agent.run("go")
    assert RAN == ["lookup:x"]
    first, second = results(agent.messages)
    assert not first.is_error and second.is_error
    assert "required a call of 'lookup'" in second.content
    answer = agent.messages[1]
    assert answer.stop is not None  # type: ignore[union-attr]
    assert answer.stop.detail[NOT_OFFERED_TOOL_CALLS] == ["delete_all"]  # type: ignore[union-attr]


async def test_an_unknown_tool_is_named_in_the_stop_and_answered_with_the_tools() -> None:
    model = ScriptedModel(reply("", [call("rm_rf")]), reply("ok"))
    agent = await create_agent(model, tools=[lookup])
    await agent.run("go")
    (result,) = results(agent.messages)
    assert result.is_error and "Unknown tool 'rm_rf'" in result.content
    assert "Tools: lookup" in result.content
    assert agent.messages[1].stop.detail[NOT_OFFERED_TOOL_CALLS] == ["rm_rf"]  # type: ignore[union-attr]


async def test_an_extension_that_removes_a_tool_from_the_request_disallows_its_calls() -> None:
    """ "Offered" is what the request that got the answer offered, after extensions."""

    class NoDelete(Extension):
        def before_model(self, request: Any) -> Any:
            return dataclasses.replace(
                request, tools=[t for t in request.tools if t.name != "delete_all"]
            )

    model = ScriptedModel(reply("", [call("delete_all")]), reply("ok"))
    agent = await create_agent(model, tools=[delete_all], extensions=[NoDelete()])
    await agent.run("go")
    assert RAN == []


# ---------------------------------------------------------------- the order of the rules


async def test_limits_come_before_approval_so_nobody_is_asked_about_a_call_that_cannot_run() -> (
    None
):
    big = call("lookup", {"query": "x" * 200})
    model = ScriptedModel(reply("", [big]), reply("ok"))
    agent = await create_agent(
        model, AgentRunConfig(max_tool_argument_chars=50), tools=[requires_approval(lookup)]
    )
    final = await agent.run("go")
    assert agent.pending_approval is None and final.text == "ok"
    (result,) = results(agent.messages)
    assert result.is_error and "more than the limit of 50" in result.content


async def test_a_cut_call_of_a_tool_that_needs_approval_is_answered_not_asked() -> None:
    cut = ToolCall("c1", "lookup", '{"query": "x', closed=False)
    model = ScriptedModel(reply("", [cut], stop=StopReason.MAX_OUTPUT), reply("ok"))
    agent = await create_agent(model, tools=[requires_approval(lookup)])
    await agent.run("go")
    assert agent.pending_approval is None and RAN == []
    assert results(agent.messages)[0].content == CUT_OFF_ARGUMENTS


async def test_the_started_marker_is_written_just_before_the_tool_is_entered(
    tmp_path: Path,
) -> None:
    """The tool sees its own marker in the store; calls that never got to rule 5
    (not allowed, cut, answered by before_tool, waiting) have none."""
    seen: list[list[str]] = []
    store_path = tmp_path / "s.sqlite3"

    class Answers(Extension):
        def before_tool(self, call: ToolCall) -> Any:
            if call.id == "c3":
                return ToolResultMessage(call.id, call.name, "answered by a hook")
            return None

    async def probe(query: str) -> str:
        """Probe the store.

        Args:
            query: anything.
        """
        rows = await client.store.rows("s")
        seen.append([r.message.call_id for r in rows if isinstance(r.message, ToolStarted)])
        return "ok"

    calls = [
        call("probe", {"query": "a"}, "c1"),
        call("nope", call_id="c2"),  # not offered
        call("probe", {"query": "b"}, "c3"),  # before_tool answers it
        ToolCall("c4", "probe", '{"query": "c"}', closed=False),  # cut
        call("guarded", call_id="c5"),  # waits for approval
    ]

    def guarded() -> str:
        """Needs a person."""
        return "never"

    model = ScriptedModel(reply("", calls))
    agent = await create_agent(
        model,
        AgentRunConfig(parallel_tools=False),
        tools=[probe, requires_approval(guarded)],
        extensions=[Answers()],
    )
    async with AgentClient(agent, store_path, session_id="s") as client:
        await client.run("go")
        rows = await client.store.rows("s")
    assert seen == [["c1"]]
    started = [r.message.call_id for r in rows if isinstance(r.message, ToolStarted)]
    assert started == ["c1"]
    kinds = [type(r.message).__name__ for r in rows]
    marker = kinds.index("ToolStarted")
    assert kinds[marker - 1] != "ToolStarted"  # a row of its own, after the answer
    assert rows[marker].schema_version == 3


async def test_results_are_stored_as_calls_end_and_read_back_in_the_calls_order(
    tmp_path: Path,
) -> None:
    async def slow() -> str:
        """Slow."""
        await anyio.sleep(0.3)
        return "slow done"

    async def fast() -> str:
        """Fast."""
        return "fast done"

    model = ScriptedModel(
        reply("", [call("slow", call_id="a"), call("fast", call_id="b")]), reply("ok")
    )
    agent = await create_agent(model, tools=[slow, fast])
    async with AgentClient(agent, tmp_path / "s.sqlite3", session_id="s") as client:
        await client.run("go")
        rows = await client.store.rows("s")
        loaded = await client.messages()
    stored = [r.message.tool_call_id for r in rows if isinstance(r.message, ToolResultMessage)]
    assert stored == ["b", "a"]  # the fast one was stored first
    assert [r.tool_call_id for r in results(loaded)] == ["a", "b"]
    sent = model.requests[1].messages
    assert [m.tool_call_id for m in sent if isinstance(m, ToolResultMessage)] == ["a", "b"]


async def test_cancelled_before_a_call_started_says_not_run_and_during_it_says_maybe() -> None:
    entered = anyio.Event()

    async def first() -> str:
        """Blocks."""
        entered.set()
        await anyio.sleep(30)
        return "never"

    async def second() -> str:
        """Never reached."""
        return "never"

    model = ScriptedModel(reply("", [call("first", call_id="a"), call("second", call_id="b")]))
    agent = await create_agent(model, AgentRunConfig(parallel_tools=False), tools=[first, second])
    async with anyio.create_task_group() as group:

        async def run() -> None:
            await agent.run("go")

        group.start_soon(run)
        await entered.wait()
        group.cancel_scope.cancel()
    a, b = results(agent.messages)
    assert "may or may not have taken effect" in a.content
    assert "before this tool call started; it was not run" in b.content


# ---------------------------------------------------------------- fields survive wrappers


def _every_field_set() -> Tool:
    """A tool whose every field differs from its default."""
    base = as_tool(lookup)
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(Tool):
        if spec.name in {"name", "description", "function", "arguments"}:
            continue
        current = getattr(base, spec.name)
        if isinstance(current, bool) or spec.type in ("bool",):
            values[spec.name] = not current
        elif spec.name == "timeout":
            values[spec.name] = 12.5
        else:
            raise AssertionError(
                f"Tool gained a field {spec.name!r}: give it a non-default value here"
            )
    return dataclasses.replace(base, description="desc", **values)


def _same_fields(before: Tool, after: Tool, *, except_: set[str]) -> None:
    for spec in dataclasses.fields(before):
        if spec.name in except_:
            continue
        assert getattr(after, spec.name) == getattr(before, spec.name), spec.name
    assert after.spec == before.spec


def test_every_field_of_tool_survives_requires_approval_idempotent_and_as_tool() -> None:
    tool = _every_field_set()
    plain = dataclasses.replace(tool, requires_approval=False, idempotent=False)
    _same_fields(plain, requires_approval(plain), except_={"requires_approval"})
    assert requires_approval(plain).requires_approval
    _same_fields(plain, idempotent(plain), except_={"idempotent"})
    assert is_idempotent(idempotent(plain))
    _same_fields(tool, as_tool(tool, timeout=3.0), except_={"timeout"})
    _same_fields(tool, as_tool(tool), except_=set())


def test_a_function_marked_idempotent_makes_an_idempotent_tool() -> None:
    @idempotent
    def refresh() -> str:
        """Refresh."""
        return "ok"

    assert as_tool(refresh).idempotent and is_idempotent(as_tool(refresh))
    assert not as_tool(lookup).idempotent


def test_every_field_of_a_subagent_tool_survives_the_wrappers() -> None:
    from zett_agent import SubAgent

    child = ScriptedModel(reply("done"))
    from zett_agent import Agent

    sub = SubAgent(Agent(child), name="helper", description="Helps.")
    tool = sub.tool
    for wrapped, changed in (
        (requires_approval(tool), "requires_approval"),
        (idempotent(tool), "idempotent"),
        (as_tool(tool, timeout=5.0), "timeout"),
    ):
        assert type(wrapped) is type(tool)
        _same_fields(tool, wrapped, except_={changed})
        assert wrapped.subagent is sub  # type: ignore[attr-defined]


def test_every_field_of_an_mcp_tool_survives_the_wrappers() -> None:
    pytest.importorskip("mcp")
    import mcp_types

    from zett_agent.mcp._convert import make_tool

    async def send(name: str, arguments: dict[str, Any]) -> Any:
        raise AssertionError("not called")

    server_tool = mcp_types.Tool(
        name="search",
        description="Search.",
        inputSchema={"type": "object", "properties": {"q": {"type": "string", "format": "uri"}}},
    )
    tool = make_tool(
        server_tool,
        "search",
        server="beta",
        send=send,
        protocol="gemini",
        timeout=7.0,
        max_result_chars=10,
    )
    for wrapped, changed in (
        (requires_approval(tool), "requires_approval"),
        (idempotent(tool), "idempotent"),
        (as_tool(tool, timeout=1.0), "timeout"),
    ):
        assert type(wrapped) is type(tool)
        _same_fields(tool, wrapped, except_={changed})


def test_a_durable_run_uses_the_agents_own_tools() -> None:
    pytest.importorskip("dbos")
    from zett_agent import Agent
    from zett_agent.durable import DurableAgent

    tool = dataclasses.replace(_every_field_set(), idempotent=False)
    agent = Agent(ScriptedModel(), tools=[tool, delete_all])
    durable = DurableAgent(agent, ":memory:", name="gate-fields", idempotent_tools=["delete_all"])
    try:
        step_tools = durable.step_agent().tools
        assert step_tools["lookup"] is tool  # the same object: nothing rebuilt
        assert step_tools["delete_all"].idempotent
        _same_fields(agent.tools["delete_all"], step_tools["delete_all"], except_={"idempotent"})
        assert math.isfinite(step_tools["lookup"].timeout or 0)
    finally:
        anyio.run(durable.aclose)
