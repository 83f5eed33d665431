"""OpenAI Responses: recordings replayed over a real socket, one case per documented
status / incomplete reason / failure code (stream and non-stream), in-stream errors, cut
streams, the OpenCode Zen cost frame, request encoding, and fuzzing of the sans-IO
decoder (chunk splits must not matter; garbage must only raise ZettError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import decode_sse_chunks, decoded, replay_call, replay_raises
from zett_agent import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from zett_agent._exchange import ModelRequest, ModelResponse, ToolSpec
from zett_agent.errors import (
    ProviderError,
    ProviderHTTPError,
    StreamError,
    TransportError,
    ZettError,
)
from zett_agent.model import Model
from zett_agent.protocols import get_protocol
from zett_agent.stop import StopReason
from zett_agent.testing._replay import ReplayServer, Reply, split_sse
from zett_agent.vendors import get_vendor

RECORDINGS = Path(__file__).parent / "recordings"
PROTOCOL = get_protocol("openai-responses")
VENDOR = get_vendor("openai-responses")
FUNCTION_CALL = RECORDINGS / "openai_responses__stream_function_call_args_delta.sse"
ERROR_THEN_FAILED = RECORDINGS / "openai_responses__stream_error_then_response_failed.sse"
R = StopReason


# ---------------------------------------------------------------- helpers


def request(**changes: Any) -> ModelRequest:
    return ModelRequest(**{"model": "m", "messages": [UserMessage("hi")], **changes})


async def call(
    *replies: Reply,
    req: ModelRequest | None = None,
    vendor: str = "openai-responses",
    **options: Any,
) -> tuple[ModelResponse, ReplayServer]:
    return await replay_call(
        vendor, replies, req or request(), api_key="test", max_retries=0, **options
    )


async def call_raises(exc: type[Exception], *replies: Reply, **options: Any) -> Exception:
    error, _ = await replay_raises(
        exc, "openai-responses", replies, request(), api_key="test", max_retries=0, **options
    )
    return error


def sse(*events: dict[str, Any]) -> Reply:
    """A Responses stream: the SSE event name is each payload's type."""
    return Reply.sse([(e["type"], e) for e in events])


def response_obj(
    status: str = "completed", output: list[Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": "gpt-test",
        "output": output or [],
        "usage": {"input_tokens": 5, "output_tokens": 3},
        **extra,
    }


def message_item(*parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": list(parts),
    }


def text_stream(text: str, terminal: dict[str, Any] | None) -> list[dict[str, Any]]:
    """created, one text item streamed as two deltas, then ``terminal`` (None: no end)."""
    half = len(text) // 2
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response_obj("in_progress")},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": message_item() | {"status": "in_progress"},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": text[:half],
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": text[half:],
        },
    ]
    return events + ([terminal] if terminal else [])


def terminal_from_recording(path: Path) -> dict[str, Any]:
    """The response object of a recording's terminal event (its non-stream body)."""
    for chunk in split_sse(path.read_bytes()):
        for line in chunk.decode().splitlines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] in ("response.completed", "response.failed"):
                    return dict(event["response"])
    raise AssertionError("no terminal event")


def decode_chunks(chunks: list[bytes]) -> ModelResponse:
    """Sans-IO: SSE bytes through httpx-sse into a fresh decoder."""
    return decode_sse_chunks(PROTOCOL.decoder(VENDOR), chunks)


# ---------------------------------------------------------------- recordings


async def test_recording_function_call_args_delta_is_tool_use() -> None:
    response, server = await call(Reply.file(FUNCTION_CALL))
    assert response.stop_info.reason is R.TOOL_USE
    assert response.stop is None
    assert response.stop_info.raw == "completed"
    (tool,) = response.tool_calls
    assert tool.id == "call_AB6AaRZ1FYZB2RwS6A5vbdqn"
    assert tool.name == "calculator"
    assert tool.parsed_arguments() == {"a": 12, "b": 7, "op": "add"}
    assert response.reasoning.startswith("**Calculating step-by-step")
    assert response.usage.input_tokens == 134
    assert response.usage.output_tokens == 28
    assert response.usage.cached_input_tokens == 0
    assert response.usage.reasoning_tokens == 0
    assert response.model == "gpt-5.1-codex-max"
    record = response.provider_record
    assert record is not None
    assert record["protocol"] == "openai-responses"
    assert [i["type"] for i in record["output"]] == ["reasoning", "function_call"]
    sent = server.requests[0]
    assert sent.path == "/responses"
    assert sent.headers["authorization"] == "Bearer test"
    assert sent.json == {"model": "m", "input": [{"role": "user", "content": "hi"}], "stream": True}


