"""Untrusted structure (issue 12): JSON nested deeper than Python can handle, in an
event, a tool's arguments or a stored message, never lets ``RecursionError`` out
and never loses the answer; and any message the decoders can produce round-trips
through the SQLite store (hypothesis)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from deep_json import anthropic_deep_tool_input, openai_deep_json_event
from stores import STORE_KINDS, open_store
from zett_agent import AgentClient, Model, StopReason, create_agent
from zett_agent._messages import (
    MAX_JSON_DEPTH,
    TOO_DEEP,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from zett_agent.errors import ZettError
from zett_agent.protocols import get_protocol
from zett_agent.sessions import SQLiteSessionStore
from zett_agent.stop import StopInfo
from zett_agent.testing import ReplayServer, Reply
from zett_agent.tools import as_tool
from zett_agent.vendors import get_vendor

RAN: list[Any] = []
SRC = Path(__file__).resolve().parents[1] / "src"


def archive(items: list[Any]) -> str:
    """Archive items."""
    RAN.append(items)
    return "archived"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def sse(body: bytes) -> Reply:
    return Reply([body], content_type="text/event-stream")


def anthropic_done() -> Reply:
    events = [
        {"type": "message_start", "message": {"id": "m2", "type": "message", "role": "assistant",
         "model": "m", "content": [], "stop_reason": None,
         "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "done"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return Reply.sse((event["type"], event) for event in events)


def deep_list(depth: int) -> list[Any]:
    """``depth`` lists inside each other, built without recursion."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def depth_of(value: Any) -> int:
    depth = 0
    while isinstance(value, list | dict):
        depth += 1
        value = next(iter(value.values() if isinstance(value, dict) else value), None)
    return depth


async def test_openai_event_nested_too_deep_is_counted_as_malformed_and_the_run_finishes() -> None:
    with ReplayServer([sse(openai_deep_json_event())]) as server:
        agent = await create_agent(Model("openai", "m", base_url=server.url, api_key="k"))
        message = await agent.run("hi")
        await agent.aclose()
    assert len(server.requests) == 1  # not retried
    assert message.stop is not None and message.stop.detail["malformed_events"] == 1


@pytest.mark.parametrize("depth", [300, 10_000])
async def test_anthropic_tool_input_nested_too_deep_is_answered_and_the_answer_stored(
    tmp_path: Path, depth: int
) -> None:
    """300 levels parse but pydantic refused to store them (the answer was lost);
    10,000 levels raised RecursionError out of the decoder."""
    path = tmp_path / "s.sqlite3"
    with ReplayServer([sse(anthropic_deep_tool_input(depth)), anthropic_done()]) as server:
        agent = await create_agent(
            Model("anthropic", "m", base_url=server.url, api_key="k"), tools=[archive]
        )
        async with AgentClient(agent, path, session_id="s") as client:
            final = await client.run("archive it")
        await agent.aclose()
    assert RAN == [] and final.text == "done" and final.stop is None
    async with SQLiteSessionStore(path) as store:  # re-read by a fresh store
        stored = await store.load("s")
    assert [type(m) for m in stored] == [
        UserMessage, AssistantMessage, ToolResultMessage, AssistantMessage
    ]  # fmt: skip
    answer, result = stored[1], stored[2]
    assert isinstance(answer, AssistantMessage) and isinstance(result, ToolResultMessage)
    assert answer.tool_calls[0].id == "toolu_d" and len(answer.tool_calls[0].arguments) > depth
    assert result.is_error and f"nested deeper than {MAX_JSON_DEPTH} levels" in result.content
    # the next request carried the answer and its error result, as valid JSON
    sent = server.requests[1].json["messages"]
    assert sent[1]["content"][0]["id"] == "toolu_d"
    assert sent[2]["content"][0]["tool_use_id"] == "toolu_d"
    assert sent[2]["content"][0]["is_error"] is True


