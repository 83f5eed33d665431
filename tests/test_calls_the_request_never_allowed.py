"""A call the request did not allow never runs, on every protocol, streamed and as a
body, through the public API and a real socket: a call under ``tool_choice="none"``
(Gemini answers such a request with ``UNEXPECTED_TOOL_CALL`` and the call:
``tests/cases/wire-2/gemini_stream_unexpected_tool_call.sse``; the others are
hand-written from each wire's documentation), a call of a tool the request did not
offer, and a call of an offered tool when the request forced another. Each gets an
error result that says why, the model gets its turn, ``stop.detail
["not_offered_tool_calls"]`` names it, and ``MODEL_STOPPED`` stays for abnormal stops.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handwritten_wire import (
    A_START,
    a_body,
    a_end,
    a_tool,
    body,
    c_body,
    c_call,
    c_chunk,
    c_fn,
    data,
    follow_up,
    g,
    named,
    ndjson,
    o,
    r_item,
    r_response,
    r_terminal,
)
from zett_agent import (
    AgentEventType,
    AgentRunConfig,
    AssistantMessage,
    Model,
    ToolResultMessage,
    create_agent,
)
from zett_agent.testing import ReplayServer, Reply
from zett_agent.tools import NOT_OFFERED_TOOL_CALLS
from zett_agent.vendors import VENDORS

CASE = Path(__file__).parent / "cases" / "wire-2" / "gemini_stream_unexpected_tool_call.sse"
RAN: list[str] = []
E = AgentEventType


def delete_all(confirm: bool = False) -> str:
    """Delete everything."""
    RAN.append("delete_all")
    return "deleted everything"


def lookup(query: str) -> str:
    """Look something up."""
    RAN.append(f"lookup:{query}")
    return "found"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def answer_with_calls(vendor: str, calls: list[tuple[str, dict[str, Any]]], stream: bool) -> Reply:
    """One answer calling each ``(name, arguments)``, in the vendor's wire, as it
    documents a tool request (Gemini: STOP with functionCall parts)."""
    ids = [f"call_{n}" for n in range(len(calls))]
    match VENDORS[vendor].protocol:
        case "anthropic":
            if stream:
                blocks = [e for n, (name, args) in enumerate(calls)
                          for e in a_tool(n, ids[n], name, json.dumps(args))]  # fmt: skip
                return named(A_START, *blocks, *a_end("tool_use"))
            return a_body([{"type": "tool_use", "id": ids[n], "name": name, "input": args}
                           for n, (name, args) in enumerate(calls)], "tool_use")  # fmt: skip
        case "openai-responses":
            items = [r_item(f"fc_{n}", ids[n], name, json.dumps(args), "completed")
                     for n, (name, args) in enumerate(calls)]  # fmt: skip
            if stream:
                done = [{"type": "response.output_item.done", "output_index": n, "item": item}
                        for n, item in enumerate(items)]  # fmt: skip
                return named(*done, r_terminal("completed", r_response("completed", items)))
            return body(r_response("completed", items))
        case "gemini":
            parts = [{"functionCall": {"name": name, "args": args}} for name, args in calls]
            return data(g(parts, "STOP")) if stream else body(g(parts, "STOP"))
        case "ollama":
            wire = [{"function": {"name": name, "arguments": args}} for name, args in calls]
            final = o({"content": "", "tool_calls": wire}, done=True, reason="stop")
            return ndjson(final) if stream else body(final)
        case _:
            if stream:
                chunks = [c_call(n, ids[n], name, json.dumps(args))
                          for n, (name, args) in enumerate(calls)]  # fmt: skip
                return data(*chunks, c_chunk({}, "tool_calls"), "[DONE]")
            return c_body({"content": None, "tool_calls": [
                c_fn(ids[n], name, json.dumps(args)) for n, (name, args) in enumerate(calls)]},
                "tool_calls")  # fmt: skip


def sent_results(request: dict[str, Any]) -> list[str]:
    """The text of every tool result a request carried (any protocol)."""
    found: list[str] = []
    stack: list[Any] = [request]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in ("tool_result", "function_call_output", "functionResponse", "tool"):
                if item.get("type") == key or item.get("role") == key or key in item:
                    value = item.get("content") or item.get("output") or item.get(key)
                    found.append(json.dumps(value) if not isinstance(value, str) else value)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


async def run(
    vendor: str, first: Reply, stream: bool, tool_choice: str | None
) -> tuple[list[Any], list[Any], ReplayServer]:
    replies = [first, follow_up(vendor, stream)]
    with ReplayServer(replies) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
        config = AgentRunConfig("gate", tool_choice=tool_choice)
        agent = await create_agent(model, config, tools=[delete_all, lookup])
        events = [event async for event in agent.stream("clean up")]
        messages = list(agent.messages)
        await agent.aclose()
    return events, messages, server


VENDOR_NAMES = ["anthropic", "openai", "openai-responses", "google", "vertex", "ollama",
                "deepseek", "openrouter"]  # fmt: skip
STREAMS = pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])


def check_not_run(
    events: list[Any], messages: list[Any], server: ReplayServer, names: list[str], says: str
) -> None:
    assert RAN == [] or all(not r.startswith(tuple(names)) for r in RAN)
    answer = next(m for m in messages if isinstance(m, AssistantMessage))
    assert answer.stop is not None
    assert answer.stop.detail[NOT_OFFERED_TOOL_CALLS] == names
    results = [m for m in messages if isinstance(m, ToolResultMessage) and m.name in names]
    assert [r.is_error for r in results] == [True] * len(names)
    assert all(says in r.content for r in results), [r.content for r in results]
    assert len(server.requests) == 2  # the model got its turn
    assert any(says in text for text in sent_results(server.requests[1].json))
    stopped = [e.stop for e in events if e.type is E.MODEL_STOPPED]
    assert all(s is not None and not s.ok for s in stopped), stopped  # abnormal stops only
    final = events[-1]
    assert final.type is E.RUN_COMPLETED and final.message is not None
    assert final.message.text == "ok"


@STREAMS
@pytest.mark.parametrize("vendor", VENDOR_NAMES)
async def test_a_call_under_tool_choice_none_never_runs(vendor: str, stream: bool) -> None:
    first = answer_with_calls(vendor, [("delete_all", {"confirm": True})], stream)
    events, messages, server = await run(vendor, first, stream, "none")
    check_not_run(events, messages, server, ["delete_all"], "tool_choice none")
    assert RAN == []


@STREAMS
@pytest.mark.parametrize("vendor", ["google", "vertex", "vertex-express"])
async def test_gemini_unexpected_tool_call_case(vendor: str, stream: bool) -> None:
    chunks = [
        json.loads(line[6:]) for line in CASE.read_text().splitlines() if line[:6] == "data: "
    ]
    first = Reply.file(CASE) if stream else Reply.json(chunks[0])
    events, messages, server = await run(vendor, first, stream, "none")
    check_not_run(events, messages, server, ["delete_all"], "tool_choice none")
    answer = next(m for m in messages if isinstance(m, AssistantMessage))
    assert answer.stop is not None and answer.stop.raw == "UNEXPECTED_TOOL_CALL"
    assert "function calling is disabled" in (answer.stop.message or "")


@STREAMS
@pytest.mark.parametrize("vendor", VENDOR_NAMES)
async def test_a_call_of_a_tool_never_offered_never_runs(vendor: str, stream: bool) -> None:
    first = answer_with_calls(vendor, [("rm_rf", {"path": "/"})], stream)
    events, messages, server = await run(vendor, first, stream, None)
    check_not_run(events, messages, server, ["rm_rf"], "did not offer it")
    assert RAN == []


@STREAMS
@pytest.mark.parametrize("vendor", VENDOR_NAMES)
async def test_a_forced_tool_runs_and_another_offered_one_does_not(
    vendor: str, stream: bool
) -> None:
    calls = [("lookup", {"query": "alpha"}), ("delete_all", {"confirm": True})]
    events, messages, server = await run(
        vendor, answer_with_calls(vendor, calls, stream), stream, "lookup"
    )
    check_not_run(events, messages, server, ["delete_all"], "required a call of 'lookup'")
    assert RAN == ["lookup:alpha"]