async def test_recording_function_call_non_stream_body() -> None:
    body = terminal_from_recording(FUNCTION_CALL)
    response, server = await call(Reply.json(body), stream=False)
    assert response.stop_info.reason is R.TOOL_USE
    assert response.tool_calls[0].parsed_arguments() == {"a": 12, "b": 7, "op": "add"}
    assert response.tool_calls[0].id == "call_AB6AaRZ1FYZB2RwS6A5vbdqn"
    assert response.usage.input_tokens == 134
    assert server.requests[0].json["stream"] is False


async def test_recording_error_then_response_failed_raises_stream_error() -> None:
    error = await call_raises(StreamError, Reply.file(ERROR_THEN_FAILED))
    assert isinstance(error, StreamError)
    assert error.code == "insufficient_quota"
    assert error.error_type == "insufficient_quota"
    assert error.status == 200
    assert not error.retryable
    assert "exceeded your current quota" in error.message


async def test_recording_429_insufficient_quota() -> None:
    body = (RECORDINGS / "openai_responses__429_insufficient_quota.json").read_bytes()
    error = await call_raises(
        ProviderHTTPError, Reply.body(body, status=429, headers={"retry-after": "7"})
    )
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 429
    assert error.error_type == "insufficient_quota"
    assert error.code == "insufficient_quota"
    assert error.retry_after == 7.0
    assert error.message.startswith("You exceeded your current quota")


async def test_recording_moderation_flagged_but_completed_is_an_answer() -> None:
    """A flagged input under a block policy still completes: a soft refusal in text."""
    body = (RECORDINGS / "openai_responses__moderation_block_policy_completed.json").read_bytes()
    response, _ = await call(Reply.body(body), stream=False)
    assert response.stop_info.reason is R.END_TURN
    assert response.stop is None
    assert response.text.startswith("I'm really sorry you're feeling this much anger.")
    assert response.usage.output_tokens == 1351
    assert response.usage.reasoning_tokens == 1024
    assert response.provider_record is not None
    assert len(response.provider_record["output"]) == 2


@pytest.mark.parametrize("stream", [True, False])
async def test_recording_openrouter_responses_failed(stream: bool) -> None:
    event = json.loads(
        (RECORDINGS / "openrouter__doc_responses_failed_error_type.json").read_text()
    )
    reply = sse(event) if stream else Reply.json(event)  # non-stream: the event as a body
    error = await call_raises(StreamError if stream else ProviderError, reply, stream=stream)
    assert isinstance(error, ProviderError)
    assert error.code == "server_error"
    assert error.retryable
    assert error.message == "Internal server error"


# ---------------------------------------------------------------- documented values


def incomplete(reason: str, text: str = "Partial") -> dict[str, Any]:
    return response_obj(
        "incomplete",
        [message_item({"type": "output_text", "text": text})],
        incomplete_details={"reason": reason},
    )


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("body", "reason", "raw", "category"),
    [
        (
            response_obj("completed", [message_item({"type": "output_text", "text": "Partial"})]),
            R.END_TURN,
            "completed",
            None,
        ),
        (incomplete("max_output_tokens"), R.MAX_OUTPUT, "max_output_tokens", "max_output_tokens"),
        (incomplete("content_filter"), R.REFUSAL, "content_filter", "content_filter"),
        (incomplete("something_new"), R.OTHER, "something_new", "something_new"),
        (
            response_obj("cancelled", [message_item({"type": "output_text", "text": "Partial"})]),
            R.INTERRUPTED,
            "cancelled",
            "cancelled",
        ),
    ],
)
async def test_status_values(
    body: dict[str, Any], reason: StopReason, raw: str, category: str | None, stream: bool
) -> None:
    terminal = {"type": f"response.{body['status']}", "response": body}
    reply = sse(*text_stream("Partial", terminal)) if stream else Reply.json(body)
    response, _ = await call(reply, stream=stream)
    assert response.stop_info.reason is reason
    assert response.stop_info.raw == raw
    assert response.stop_info.category == category
    assert response.text == "Partial"
    assert response.usage.input_tokens == 5
    assert response.usage.output_tokens == 3


