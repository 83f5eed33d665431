"""Ollama native chat: recordings and documented done_reason values over a real socket
(NDJSON stream and one JSON body), error lines, cut streams, request encoding, and
fuzzing of the sans-IO decoder (line order is all that matters; garbage only raises
ZettError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import decoded, replay_call, replay_raises
from zett_agent import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from zett_agent._exchange import ModelRequest, ModelResponse, ToolSpec
from zett_agent.errors import (
    ProviderError,
    ProviderHTTPError,
    StreamError,
    TransportError,
    ZettError,
)
from zett_agent.protocols import get_protocol
from zett_agent.stop import StopReason
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import get_vendor

RECORDINGS = Path(__file__).parent / "recordings"
PROTOCOL = get_protocol("ollama")
VENDOR = get_vendor("ollama")
R = StopReason
NDJSON = "application/x-ndjson"


# ---------------------------------------------------------------- helpers


async def call(
    *replies: Reply, req: ModelRequest | None = None, **options: Any
) -> tuple[ModelResponse, ReplayServer]:
    return await replay_call("ollama", replies, req, max_retries=0, **options)


async def call_raises(exc: type[Exception], *replies: Reply, **options: Any) -> Exception:
    error, _ = await replay_raises(exc, "ollama", replies, max_retries=0, **options)
    return error


def lines(*objects: dict[str, Any] | str) -> Reply:
    """An NDJSON stream, one line per chunk."""
    return Reply(
        [(o if isinstance(o, str) else json.dumps(o)).encode() + b"\n" for o in objects],
        content_type=NDJSON,
    )


def chunk(content: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "model": "llama3.2",
        "created_at": "2024-07-22T20:33:28Z",
        "message": {"role": "assistant", "content": content},
        "done": False,
        **extra,
    }


def done(reason: str | None = "stop", content: str = "", **extra: Any) -> dict[str, Any]:
    final = chunk(content, done=True, prompt_eval_count=10, eval_count=4, **extra)
    if reason is not None:
        final["done_reason"] = reason
    return final


def recording(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDINGS / name).read_text())
    return data


def as_stream(body: dict[str, Any]) -> Reply:
    """A recorded final object as a stream: its message content first, then done."""
    message = dict(body.get("message") or {})
    head = {**body, "done": False, "message": message}
    head.pop("done_reason", None)
    tail = {**body, "message": {"role": "assistant", "content": ""}}
    return lines(head, tail)


# ---------------------------------------------------------------- recordings


@pytest.mark.parametrize("stream", [True, False])
async def test_recording_tool_calls_with_done_reason_stop(stream: bool) -> None:
    body = recording("ollama__chat_tool_calls_done_reason_stop.json")
    reply = as_stream(body) if stream else Reply.json(body)
    response, server = await call(reply, stream=stream)
    assert response.stop_info.reason is R.TOOL_USE
    assert response.stop_info.raw == "stop"
    (tool,) = response.tool_calls
    assert tool.name == "get_current_weather"
    assert tool.parsed_arguments() == {"format": "celsius", "location": "Paris, FR"}
    assert response.usage.input_tokens == 122
    assert response.usage.output_tokens == 33
    assert response.model == "llama3.2"
    sent = server.requests[0]
    assert sent.path == "/api/chat"
    assert "authorization" not in sent.headers  # no key needed locally
    assert sent.json == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    }


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    "name", ["ollama__chat_done_reason_load.json", "ollama__chat_done_reason_unload.json"]
)
async def test_recording_load_and_unload_are_other(name: str, stream: bool) -> None:
    body = recording(name)
    reply = lines(body) if stream else Reply.json(body)
    response, _ = await call(reply, stream=stream)
    raw = body["done_reason"]
    assert response.stop_info.reason is R.OTHER  # an empty answer, not a normal one
    assert response.stop_info.raw == raw
    assert response.stop_info.category == raw
    assert response.stop is not None
    assert response.text == ""


@pytest.mark.parametrize("stream", [True, False])
async def test_recording_generate_length(stream: bool) -> None:
    body = recording("ollama__generate_done_reason_length.json")
    if stream:
        reply = lines(
            {**body, "done": False, "done_reason": None, "response": body["response"]},
            {**body, "response": ""},
        )
    else:
        reply = Reply.json(body)
    response, _ = await call(reply, stream=stream)
    assert response.stop_info.reason is R.MAX_OUTPUT
    assert response.stop_info.raw == "length"
    assert response.text == "Once upon a time, in a small village nestled"
    assert response.usage.output_tokens == 10


# ---------------------------------------------------------------- documented values


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("stop", R.END_TURN),
        ("length", R.MAX_OUTPUT),
        ("load", R.OTHER),
        ("unload", R.OTHER),
        ("something_new", R.OTHER),
        (None, R.END_TURN),
    ],
)
async def test_done_reason_values(raw: str | None, reason: StopReason, stream: bool) -> None:
    if stream:
        reply = lines(chunk("Hello"), chunk(" world"), done(raw))
    else:
        reply = Reply.json(done(raw, "Hello world"))
    response, _ = await call(reply, stream=stream)
    assert response.stop_info.reason is reason
    assert response.stop_info.raw == raw
    assert response.stop_info.category == (None if response.stop_info.ok else raw)
    assert response.text == "Hello world"
    assert response.usage.input_tokens == 10
    assert response.usage.output_tokens == 4


async def test_tool_calls_in_a_chunk_before_done_and_thinking() -> None:
    reply = lines(
        {**chunk(), "message": {"role": "assistant", "content": "", "thinking": "Need data."}},
        {
            **chunk(),
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": "a", "arguments": {"x": 1}}},
                    {"id": "call_x", "function": {"index": 1, "name": "b", "arguments": {}}},
                ],
            },
        },
        done("stop"),
    )
    response, _ = await call(reply)
    assert response.stop_info.reason is R.TOOL_USE
    assert response.reasoning == "Need data."
    assert [(c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        ("a", {"x": 1}),
        ("b", {}),
    ]
    assert response.tool_calls[1].id == "call_x"
    assert response.tool_calls[0].id != response.tool_calls[1].id


# ---------------------------------------------------------------- errors and cuts


async def test_error_line_after_output_is_interrupted() -> None:
    reply = lines(chunk("Partial"), {"error": "llama runner process has terminated"})
    response, _ = await call(reply)
    info = response.stop_info
    assert info.reason is R.INTERRUPTED
    assert info.message == "llama runner process has terminated"
    assert response.text == "Partial"


async def test_error_line_before_output_raises() -> None:
    error = await call_raises(StreamError, lines({"error": "model requires more memory"}))
    assert isinstance(error, StreamError)
    assert error.message == "model requires more memory"


async def test_error_body_with_200_raises() -> None:
    error = await call_raises(ProviderError, Reply.json({"error": "boom"}), stream=False)
    assert isinstance(error, ProviderError)
    assert error.message == "boom"


async def test_http_error() -> None:
    reply = Reply.json({"error": "model 'm' not found"}, status=404)
    error = await call_raises(ProviderHTTPError, reply)
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 404
    assert error.message == "model 'm' not found"
    assert not error.retryable


async def test_stream_without_done_line_is_interrupted() -> None:
    response, _ = await call(lines(chunk("Half"), chunk(" an answer")))
    assert response.stop_info.reason is R.INTERRUPTED
    assert response.stop_info.detail["incomplete_stream"] is True
    assert response.text == "Half an answer"


async def test_stream_without_any_output_is_a_transport_error() -> None:
    await call_raises(TransportError, lines(chunk("")))


async def test_lines_after_done_and_malformed_lines() -> None:
    reply = lines(
        chunk("Hi"), "{not json", "[1, 2]", done("stop"), '{"cost": "0.01"}', {"error": "late"}
    )
    response, _ = await call(reply)
    assert response.stop_info.reason is R.END_TURN
    assert response.text == "Hi"
    assert response.stop_info.detail["malformed_events"] == 2


async def test_ndjson_body_despite_stream_false() -> None:
    body = "\n".join(json.dumps(o) for o in (chunk("A"), chunk("B"), done("stop")))
    response, _ = await call(Reply.body(body), stream=False)
    assert response.text == "AB"
    assert response.stop_info.reason is R.END_TURN


# ---------------------------------------------------------------- encoding


def test_encode_request() -> None:
    req = ModelRequest(
        model="qwen3",
        messages=[
            SystemMessage("Be brief."),
            UserMessage("weather?"),
            AssistantMessage(
                "Checking.",
                (ToolCall("c1", "get", '{"city": "Paris"}'), ToolCall("c2", "get", "cut off {")),
            ),
            ToolResultMessage("c1", "get", "sunny"),
        ],
        tools=[ToolSpec("get", "Get weather", {"type": "object"})],
        max_tokens=64,
        temperature=0.1,
        stop_sequences=["END"],
        extra_body={"keep_alive": "5m"},
    )
    http = PROTOCOL.encode_request(req, VENDOR)
    assert http.path == "/api/chat"
    assert http.response_format == "ndjson"
    assert http.body == {
        "model": "qwen3",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {"function": {"name": "get", "arguments": {"city": "Paris"}}},
                    {"function": {"name": "get", "arguments": {}}},
                ],
            },
            {"role": "tool", "content": "sunny", "tool_name": "get"},
        ],
        "stream": True,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get",
                    "description": "Get weather",
                    "parameters": {"type": "object"},
                },
            }
        ],
        "options": {"num_predict": 64, "temperature": 0.1, "stop": ["END"]},
        "keep_alive": "5m",
    }
    plain = PROTOCOL.encode_request(
        ModelRequest(model="m", messages=[], tools=req.tools, tool_choice="none", stream=False),
        VENDOR,
    )
    assert plain.response_format == "json"
    assert "tools" not in plain.body


# ---------------------------------------------------------------- fuzzing


def _decode(objects: list[str]) -> Any:
    decoder = PROTOCOL.decoder(VENDOR)
    try:
        for line in objects:
            if line.strip():
                decoder.feed_line(line)
        response = decoder.finish()
    except ZettError as error:
        return type(error), str(error)
    return decoded(response)[:5]  # its record aside


STREAM = [
    json.dumps(chunk("Hel")),
    json.dumps(chunk("lo")),
    json.dumps(
        {
            **chunk(),
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "a", "arguments": {"x": [1, 2]}}}],
            },
        }
    ),
    json.dumps(done("stop")),
]


@settings(max_examples=40, deadline=None)
@given(cuts=st.sets(st.integers(1, len("\n".join(STREAM)) - 1), max_size=20))
def test_byte_splits_do_not_matter(cuts: set[int]) -> None:
    """However the bytes arrive, the line splitter hands the decoder the same lines."""
    body = ("\n".join(STREAM) + "\n").encode()
    bounds = sorted(cuts)
    pieces = [body[a:b] for a, b in zip([0, *bounds], [*bounds, len(body)], strict=True)]
    buffer, got = b"", []
    for piece in pieces:
        buffer += piece
        *complete, buffer = buffer.split(b"\n")
        got += [c.decode() for c in complete]
    assert _decode(got) == _decode(STREAM)


_KEYS = st.sampled_from(
    [
        "message",
        "content",
        "thinking",
        "tool_calls",
        "function",
        "name",
        "arguments",
        "done",
        "done_reason",
        "error",
        "eval_count",
        "model",
        "response",
        "id",
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None)
@given(objects=st.lists(_JSON.map(json.dumps) | st.text(max_size=30), max_size=10))
def test_garbage_lines_only_raise_zett_errors(objects: list[str]) -> None:
    _decode(objects)
