"""What an MCP server asks of zett during a tool call, in both protocol eras of
``mcp`` 2.3.0 (the 2025-11-25 handshake, where the server sends requests mid-call,
and 2026-07-28, where they travel inside the tool's result): elicitation (form and
URL), sampling through zett's model layer with zett's stop vocabulary, roots,
progress and log messages as events. A real server over stdio
(``tests/mcp_servers/asking_server.py``) and an agent whose calls pass the gate."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from mcp_helpers import SERVERS, need_mcp
from zett_agent import AgentEventType, StopInfo, StopReason, ToolCall, create_agent
from zett_agent.testing import ScriptedModel, reply

pytestmark = [pytest.mark.mcp, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ASKING = SERVERS / "asking_server.py"
ERAS = ["legacy", "auto"]  # auto negotiates 2026-07-28 with this server


def server(mode: str, **options: Any) -> Any:
    from zett_agent.mcp import MCPServer

    return MCPServer.stdio(sys.executable, "-W", "ignore", str(ASKING), mode=mode, **options)


async def run_calls(tools: Any, calls: Sequence[ToolCall]) -> list[Any]:
    """The events of a run whose model calls ``calls`` and then says "ok"."""
    agent = await create_agent(ScriptedModel(reply(tool_calls=list(calls)), reply("ok")))
    tools.attach(agent)
    events = [event async for event in agent.stream("go")]
    await agent.aclose()
    return events


def results(events: list[Any]) -> dict[str, str]:
    return {
        e.tool_call.id: e.tool_result.content
        for e in events
        if e.type is AgentEventType.TOOL_CALL_COMPLETED
    }


@pytest.mark.parametrize("mode", ERAS)
async def test_a_form_elicitation_reaches_the_host_with_its_defaults(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import ElicitationResponse, MCPTools

    asked: list[Any] = []

    async def elicit(request: Any) -> Any:
        asked.append(request)
        return ElicitationResponse.accept({**request.defaults, "name": "Grace"})

    async with MCPTools([server(mode)], elicitation=elicit) as tools:
        events = await run_calls(tools, [ToolCall("c1", "ask_name", "{}")])
    assert results(events)["c1"] == "hello Grace (36)"
    [request] = asked
    assert request.mode == "form" and request.message == "What is your name?"
    assert request.defaults == {"name": "Ada", "age": 36}
    assert [f.name for f in request.fields] == ["name", "age"]
    assert request.tool == "ask_name" and request.call_id == "c1"
    [event] = [e for e in events if e.type is AgentEventType.TOOL_INPUT_REQUESTED]
    assert event.tool_call.id == "c1" and event.data["id"] == request.id
    assert event.data["fields"][1] == {
        "name": "age", "type": "integer", "title": "Age", "description": "Your age",
        "required": False, "default": 36, "choices": [], "multiple": False,
    }  # fmt: skip


async def test_a_url_elicitation_reaches_the_host() -> None:
    need_mcp()
    from zett_agent.mcp import ElicitationResponse, MCPTools

    asked: list[Any] = []

    async def elicit(request: Any) -> Any:
        asked.append(request)
        return ElicitationResponse.accept()

    async with MCPTools([server("legacy")], elicitation=elicit) as tools:
        events = await run_calls(tools, [ToolCall("c1", "ask_url", "{}")])
    assert results(events)["c1"] == "accept"
    assert asked[0].mode == "url" and asked[0].url == "https://example.com/sign-in"


@pytest.mark.realclock  # a real process and socket: a wall-clock bound, wide margin
@pytest.mark.parametrize("mode", ERAS)
async def test_without_a_way_to_ask_the_request_is_declined_at_once(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    started = time.monotonic()
    async with MCPTools([server(mode, timeout=300)]) as tools:
        events = await run_calls(tools, [ToolCall("c1", "ask_name", "{}")])
    assert time.monotonic() - started < 90  # not the call's 300 s timeout
    assert results(events)["c1"] == "decline"
    [event] = [e for e in events if e.type is AgentEventType.TOOL_INPUT_REQUESTED]
    assert event.data["message"] == "What is your name?"  # the host still hears of it


@pytest.mark.realclock  # a real server over stdio: the person's 7.5 s wait is real
@pytest.mark.parametrize("mode", ERAS)
async def test_a_persons_wait_is_not_counted_against_the_call_timeout(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import ElicitationResponse, MCPTools

    async def slow_person(request: Any) -> Any:
        await anyio.sleep(7.5)  # longer than the call's timeout of 5 s (room for load)
        return ElicitationResponse.accept(request.defaults)

    async with MCPTools([server(mode, timeout=5)], elicitation=slow_person) as tools:
        events = await run_calls(tools, [ToolCall("c1", "ask_name", "{}")])
    assert results(events)["c1"] == "hello Ada (36)"


@pytest.mark.realclock  # a real process and socket: a wall-clock bound, wide margin
async def test_the_wait_is_bounded_by_elicitation_timeout() -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async def nobody_answers(request: Any) -> Any:
        await anyio.sleep(3600)
        raise AssertionError("never")

    started = time.monotonic()
    async with MCPTools(
        [server("legacy")], elicitation=nobody_answers, elicitation_timeout=1
    ) as tools:
        events = await run_calls(tools, [ToolCall("c1", "ask_name", "{}")])
    assert results(events)["c1"] == "cancel"
    assert time.monotonic() - started < 90  # not the person's hour


async def test_elicitation_outside_a_gated_tool_call_is_declined() -> None:
    need_mcp()
    from zett_agent.mcp import ElicitationResponse
    from zett_agent.mcp._asks import Asks

    async def elicit(request: Any) -> Any:
        raise AssertionError("a person must not be asked outside a tool call")

    class Idle:  # a connection with no tools/call in flight
        server = server("legacy")

        def current_call(self) -> None:
            return None

    answer = Asks(elicit=elicit)._elicitation(Idle())  # type: ignore[arg-type]
    result = await answer(None, None)
    assert result.action == "decline"
    assert ElicitationResponse.decline().action == "decline"


@pytest.mark.parametrize("mode", ERAS)
async def test_sampling_goes_through_zetts_model_and_says_why_it_stopped(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    refused = StopInfo(StopReason.REFUSAL, raw="refusal", category="cyber")
    sampler = ScriptedModel(reply("not that", stop=refused))
    tools = MCPTools([server(mode, sampling=1, sampling_max_tokens=99)], sampling_model=sampler)
    async with tools:
        events = await run_calls(tools, [ToolCall("c1", "summarize", '{"text": "a long text"}')])
    answer = json.loads(results(events)["c1"])
    assert answer["text"] == "not that"
    assert answer["stop"] == "refusal"  # zett's own word: the field is an open string
    assert answer["meta"]["zett-agent/stop"] == {
        "reason": "refusal", "raw": "refusal", "category": "cyber"
    }  # fmt: skip
    [request] = sampler.requests
    assert request.max_tokens == 99  # the server asked for 50,000
    assert [type(m).__name__ for m in request.messages] == ["SystemMessage", "UserMessage"]
    assert request.messages[1].content == "a long text"


@pytest.mark.parametrize("mode", ERAS)
async def test_sampling_is_opt_in(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    sampler = ScriptedModel()
    async with MCPTools([server(mode)], sampling_model=sampler) as tools:  # sampling=0
        events = await run_calls(tools, [ToolCall("c1", "summarize", '{"text": "x"}')])
    assert "stop" not in results(events)["c1"]
    assert sampler.requests == []


@pytest.mark.parametrize(
    ("stop", "version", "expected"),
    [
        (StopInfo(StopReason.END_TURN, raw="end_turn"), None, "endTurn"),
        (StopInfo(StopReason.END_TURN, raw="stop_sequence"), None, "stopSequence"),
        (
            StopInfo(StopReason.END_TURN, raw="stop", detail={"stop_sequence": "##"}),
            None,
            "stopSequence",
        ),
        (StopInfo(StopReason.MAX_OUTPUT, raw="length"), None, "maxTokens"),
        (StopInfo(StopReason.TOOL_USE, raw="tool_use"), "2025-11-25", "toolUse"),
        (StopInfo(StopReason.TOOL_USE, raw="tool_use"), "2025-06-18", "tool_use"),
        (StopInfo(StopReason.CONTEXT_FULL), None, "context_full"),
        (StopInfo(StopReason.REFUSAL), None, "refusal"),
        (StopInfo(StopReason.INTERRUPTED), None, "interrupted"),
        (StopInfo(StopReason.PAUSED), None, "paused"),
        (StopInfo(StopReason.OTHER, raw="7"), None, "other"),
    ],
)
def test_every_stop_reason_has_an_mcp_stop_reason(
    stop: StopInfo, version: str | None, expected: str
) -> None:
    need_mcp()
    from zett_agent.mcp._sampling import stop_reason

    assert stop_reason(stop, version) == expected


def test_the_stop_table_covers_every_reason() -> None:
    need_mcp()
    from zett_agent.mcp._sampling import stop_reason

    mapped = {stop_reason(StopInfo(reason)) for reason in StopReason}
    assert len(mapped) == len(StopReason)


@pytest.mark.parametrize("mode", ERAS)
async def test_roots_are_declared_per_server(mode: str, tmp_path: Any) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async with MCPTools([server(mode, roots=[str(tmp_path), "file:///srv/data"])]) as tools:
        events = await run_calls(tools, [ToolCall("c1", "where", "{}")])
    assert results(events)["c1"] == f"{tmp_path.as_uri()} file:///srv/data"


@pytest.mark.parametrize("mode", ERAS)
async def test_progress_and_log_messages_become_events_of_the_call(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async with MCPTools([server(mode, log_level="info")]) as tools:
        events = await run_calls(tools, [ToolCall("c1", "slow", "{}")])
    kinds = [e.type for e in events]
    started = kinds.index(AgentEventType.TOOL_CALL_STARTED)
    completed = kinds.index(AgentEventType.TOOL_CALL_COMPLETED)
    progress = [e for e in events if e.type is AgentEventType.TOOL_PROGRESS]
    logs = [e for e in events if e.type is AgentEventType.TOOL_LOG]
    assert [(e.data["progress"], e.data["total"], e.data["message"]) for e in progress] == [
        (1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")
    ]  # fmt: skip
    assert [(e.data["level"], e.data["data"]) for e in logs] == [("info", "halfway there")]
    assert all(started < kinds.index(e.type) < completed for e in progress + logs)
    assert all(e.tool_call.id == "c1" for e in progress + logs)
    assert progress[0].to_dict()["data"]["message"] == "step 1"