@pytest.mark.parametrize("stream", [True, False])
async def test_refusal_content_part(stream: bool) -> None:
    words = "I'm sorry, I can't help with that."
    body = response_obj("completed", [message_item({"type": "refusal", "refusal": words})])
    if stream:
        reply = sse(
            {"type": "response.created", "response": response_obj("in_progress")},
            {
                "type": "response.refusal.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": words[:10],
            },
            {
                "type": "response.refusal.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": words[10:],
            },
            {
                "type": "response.refusal.done",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "refusal": words,
            },
            {"type": "response.output_item.done", "output_index": 0, "item": body["output"][0]},
            {"type": "response.completed", "response": body},
        )
    else:
        reply = Reply.json(body)
    response, _ = await call(reply, stream=stream)
    info = response.stop_info
    assert info.reason is R.REFUSAL
    assert info.raw == "refusal"
    assert info.category == "refusal"
    assert info.message == words
    assert response.text == words


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("code", ["bio_policy", "image_content_policy_violation", "cyber_policy"])
async def test_failed_with_a_policy_code_is_a_refusal(code: str, stream: bool) -> None:
    body = response_obj("failed", error={"code": code, "message": "Blocked by policy."})
    reply = (
        sse(
            {"type": "response.created", "response": response_obj("in_progress")},
            {"type": "response.failed", "response": body},
        )
        if stream
        else Reply.json(body)
    )
    response, _ = await call(reply, stream=stream)
    info = response.stop_info
    assert info.reason is R.REFUSAL
    assert info.raw == code
    assert info.category == code
    assert info.message == "Blocked by policy."
    assert response.text == ""
    assert response.tool_calls == ()


async def test_failed_body_without_output_raises_provider_error() -> None:
    body = response_obj("failed", error={"code": "server_error", "message": "boom"})
    error = await call_raises(ProviderError, Reply.json(body), stream=False)
    assert not isinstance(error, StreamError | ProviderHTTPError)
    assert isinstance(error, ProviderError)
    assert error.code == "server_error"


@pytest.mark.parametrize("nested", [True, False])
async def test_error_event_after_text_is_interrupted(nested: bool) -> None:
    fields = {"code": "server_error", "message": "The server had an error.", "param": None}
    error_event = {
        "type": "error",
        "sequence_number": 5,
        **({"error": {"type": "server_error", **fields}} if nested else fields),
    }
    failed = {
        "type": "response.failed",
        "response": response_obj(
            "failed", error={"code": "server_error", "message": "The server had an error."}
        ),
    }
    response, _ = await call(sse(*text_stream("Hello there", None), error_event, failed))
    info = response.stop_info
    assert info.reason is R.INTERRUPTED
    assert info.raw == "server_error"
    assert info.message == "The server had an error."
    assert response.text == "Hello there"
    assert info.detail["error"]["code"] == "server_error"


async def test_error_event_then_cut_without_output_raises() -> None:
    error = await call_raises(
        StreamError,
        sse(
            {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None}
        ),
    )
    assert isinstance(error, StreamError)
    assert error.code == "rate_limit_exceeded"


# ---------------------------------------------------------------- cut streams


async def test_stream_cut_before_terminal_event_keeps_partial_tool_call() -> None:
    """Public-report case: the connection ends (cleanly) before response.completed."""
    chunks = split_sse(FUNCTION_CALL.read_bytes())
    cut = next(c for c in chunks if b"function_call_arguments.done" in c)
    reply = Reply(chunks[: chunks.index(cut) - 3], content_type="text/event-stream")
    response, _ = await call(reply)
    info = response.stop_info
    assert info.reason is R.INTERRUPTED
    assert info.detail["incomplete_stream"] is True
    (tool,) = response.tool_calls
    assert tool.name == "calculator"
    assert tool.arguments.startswith('{"a":12')
    assert response.reasoning  # what arrived is kept


async def test_dropped_connection_after_output_is_interrupted() -> None:
    events = text_stream("Hello there", {"type": "response.completed", "response": response_obj()})
    reply = sse(*events)
    reply.drop_after = 3
    response, _ = await call(reply)
    assert response.stop_info.reason is R.INTERRUPTED
    assert response.text == "Hello"
    assert response.stop_info.detail["incomplete_stream"] is True
    assert "transport_error" in response.stop_info.detail


async def test_stream_cut_before_any_output_is_a_transport_error() -> None:
    await call_raises(
        TransportError, sse({"type": "response.created", "response": response_obj("in_progress")})
    )


