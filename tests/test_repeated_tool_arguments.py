"""Streams that repeat a tool call's arguments, on every protocol that streams argument
text (Anthropic ``input_json_delta``, every Chat vendor row's ``function.arguments``,
Responses ``function_call_arguments.delta``), through an agent and a real socket.
(Gemini and Ollama send calls whole: a Gemini chunk repeated after the finish is read
once, ``tests/test_gemini_reads_to_the_end.py``; bodies carry whole arguments.)

* the case ``tests/cases/wire-2/openai_stream_resends_whole_call.sse``: the relay sends
  the whole call again at the end; it runs once with ``{"query": "paris"}`` (it used to
  become ``{…}{…}``: never run, the model told "not valid JSON", the step normal);
* an exact repeat and cumulative fragments run once, with the arguments once, and the
  replayed answer carries them once;
* an ambiguous repeat (a complete object followed by another) is never guessed at: no
  call of the answer runs, it is INTERRUPTED and ``stop.detail`` says which and why;
* text that parses is never touched, whatever its fragments look like.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handwritten_wire import (
    A_START,
    a_end,
    a_text,
    c_call,
    c_chunk,
    data,
    named,
    r_message,
    r_response,
    r_terminal,
    r_text,
)
from zett_agent import (
    AgentEventType,
    AssistantMessage,
    Model,
    StopReason,
    ToolResultMessage,
    create_agent,
)
from zett_agent._exchange import AMBIGUOUS_TOOL_ARGUMENTS
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import VENDORS

CASE = Path(__file__).parent / "cases" / "wire-2" / "openai_stream_resends_whole_call.sse"
RAN: list[str] = []
E = AgentEventType


def lookup(query: str) -> str:
    """Look something up."""
    RAN.append(query)
    return f"found {query}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


# ---------------------------------------------------------------- one call, in fragments


def anthropic(fragments: list[str], stop: str = "tool_use") -> Reply:
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {}},
    }
    deltas = [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": f},
        }
        for f in fragments
    ]
    return named(A_START, start, *deltas, {"type": "content_block_stop", "index": 0},
                 *a_end(stop))  # fmt: skip


def chat(fragments: list[str], stop: str = "tool_calls") -> Reply:
    first, *rest = fragments
    chunks = [c_call(0, "call_1", "lookup", first), *(c_call(0, None, None, f) for f in rest)]
    return data(*chunks, c_chunk({}, stop), "[DONE]")


def responses(fragments: list[str], stop: str = "completed") -> Reply:
    whole = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
             "arguments": "", "status": "in_progress"}  # fmt: skip
    deltas = [{"type": "response.function_call_arguments.delta", "item_id": "fc_1",
               "output_index": 0, "delta": f} for f in fragments]  # fmt: skip
    done = {**whole, "status": "completed", "arguments": "".join(fragments)}
    events = [{"type": "response.output_item.added", "output_index": 0, "item": whole}, *deltas,
              {"type": "response.output_item.done", "output_index": 0, "item": done}]  # fmt: skip
    if stop == "completed":
        return named(*events, r_terminal("completed", r_response("completed", [])))
    return named(*events, r_terminal("incomplete", r_response(
        "incomplete", [], incomplete_details={"reason": "max_output_tokens"})))  # fmt: skip


def answer(vendor: str) -> Reply:
    match VENDORS[vendor].protocol:
        case "anthropic":
            return named(A_START, *a_text("ok"), *a_end("end_turn"))
        case "openai-responses":
            return named(*r_text("ok"), r_terminal("completed", r_response(
                "completed", [r_message("ok")])))  # fmt: skip
        case _:
            return data(c_chunk({"content": "ok"}), c_chunk({}, "stop"), "[DONE]")


WIRE: dict[str, Callable[..., Reply]] = {
    "anthropic": anthropic, "openai-chat": chat, "openai-responses": responses,
}  # fmt: skip
LIMIT = {"anthropic": "max_tokens", "openai-chat": "length", "openai-responses": "incomplete"}
CHAT_VENDORS = sorted(name for name, v in VENDORS.items() if v.protocol == "openai-chat")
VENDOR_NAMES = ["anthropic", "openai-responses", *CHAT_VENDORS]


async def run(vendor: str, first: Reply) -> tuple[list[Any], list[Any], ReplayServer]:
    with ReplayServer([first, answer(vendor)]) as server:
        agent = await create_agent(
            Model(vendor, "m", base_url=server.url, api_key="k"), tools=[lookup]
        )
        events = [event async for event in agent.stream("find alpha")]
        messages = list(agent.messages)
        await agent.aclose()
    return events, messages, server


def replayed_arguments(vendor: str, request: dict[str, Any]) -> list[Any]:
    """The arguments of the replayed call, as the second request sent them."""
    match VENDORS[vendor].protocol:
        case "anthropic":
            return [b["input"] for m in request["messages"] if isinstance(m["content"], list)
                    for b in m["content"] if b.get("type") == "tool_use"]  # fmt: skip
        case "openai-responses":
            return [json.loads(i["arguments"]) for i in request["input"]
                    if i.get("type") == "function_call"]  # fmt: skip
        case _:
            return [json.loads(c["function"]["arguments"]) for m in request["messages"]
                    for c in m.get("tool_calls") or ()]  # fmt: skip


REPEAT = ['{"query": ', '"alpha"}', '{"query": "alpha"}']
CUMULATIVE = ['{"que', '{"query": "al', '{"query": "alpha"}']


@pytest.mark.parametrize(("shape", "fragments"), [("repeated", REPEAT),
                                                  ("cumulative", CUMULATIVE)])  # fmt: skip
@pytest.mark.parametrize("vendor", VENDOR_NAMES)
async def test_a_recognized_repeat_runs_once_and_is_replayed_once(
    vendor: str, shape: str, fragments: list[str]
) -> None:
    events, _, server = await run(vendor, WIRE[VENDORS[vendor].protocol](fragments))
    assert RAN == ["alpha"]
    completed = [e.message for e in events if e.type is E.MODEL_COMPLETED]
    first = completed[0]
    assert isinstance(first, AssistantMessage) and first.stop is None
    assert [json.loads(c.arguments) for c in first.tool_calls] == [{"query": "alpha"}]
    assert replayed_arguments(vendor, server.requests[1].json) == [{"query": "alpha"}]
    assert events[-1].message.text == "ok"  # type: ignore[union-attr]


AMBIGUOUS = {
    "two different objects": ['{"query": "alpha"}', '{"query": "beta"}'],
    "a repeat in several fragments": ['{"query": ', '"alpha"}', '{"query": ', '"alpha"}'],
}


@pytest.mark.parametrize("fragments", list(AMBIGUOUS.values()), ids=list(AMBIGUOUS))
@pytest.mark.parametrize("vendor", ["anthropic", "openai", "openai-responses", "deepseek"])
async def test_an_ambiguous_repeat_is_withheld_and_said(vendor: str, fragments: list[str]) -> None:
    with ReplayServer([WIRE[VENDORS[vendor].protocol](fragments)]) as server:
        agent = await create_agent(
            Model(vendor, "m", base_url=server.url, api_key="k"), tools=[lookup]
        )
        events = [event async for event in agent.stream("find alpha")]
        await agent.aclose()
    assert RAN == [] and len(server.requests) == 1
    [stopped] = [e.stop for e in events if e.type is E.MODEL_STOPPED]
    assert stopped is not None and stopped.reason is StopReason.INTERRUPTED
    assert stopped.detail[AMBIGUOUS_TOOL_ARGUMENTS] == ["lookup"]
    assert stopped.detail["withheld_tool_calls"] == ["lookup"]
    assert stopped.message is not None and "without guessing" in stopped.message
    assert stopped.raw  # the provider's label is kept


@pytest.mark.parametrize("protocol", list(WIRE))
async def test_an_ambiguous_repeat_cut_by_the_limit_stays_a_cut(protocol: str) -> None:
    vendor = {"openai-chat": "openai"}.get(protocol, protocol)
    first = WIRE[protocol](AMBIGUOUS["two different objects"], LIMIT[protocol])
    events, messages, _ = await run(vendor, first)
    assert RAN == []
    [stopped] = [e.stop for e in events if e.type is E.MODEL_STOPPED]
    assert stopped is not None and stopped.reason is StopReason.MAX_OUTPUT
    assert stopped.detail["cut_tool_calls"] == ["lookup"]
    [result] = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and "cut off" in result.content


@pytest.mark.parametrize("protocol", list(WIRE))
async def test_arguments_that_parse_are_never_touched(protocol: str) -> None:
    vendor = {"openai-chat": "openai"}.get(protocol, protocol)
    await run(vendor, WIRE[protocol](['{"query": "ab', "ab", '"}']))
    assert RAN == ["abab"]


async def test_the_case_runs_the_call_once() -> None:
    with ReplayServer([Reply.file(CASE), answer("openai")]) as server:
        agent = await create_agent(
            Model("openai", "m", base_url=server.url, api_key="k"), tools=[lookup]
        )
        message = await agent.run("look up paris")
        await agent.aclose()
    assert RAN == ["paris"] and message.text == "ok"
    assert replayed_arguments("openai", server.requests[1].json) == [{"query": "paris"}]
    result = server.requests[1].json["messages"][-1]
    assert result == {"role": "tool", "tool_call_id": "call_b", "content": "found paris"}
