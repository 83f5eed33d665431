"""Every walk over untrusted structure is iterative or depth-bounded: redaction,
storage, conversion for replay, telemetry attributes, ``zett inspect``'s record, the
serve stream, MCP schema sanitizing. Each is tried sans-IO at depths 90, 100, 101
(either side of ``MAX_JSON_DEPTH``), 600 (parseable by Python's ``json``, deeper than
a recursive walk survives once a few frames are in use) and 10,000; then one agent
run per protocol through a real socket with an API key set, a tool argument 600
levels deep (it crashed with ``RecursionError``: the redactor walked the provider
record recursively). No test here compares deep values with ``==``, which recurses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handwritten_wire import (
    A_START,
    a_end,
    a_text,
    c_call,
    c_chunk,
    data,
    g,
    named,
    ndjson,
    o,
    r_message,
    r_response,
    r_terminal,
    r_text,
)
from zett_agent import AgentClient, Model, ModelRequest, ModelResponse, StopReason, create_agent
from zett_agent._messages import (
    MAX_JSON_DEPTH,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from zett_agent._telemetry import Telemetry
from zett_agent.cli._inspect import response_record
from zett_agent.errors import ProviderHTTPError
from zett_agent.model._redact import REDACTED, Redactor
from zett_agent.protocols import get_protocol
from zett_agent.serve import sse, stop_data
from zett_agent.sessions import SQLiteSessionStore
from zett_agent.stop import StopInfo
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import get_vendor

DEPTHS = [90, 100, 101, 600, 10_000]
SECRET = "sk-test-0123456789abcdef"
PROTOCOLS = ["anthropic", "openai-chat", "openai-responses", "gemini", "ollama"]
VENDOR = {"anthropic": "anthropic", "openai-chat": "openai", "openai-responses":
          "openai-responses", "gemini": "google", "ollama": "ollama"}  # fmt: skip
depths = pytest.mark.parametrize("depth", DEPTHS)


def deep(depth: int, leaf: Any = SECRET) -> dict[str, Any]:
    """``depth`` containers inside each other (dicts and lists by turns, a secret in a
    key at every level), ``leaf`` at the bottom; built without recursion."""
    value: Any = [leaf]
    for level in range(depth - 1):
        value = {f"k{SECRET}": value} if level % 2 else [value, level]
    return value if isinstance(value, dict) else {"top": value}


def strings(value: Any) -> list[str]:
    """Every string in ``value`` (keys included), found without recursion."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def depth_of(value: Any) -> int:
    """The deepest nesting of dicts and lists in ``value``, without recursion."""
    most, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            most = max(most, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return most


# ---------------------------------------------------------------- redaction


@depths
def test_redaction_walks_any_depth(depth: int) -> None:
    value = deep(depth)
    out = Redactor([SECRET]).value(value)
    found = strings(out)
    assert not any(SECRET in s for s in found) and REDACTED in found
    assert depth_of(out) == depth_of(value)
    assert Redactor(["nothing-here-at-all"]).value(value) is value  # nothing to hide: as it was


@depths
def test_redaction_of_a_response_a_stop_and_an_error_at_any_depth(depth: int) -> None:
    redactor = Redactor([SECRET])
    info = StopInfo(StopReason.REFUSAL, "refusal", detail={"error": deep(depth)})
    response = ModelResponse("", (), info, provider_record={"protocol": "x", "c": deep(depth)})
    redacted = redactor.response(response)
    assert not any(SECRET in s for s in strings(redacted.provider_record))
    assert not any(SECRET in s for s in strings(dict(redacted.stop_info.detail)))
    error = ProviderHTTPError("boom", provider="openai", status=500, body=deep(depth))
    assert not any(SECRET in s for s in strings(redactor.error(error).body))


# ---------------------------------------------------------------- storage


@depths
async def test_storage_of_a_deep_record_and_detail(depth: int) -> None:
    stop = StopInfo(StopReason.INTERRUPTED, "x", detail={"error": deep(depth)})
    message = AssistantMessage("hi", stop=stop, provider_record={"protocol": "x", "c": deep(depth)})
    stored = message_to_dict(message)
    assert depth_of(stored) <= MAX_JSON_DEPTH + 3
    loaded = message_from_dict(json.loads(json.dumps(stored)))
    assert isinstance(loaded, AssistantMessage) and loaded.text == "hi"
    async with SQLiteSessionStore(":memory:") as store:
        await store.append("s", message)
        [again] = await store.load("s")
    assert isinstance(again, AssistantMessage) and depth_of(again.provider_record) <= 103


@depths
def test_durable_checkpoints_of_a_deep_answer_and_a_deep_error(depth: int) -> None:
    from zett_agent.durable._checkpoints import (
        decode_model_call,
        encode_model_error,
        encode_model_response,
    )

    info = StopInfo(StopReason.INTERRUPTED, "x", detail={"error": deep(depth)})
    response = ModelResponse("hi", (), info, provider_record={"protocol": "x", "c": deep(depth)})
    back = decode_model_call(encode_model_response(response))
    assert isinstance(back, ModelResponse) and back.text == "hi"
    error = ProviderHTTPError("boom", provider="openai", status=500, body=deep(depth))
    failed = decode_model_call(encode_model_error(error))
    assert isinstance(failed, ProviderHTTPError) and failed.status == 500


# ---------------------------------------------------------------- conversion for replay


@depths
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_deep_answer_is_sent_again_on_every_protocol(protocol: str, depth: int) -> None:
    """An answer holding deep structure (its record, its call's arguments) as the loop
    keeps it, put in the protocol's request and encoded to JSON."""
    arguments = json.dumps({"a": "x"}) if depth > 900 else json.dumps(deep(depth, "v"))
    record: dict[str, Any] = {
        "anthropic": {"protocol": "anthropic", "content": [{"type": "text", "text": "hi",
                      "extra": deep(depth)}]},
        "openai-chat": {"protocol": "openai-chat", "message": {"role": "assistant",
                        "content": "hi", "extra": deep(depth)}},
        "openai-responses": {"protocol": "openai-responses", "output": [r_message("hi") | {
                             "extra": deep(depth)}]},
        "gemini": {"protocol": "gemini", "content": {"role": "model", "parts": [
                   {"text": "hi", "extra": deep(depth)}]}},
        "ollama": {"protocol": "ollama", "extra": deep(depth)},
    }[protocol]  # fmt: skip
    answer = AssistantMessage(
        "hi", (ToolCall("c1", "f", arguments),), provider_record=record
    ).storable()
    messages = [UserMessage("go"), answer, ToolResultMessage("c1", "f", "done")]
    request = ModelRequest("m", messages)
    body = get_protocol(protocol).encode_request(request, get_vendor(VENDOR[protocol])).body
    assert len(json.dumps(body)) > 0
    assert depth_of(dict(body)) <= MAX_JSON_DEPTH + 8


@pytest.mark.parametrize("depth", [*DEPTHS, 990])
def test_gemini_compares_a_repeated_deep_chunk_safely(depth: int) -> None:
    """A finished chunk sent again is compared with the first (read once): the
    comparison itself must not recurse past the limit."""
    decoder = get_protocol("gemini").decoder(get_vendor("google"))
    nested = "[" * depth + "]" * depth
    chunk = ('{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":'
             + nested + '}}}]},"finishReason":"STOP"}]}')  # fmt: skip
    for _ in range(3):
        decoder.feed_sse("message", chunk)
    response = decoder.finish()
    assert len(response.tool_calls) <= 1


# ---------------------------------------------------------------- what is shown


@depths
def test_telemetry_attributes_of_a_deep_stop(depth: int) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(provider)
    detail = {"withheld_tool_calls": ["ok", deep(depth)], "error": deep(depth)}
    info = StopInfo(StopReason.REFUSAL, "r", detail=detail)
    response = ModelResponse("", (), info)
    span = telemetry.start_chat(None, ModelRequest("m", []), "anthropic")
    telemetry.end_chat(span, response)
    [finished] = exporter.get_finished_spans()
    attributes = dict(finished.attributes or {})
    assert attributes["zett.stop.reason"] == "refusal"
    assert list(attributes["zett.stop.withheld_tool_calls"]) == ["ok"]


@depths
def test_inspect_record_and_serve_chunk_of_a_deep_stop(depth: int) -> None:
    detail = {"error": deep(depth), "cut_tool_calls": [deep(depth)]}
    info = StopInfo(StopReason.INTERRUPTED, "x", detail=detail)
    record = response_record(ModelResponse("hi", (), info))
    assert record["cut_tool_calls"] == [] and depth_of(record["detail"]) <= MAX_JSON_DEPTH + 1
    assert json.dumps(record)
    stored = AssistantMessage("hi", stop=info).storable()
    assert stored.stop is not None
    assert sse({"type": "data-stop", "data": stop_data(stored.stop)}).startswith(b"data: ")


@depths
def test_mcp_schema_sanitizing_at_any_depth(depth: int) -> None:
    from zett_agent.mcp._schema import MAX_DEPTH, sanitize_schema

    nested: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        nested = {"type": "object", "properties": {"p": nested}, "default": {"d": [1]}}
    schema = {"type": "object", "properties": {"x": nested, "y": {"type": "string",
              "default": deep(depth)}}}  # fmt: skip
    for protocol in ("anthropic", "gemini", None):
        clean = sanitize_schema(schema, protocol)
        assert depth_of(clean) <= 2 * MAX_DEPTH + 8
        assert json.dumps(clean)


# ---------------------------------------------------------------- a real socket, a key set


def deep_arguments(depth: int) -> dict[str, Any]:
    return {"items": deep(depth, "v")}


def first_reply(protocol: str, depth: int) -> Reply:
    arguments = deep_arguments(depth)
    text = json.dumps(arguments)
    match protocol:
        case "anthropic":
            start = {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "tu_1", "name": "archive", "input": {}},
            }
            delta = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": text},
            }
            return named(A_START, start, delta, {"type": "content_block_stop", "index": 0},
                         *a_end("tool_use"))  # fmt: skip
        case "openai-chat":
            return data(c_call(0, "call_1", "archive", text), c_chunk({}, "tool_calls"), "[DONE]")
        case "openai-responses":
            item = {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "archive",
                "arguments": text,
                "status": "completed",
            }
            return named({"type": "response.output_item.done", "output_index": 0, "item": item},
                         r_terminal("completed", r_response("completed", [item])))  # fmt: skip
        case "gemini":
            return data(g([{"functionCall": {"name": "archive", "args": arguments}}], "STOP"))
        case _:
            call = {"function": {"name": "archive", "arguments": arguments}}
            return ndjson(o({"content": "", "tool_calls": [call]}, done=True, reason="stop"))