async def test_tool_arguments_deeper_than_python_can_parse_get_an_error_result() -> None:
    call = ToolCall("c1", "archive", '{"items": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = await as_tool(archive).call(call)
    assert result.is_error and "nested deeper" in result.content and RAN == []
    assert call.arguments_object() == {}


async def test_a_stored_message_nested_deeper_than_python_handles_is_stored_and_loads(
    tmp_path: Path,
) -> None:
    record = {"protocol": "x", "content": deep_list(5_000)}
    detail = {"raw_event": deep_list(2_000), "n": float("inf")}
    stop = StopInfo(StopReason.OTHER, raw="x", detail=detail)
    message = AssistantMessage("kept", stop=stop, provider_record=record)
    async with SQLiteSessionStore(tmp_path / "s.sqlite3") as store:
        await store.append("s", message)
        (loaded,) = await store.load("s")
    assert isinstance(loaded, AssistantMessage) and loaded.text == "kept"
    assert loaded.provider_record is not None and loaded.stop is not None
    assert depth_of(loaded.provider_record["content"]) == MAX_JSON_DEPTH - 1
    assert TOO_DEEP in json.dumps(loaded.provider_record)
    assert loaded.stop.detail["n"] is None  # strict JSON has no Infinity
    assert loaded == message.storable()


# ---------------------------------------------------------------- the store fuzz

PROTOCOLS = [
    ("anthropic", "anthropic"),
    ("openai-chat", "openrouter"),
    ("openai-chat", "deepseek"),
    ("openai-responses", "openai-responses"),
    ("gemini", "google"),
    ("ollama", "ollama"),
]
KEYS = [
    "type", "choices", "delta", "message", "content", "tool_calls", "index", "id", "function",
    "name", "arguments", "finish_reason", "native_finish_reason", "error", "usage", "refusal",
    "candidates", "finishReason", "parts", "functionCall", "args", "promptFeedback", "output",
    "status", "incomplete_details", "reason", "item", "item_id", "output_index", "done",
    "done_reason", "stop_reason", "stop_details", "content_block", "partial_json", "text",
    "thinking", "signature", "citation", "citations", "reasoning_content", "thought", "input",
    "category", "code", "metadata", "finishMessage", "safetyRatings", "input_tokens",
]  # fmt: skip
WORDS = [
    "", "stop", "tool_calls", "tool_use", "text", "message_start", "content_block_start",
    "content_block_delta", "message_delta", "text_delta", "thinking_delta", "input_json_delta",
    "function_call", "response.completed", "response.output_item.done", "refusal", "length",
    "\ud800", "a\udfffb", "\x00", "é漢🙂", "max_tokens", "end_turn", "SAFETY", "STOP",
]  # fmt: skip
EVENTS = [
    "message", "message_start", "content_block_start", "content_block_delta",
    "content_block_stop", "message_delta", "message_stop", "response.output_item.added",
    "response.output_item.done", "response.output_text.delta", "response.completed",
    "response.incomplete",
]  # fmt: skip
atoms = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 2**70), st.floats(),
    st.sampled_from(WORDS), st.text(max_size=6),
    st.integers(1, 400).map(deep_list),
)  # fmt: skip
shapes = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=14,
)
events = st.lists(st.tuples(st.sampled_from(EVENTS), shapes), min_size=1, max_size=6)
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DEEP_INPUT = [
    ("content_block_start", {"type": "content_block_start", "index": 0,
     "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
     "delta": {"type": "input_json_delta", "partial_json": json.dumps({"a": deep_list(300)})}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
    ("message_stop", {"type": "message_stop"}),
]  # fmt: skip
INFINITY = [("content_block_start", {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": "x", "score": float("inf")}})]  # fmt: skip
SURROGATE = [("message", {"message": {"content": "\ud800"}, "done": True})]


def decoded(index: int, stream: list[tuple[str, Any]], body: bool) -> AssistantMessage | None:
    """The message a decoder makes of ``stream`` (its events, or with ``body`` the
    data of its first event as a whole non-streamed body); None for a typed error."""
    protocol, vendor = PROTOCOLS[index]
    decoder = get_protocol(protocol).decoder(get_vendor(vendor))
    try:
        if body:
            return decoder.decode_body(json.dumps(stream[0][1]).encode()).to_message(vendor)
        for name, data in stream:
            text = json.dumps(data)  # as a provider would send it: \ud800 escaped
            if protocol == "ollama":
                decoder.feed_line(text)
            else:
                decoder.feed_sse(name, text)
        return decoder.finish().to_message(vendor)
    except ZettError:
        return None


@FUZZ
@given(st.integers(0, len(PROTOCOLS) - 1), events, st.booleans())
@example(0, DEEP_INPUT, False)  # pydantic refused to serialize it: the answer was lost
@example(0, INFINITY, False)  # Infinity is read by json.loads, refused by the store
@example(5, SURROGATE, False)  # a lone surrogate could not be written to SQLite
@example(0, [("message", {"content": [{"type": "text", "text": "\ud800"}]})], True)
def test_any_message_the_decoders_produce_round_trips_through_sqlite(
    index: int, stream: list[tuple[str, Any]], body: bool
) -> None:
    message = decoded(index, stream, body)
    if message is None:
        return
    assert message_from_dict(json.loads(json.dumps(message_to_dict(message)))) == message

    async def round_trip() -> list[Any]:
        async with SQLiteSessionStore(":memory:") as store:
            await store.append("s", message)
            return await store.load("s")

    assert anyio.run(round_trip) == [message]


DEEP_ARGUMENTS = '{"items": ' + "[" * 50_000 + "]" * 50_000 + "}"


@pytest.mark.parametrize("reason", [StopReason.TOOL_USE, StopReason.MAX_OUTPUT])
async def test_deep_arguments_under_any_stop_and_with_the_convergence_guard(
    reason: StopReason,
) -> None:
    """The cut-off check (MAX_OUTPUT) and the convergence guard parse arguments
    too; neither lets RecursionError out."""
    from zett_agent.extensions import ConvergenceGuard
    from zett_agent.testing import ScriptedModel, reply

    deep = ToolCall("c1", "archive", DEEP_ARGUMENTS)
    model = ScriptedModel(reply("", [deep], reason), reply("done"))
    agent = await create_agent(model, tools=[archive], extensions=[ConvergenceGuard()])
    final = await agent.run("go")
    assert final.text == "done" and RAN == []
    (result,) = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error


@pytest.mark.parametrize(
    ("case", "outcome"),
    [
        ("openai_deep_json_event", "stop=other stored=2"),
        ("anthropic_deep_tool_input", "stop=none stored=4"),
    ],
)
def test_deep_json_cases_run_in_bounded_memory_without_blocking_the_loop(
    case: str, outcome: str
) -> None:
    """In a fresh process (RSS is its own): the run ends as it should, RSS grows by
    well under 100 MB, and the loop's thread never computes 0.5 s (CPU time, which a
    loaded machine does not stretch) without letting a heartbeat coroutine run."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), *sys.path])}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "deep_json.py"), case],
        capture_output=True, text=True, check=True, env=env, timeout=120,
    )  # fmt: skip
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert row["outcome"] == outcome
    assert row["peak_mb_above_start"] < 100
    assert row["max_stall_ms"] < 500


WINDOW = range(850, 1001)  # parsed at one stack depth, written again at another


@pytest.mark.parametrize("index", range(len(PROTOCOLS)))
def test_values_just_deep_enough_to_parse_never_raise_recursion_error(index: int) -> None:
    """A value that ``json.loads`` could just read may be too deep for a later
    ``json.dumps`` a few frames further down; no depth lets ``RecursionError`` out,
    and a call carrying one never runs with empty arguments."""
    protocol, vendor = PROTOCOLS[index]
    for depth in WINDOW:
        deep = "[" * depth + "]" * depth
        tool_use = (
            '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use",'
            f'"id":"t","name":"f","input":{{"a":{deep}}}}}}}'
        )
        events = {
            "anthropic": [
                ("content_block_start", tool_use),
                ("content_block_stop", '{"type":"content_block_stop","index":0}'),
            ],
            "openai-chat": [("message", '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
                             f'"id":"c","function":{{"name":"f","arguments":{{"a":{deep}}}}}}}]}}}}]}}')],
            "gemini": [("message", '{"candidates":[{"content":{"parts":[{"functionCall":'
                        f'{{"name":"f","args":{{"a":{deep}}}}}}}]}}}}]}}')],
            "openai-responses": [("response.output_item.done",
                                  '{"type":"response.output_item.done","output_index":0,'
                                  '"item":{"type":"function_call","call_id":"c","name":"f",'
                                  f'"arguments":"{{\\"k\\":1}}","x":{deep}}}}}')],
            "ollama": [("", '{"message":{"tool_calls":[{"function":{"name":"f","arguments":'
                        f'{{"a":{deep}}}}}}}]}},"done":true}}')],
        }[protocol]  # fmt: skip
        decoder = get_protocol(protocol).decoder(get_vendor(vendor))
        try:
            for name, data in events:
                if protocol == "ollama":
                    decoder.feed_line(data)
                else:
                    decoder.feed_sse(name, data)
            message = decoder.finish().to_message(vendor)
        except ZettError:
            continue
        for call in message.tool_calls:
            assert call.arguments not in ("", "{}"), (protocol, depth)
        assert anyio.run(store_and_load, message) == [message.storable()]


async def store_and_load(message: AssistantMessage) -> list[Any]:
    async with SQLiteSessionStore(":memory:") as store:
        await store.append("s", message)
        return await store.load("s")


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_hostile_messages_round_trip_through_every_store(tmp_path: Path, kind: str) -> None:
    """The fuzz's findings, through every store kind (PostgreSQL too when a server is set)."""
    messages = [
        m
        for m in (
            decoded(0, DEEP_INPUT, False),
            decoded(0, INFINITY, False),
            decoded(5, SURROGATE, False),
        )
        if m is not None
    ]
    messages.append(AssistantMessage("nul \x00 and \ud800", provider_record={"x": deep_list(500)}))
    async with open_store(kind, tmp_path) as store:
        for message in messages:
            await store.append("s", message)
        loaded = await store.load("s")
    assert loaded == [m.storable() for m in messages] and len(loaded) == 4