# ---------------------------------------------------------------- gateways and noise


async def test_opencode_zen_cost_frame_after_completed_is_ignored() -> None:
    chunks = [
        *Reply.file(FUNCTION_CALL).chunks,
        b'event: ping\ndata: {"type":"ping","cost":"0.00231"}\n\n',
    ]
    reply = Reply(chunks, content_type="text/event-stream")
    response, server = await call(reply, vendor="opencode-zen", protocol="openai-responses")
    assert response.stop_info.reason is R.TOOL_USE
    assert "malformed_events" not in response.stop_info.detail
    assert server.requests[0].path == "/responses"
    assert server.requests[0].headers["authorization"] == "Bearer test"


async def test_opencode_zen_upstream_error_is_an_ordinary_error() -> None:
    body = {
        "type": "error",
        "error": {"type": "ProviderError", "message": "Error from provider (openai): overloaded"},
    }
    with ReplayServer([Reply.json(body, status=500)]) as server:
        model = Model(
            "opencode-zen",
            "gpt-5",
            protocol="openai-responses",
            base_url=server.url,
            api_key="k",
            max_retries=0,
        )
        with pytest.raises(ProviderHTTPError) as caught:
            await model.complete(request())
        await model.aclose()
    assert caught.value.status == 500
    assert caught.value.retryable
    assert caught.value.message.startswith("Error from provider")


async def test_malformed_events_are_counted_and_skipped() -> None:
    events = text_stream("Hi", {"type": "response.completed", "response": response_obj()})
    reply = sse(*events)
    reply.chunks = [
        *reply.chunks[:2],
        b"data: {not json\n\n",
        b"data: [1,2]\n\n",
        *reply.chunks[2:],
    ]
    response, _ = await call(reply)
    assert response.stop_info.reason is R.END_TURN
    assert response.text == "Hi"
    assert response.stop_info.detail["malformed_events"] == 2


def test_text_done_without_deltas_is_read() -> None:
    decoder = PROTOCOL.decoder(VENDOR)
    decoder.feed_sse(
        "response.output_text.done",
        json.dumps(
            {"type": "response.output_text.done", "item_id": "m", "output_index": 0, "text": "Hey"}
        ),
    )
    decoder.feed_sse(
        "response.completed", json.dumps({"type": "response.completed", "response": response_obj()})
    )
    assert decoder.finish().text == "Hey"


# ---------------------------------------------------------------- encoding


def test_encode_request() -> None:
    record = {
        "protocol": "openai-responses",
        "output": [
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "x", "summary": []},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get",
                "arguments": "{}",
            },
        ],
    }
    req = ModelRequest(
        model="gpt-5",
        messages=[
            SystemMessage("Be brief."),
            UserMessage("weather?"),
            AssistantMessage("", (ToolCall("call_1", "get", "{}"),), provider_record=record),
            ToolResultMessage("call_1", "get", "sunny"),
            AssistantMessage("Sunny.", (ToolCall("call_2", "get", '{"x":1}'),)),
            ToolResultMessage("call_2", "get", "rain", is_error=True),
        ],
        tools=[ToolSpec("get", "Get weather", {"type": "object"})],
        max_tokens=100,
        temperature=0.2,
        tool_choice="get",
        stream=False,
        extra_body={"store": False},
    )
    http = PROTOCOL.encode_request(req, VENDOR)
    assert http.path == "/responses"
    assert http.response_format == "json"
    assert http.body == {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "weather?"},
            *record["output"],
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {"role": "assistant", "content": "Sunny."},
            {"type": "function_call", "call_id": "call_2", "name": "get", "arguments": '{"x":1}'},
            {"type": "function_call_output", "call_id": "call_2", "output": "rain"},
        ],
        "stream": False,
        "tools": [
            {
                "type": "function",
                "name": "get",
                "description": "Get weather",
                "parameters": {"type": "object"},
            }
        ],
        "tool_choice": {"type": "function", "name": "get"},
        "max_output_tokens": 100,
        "temperature": 0.2,
        "store": False,
    }
    assert (
        PROTOCOL.encode_request(request(tool_choice="required"), VENDOR).body["tool_choice"]
        == "required"
    )