def done_reply(protocol: str) -> Reply:
    match protocol:
        case "anthropic":
            return named(A_START, *a_text("done"), *a_end("end_turn"))
        case "openai-chat":
            return data(c_chunk({"content": "done"}), c_chunk({}, "stop"), "[DONE]")
        case "openai-responses":
            return named(*r_text("done"), r_terminal("completed", r_response(
                "completed", [r_message("done")])))  # fmt: skip
        case "gemini":
            return data(g([{"text": "done"}], "STOP"))
        case _:
            return ndjson(o({"content": "done"}, done=True, reason="stop"))


RAN: list[Any] = []


def archive(items: list[Any]) -> str:
    """Archive items."""
    RAN.append("archive")
    return "archived"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_600_deep_tool_argument_with_an_api_key_set(protocol: str, tmp_path: Path) -> None:
    RAN.clear()
    vendor = VENDOR[protocol]
    with ReplayServer([first_reply(protocol, 600), done_reply(protocol)]) as server:
        agent = await create_agent(
            Model(vendor, "m", base_url=server.url, api_key=SECRET), tools=[archive]
        )
        async with AgentClient(agent, tmp_path / "s.sqlite3", session_id="s") as client:
            final = await client.run("archive it")
            stored = await client.messages()
        await agent.aclose()
    assert final.text == "done" and final.stop is None
    assert RAN == []  # nested deeper than MAX_JSON_DEPTH: never run
    [result] = [m for m in stored if isinstance(m, ToolResultMessage)]
    assert result.is_error and str(MAX_JSON_DEPTH) in result.content
    assert [type(m).__name__ for m in stored] == [
        "UserMessage", "AssistantMessage", "ToolResultMessage", "AssistantMessage"
    ]  # fmt: skip
    assert len(server.requests) == 2 and len(json.dumps(server.requests[1].json)) > 0