def test_without_tool_calls() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1"}
    message = {"type": "message", "id": "msg_1", "content": []}
    call = {"type": "function_call", "call_id": "c"}
    record = {"protocol": "openai-responses", "output": [reasoning, message, reasoning, call]}
    assert PROTOCOL.without_tool_calls(record) == {
        "protocol": "openai-responses",
        "output": [reasoning, message],  # the reasoning that led to the call goes too
    }
    assert (
        PROTOCOL.without_tool_calls({"protocol": "openai-responses", "output": [reasoning, call]})
        is None
    )
    assert PROTOCOL.without_tool_calls(None) is None


# ---------------------------------------------------------------- fuzzing


@pytest.mark.parametrize("path", [FUNCTION_CALL, ERROR_THEN_FAILED])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_chunk_splits_do_not_matter(path: Path, data: st.DataObject) -> None:
    body = path.read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=30)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]

    def run(chunks: list[bytes]) -> Any:
        try:
            return decoded(decode_chunks(chunks))
        except ZettError as error:
            return type(error), str(error)

    assert run(pieces) == run([body])


_EVENT_TYPES = st.sampled_from(
    [
        "response.created",
        "response.output_text.delta",
        "response.output_text.done",
        "response.refusal.delta",
        "response.refusal.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
        "response.reasoning_summary_text.delta",
        "ping",
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "response",
                    "output",
                    "status",
                    "item",
                    "item_id",
                    "output_index",
                    "delta",
                    "text",
                    "error",
                    "code",
                    "message",
                    "arguments",
                    "call_id",
                    "name",
                    "id",
                    "content",
                    "refusal",
                    "incomplete_details",
                    "reason",
                    "usage",
                    "input_tokens",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None)
@given(events=st.lists(st.tuples(_EVENT_TYPES, _JSON | st.text(max_size=30)), max_size=12))
def test_garbage_events_only_raise_zett_errors(events: list[tuple[str, Any]]) -> None:
    decoder = PROTOCOL.decoder(VENDOR)
    try:
        for name, payload in events:
            if isinstance(payload, dict):
                payload = {"type": name, **payload}
            decoder.feed_sse(name, payload if isinstance(payload, str) else json.dumps(payload))
        decoder.finish()
    except ZettError:
        pass


# ---------------------------------------------------------------- OpenCode Zen, other protocols

ZEN_COST_FRAMES = {
    "openai-chat": (
        "deepseek__stream_reasoner_stop_usage.sse",
        b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[],"cost":"0.00042"}\n\n',
    ),
    "anthropic": (
        "anthropic__stream_max_tokens_message_delta.sse",
        b'event: ping\ndata: {"type":"ping","cost":"0.00042"}\n\n',
    ),
}


@pytest.mark.parametrize("protocol", sorted(ZEN_COST_FRAMES))
async def test_opencode_zen_cost_frame_is_ignored_by_every_decoder(protocol: str) -> None:
    """Zen appends a cost frame after ``[DONE]`` (Chat) or ``message_stop`` (Messages)."""
    name, frame = ZEN_COST_FRAMES[protocol]
    plain = Reply.file(RECORDINGS / name)
    with_cost = Reply([*plain.chunks, frame], content_type="text/event-stream")
    expected, _ = await call(plain, vendor="opencode-zen", protocol=protocol)
    got, server = await call(with_cost, vendor="opencode-zen", protocol=protocol)
    assert got.stop_info == expected.stop_info
    assert (got.text, got.tool_calls, got.usage) == (
        expected.text,
        expected.tool_calls,
        expected.usage,
    )
    assert "malformed_events" not in got.stop_info.detail
    headers = server.requests[0].headers
    if protocol == "anthropic":  # Zen's /messages reads x-api-key, like Anthropic's API
        assert headers["x-api-key"] == "test"
        assert server.requests[0].path == "/v1/messages"
    else:
        assert headers["authorization"] == "Bearer test"


async def test_opencode_zen_default_urls_per_protocol() -> None:
    urls = {}
    for protocol in ("openai-chat", "openai-responses", "anthropic", "gemini"):
        model = Model("opencode-zen", "x", protocol=protocol, api_key="k")
        urls[protocol] = (
            model.base_url + model.protocol.encode_request(request(model="x"), model.vendor).path
        )
        await model.aclose()
    assert urls == {
        "openai-chat": "https://opencode.ai/zen/v1/chat/completions",
        "openai-responses": "https://opencode.ai/zen/v1/responses",
        "anthropic": "https://opencode.ai/zen/v1/messages",
        "gemini": "https://opencode.ai/zen/v1/models/x:streamGenerateContent",
    }
