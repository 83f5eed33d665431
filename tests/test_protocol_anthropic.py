"""Anthropic Messages: recordings replayed over a real socket, request encoding,
stop mapping, in-stream errors, dropped streams, retries, and fuzzing of the
sans-IO decoder (chunk splits must not matter; garbage must only raise ZettError)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import decode_sse_chunks, replay_call, replay_raises
from zett_agent import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from zett_agent._exchange import ModelRequest, ModelResponse, ToolSpec
from zett_agent.errors import ProviderError, ProviderHTTPError, StreamError, ZettError
from zett_agent.model import Model
from zett_agent.protocols import get_protocol
from zett_agent.protocols._anthropic import STOP_REASONS, AnthropicMessages
from zett_agent.stop import StopReason
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import HTTPRefusal, Vendor, get_vendor

RECORDINGS = Path(__file__).parent / "recordings"
PROTOCOL = AnthropicMessages()
VENDOR = get_vendor("anthropic")
SSE_RECORDINGS = sorted(p.name for p in RECORDINGS.glob("anthropic__stream_*.sse"))


# ---------------------------------------------------------------- helpers


async def call(
    *replies: Reply,
    request: ModelRequest | None = None,
    vendor: Vendor | str = "anthropic",
    **options: Any,
) -> tuple[ModelResponse, ReplayServer]:
    """One model call against a ReplayServer; returns the response and the server."""
    return await replay_call(vendor, replies, request, model="claude-x", api_key="test", **options)


async def call_error(*replies: Reply, **options: Any) -> tuple[ProviderError, ReplayServer]:
    error, server = await replay_raises(
        ProviderError, "anthropic", replies, model="claude-x", api_key="test", **options
    )
    assert isinstance(error, ProviderError)
    return error, server


def decode_sse_bytes(chunks: list[bytes], vendor: Vendor = VENDOR) -> ModelResponse:
    """Sans-IO: parse SSE bytes with httpx-sse and feed the decoder."""
    return decode_sse_chunks(PROTOCOL.decoder(vendor), chunks)


def sse_payloads(name: str) -> list[dict[str, Any]]:
    response = httpx.Response(
        200, content=(RECORDINGS / name).read_bytes(), headers={"content-type": "text/event-stream"}
    )
    return [json.loads(sse.data) for sse in EventSource(response).iter_sse()]


def block_events(index: int, block: dict[str, Any]) -> list[tuple[str, Any]]:
    """The stream events of one content block, its text/arguments in two pieces."""
    start, deltas = dict(block), []
    if block["type"] == "text":
        start["text"] = ""
        text = block["text"]
        deltas = [
            {"type": "text_delta", "text": text[:3]},
            {"type": "text_delta", "text": text[3:]},
        ]
    elif block["type"] == "tool_use":
        start["input"] = {}
        args = block.pop("partial", None) or json.dumps(block["input"])
        start.pop("partial", None)
        deltas = [
            {"type": "input_json_delta", "partial_json": ""},
            {"type": "input_json_delta", "partial_json": args[:5]},
            {"type": "input_json_delta", "partial_json": args[5:]},
        ]
    events: list[tuple[str, Any]] = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
    ]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def message_events(
    blocks: list[dict[str, Any]],
    stop_reason: str | None,
    *,
    stop_sequence: str | None = None,
    stop_details: Any = None,
    end: bool = True,
) -> list[tuple[str, Any]]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 1},
        },
    }
    events: list[tuple[str, Any]] = [("message_start", start), ("ping", {"type": "ping"})]
    for index, block in enumerate(blocks):
        events += block_events(index, dict(block))
    if end:
        delta = {"stop_reason": stop_reason, "stop_sequence": stop_sequence}
        if stop_details is not None:
            delta["stop_details"] = stop_details
        events.append(
            (
                "message_delta",
                {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 7}},
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
    return events


def message_body(
    blocks: list[dict[str, Any]],
    stop_reason: str,
    *,
    stop_sequence: str | None = None,
    stop_details: Any = None,
) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{k: v for k, v in b.items() if k != "partial"} for b in blocks],
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "stop_details": stop_details,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }


async def call_both(
    blocks: list[dict[str, Any]], stop_reason: str, stream: bool, **kw: Any
) -> ModelResponse:
    if stream:
        response, _ = await call(Reply.sse(message_events(blocks, stop_reason, **kw)))
    else:
        response, _ = await call(Reply.json(message_body(blocks, stop_reason, **kw)), stream=False)
    return response


TEXT = {"type": "text", "text": "Hello there"}
TOOL = {"type": "tool_use", "id": "toolu_1", "name": "delete_file", "input": {"path": "/tmp/x"}}


# ---------------------------------------------------------------- recordings


RECORDED: list[tuple[str, dict[str, Any]]] = [
    (
        "anthropic__fallback_content_block_iterations.json",
        {
            "reason": StopReason.END_TURN,
            "raw": "end_turn",
            "text": "The printing press was invented by Johannes Gutenberg around 1440.",
            "usage": (412, 264),
        },
    ),
    (
        "anthropic__pause_turn_web_search.json",
        {
            "reason": StopReason.PAUSED,
            "raw": "pause_turn",
            "category": "pause_turn",
            "text_start": "I'll run these searches for you one at a time. Let me begin:",
            "reasoning_start": "The user wants me to run 15 separate web searches",
            "usage": (401468, 792),
        },
    ),
    (
        "anthropic__refusal_stop_details.json",
        {
            "reason": StopReason.REFUSAL,
            "raw": "refusal",
            "category": "cyber",
            "message": "This request triggered restrictions on violative cyber content and was "
            "blocked under Anthropic's Usage Policy.",
            "recommended_model": "claude-fable-5",
            "text": "",
            "usage": (18, 5),
        },
    ),
    (
        "anthropic__refusal_stop_details_null.json",
        {
            "reason": StopReason.REFUSAL,
            "raw": "refusal",
            "category": "refusal",
            "text": "",
            "usage": (18, 5),
        },
    ),
    (
        "glm__anthropic_compat_200_model_context_window_exceeded.json",
        {
            "reason": StopReason.CONTEXT_FULL,
            "raw": "model_context_window_exceeded",
            "category": "model_context_window_exceeded",
            "usage": (0, 0),
        },
    ),
    (
        "anthropic__stream_max_tokens_message_delta.sse",
        {
            "reason": StopReason.MAX_OUTPUT,
            "raw": "max_tokens",
            "category": "max_tokens",
            "text_start": "イルカとクジラの違いは",
            "text_end": "主に微小なプランクトンを",
            "usage": (19, 200),
        },
    ),
    (
        "anthropic__stream_pause_turn_message_delta.sse",
        {
            "reason": StopReason.PAUSED,
            "raw": "pause_turn",
            "category": "pause_turn",
            "text_start": "I'll run these searches one at a time",
            "reasoning_start": "The user wants me to run",
            "usage": (404500, 943),
            "reasoning_tokens": 261,
        },
    ),
    (
        "anthropic__stream_refusal_after_server_tool.sse",
        {
            "reason": StopReason.REFUSAL,
            "raw": "refusal",
            "category": "refusal",
            "text": "Here's a summary of this year's solar eclipses and how",
            "usage": (28, 106),
            "detail": {  # fields zett does not read: kept, under their own key
                "stop_details": {
                    "fallback_credit_token": "tok_synthetic_fixture_a",
                    "fallback_has_prefill_claim": True,
                }
            },
        },
    ),
    (
        "anthropic__stream_refusal_midstream_stop_details_fallback_token.sse",
        {
            "reason": StopReason.REFUSAL,
            "raw": "refusal",
            "category": "refusal",
            "text": "Hi",
            "reasoning_start": "Simple educational question",
            "usage": (28, 106),
            "detail": {  # fields zett does not read: kept, under their own key
                "stop_details": {
                    "fallback_credit_token": "tok_synthetic_fixture_a",
                    "fallback_has_prefill_claim": True,
                }
            },
        },
    ),
    (
        "anthropic__stream_refusal_stop_details_category.sse",
        {
            "reason": StopReason.REFUSAL,
            "raw": "refusal",
            "category": "cyber",
            "message": "This request was refused due to policy.",
            "text": "",
            "usage": (20, 0),
        },
    ),
    (
        "anthropic__stream_tool_use_input_json_delta.sse",
        {
            "reason": StopReason.TOOL_USE,
            "raw": "tool_use",
            "text": "",
            "tools": [
                (
                    "toolu_01KFbKqPYSuAKujiL6mTfzYA",
                    "json",
                    {
                        "elements": [
                            {"location": "San Francisco", "temperature": 58, "condition": "sunny"}
                        ]
                    },
                )
            ],
            "usage": (849, 47),
        },
    ),
]


@pytest.mark.parametrize(("name", "expected"), RECORDED, ids=[n for n, _ in RECORDED])
async def test_recording(name: str, expected: dict[str, Any]) -> None:
    stream = name.endswith(".sse")
    response, server = await call(Reply.file(RECORDINGS / name), stream=stream)
    assert server.requests[0].json["stream"] is stream
    info = response.stop_info
    assert info.reason is expected["reason"]
    assert info.raw == expected["raw"]
    assert info.category == expected.get("category")
    assert info.message == expected.get("message")
    assert info.recommended_model == expected.get("recommended_model")
    for key, value in expected.get("detail", {}).items():
        assert info.detail[key] == value
    if "text" in expected:
        assert response.text == expected["text"]
    assert response.text.startswith(expected.get("text_start", ""))
    assert response.text.endswith(expected.get("text_end", ""))
    assert response.reasoning.startswith(expected.get("reasoning_start", ""))
    calls = [(c.id, c.name, c.parsed_arguments()) for c in response.tool_calls]
    assert calls == expected.get("tools", [])  # server_tool_use is never a client call
    assert (response.usage.input_tokens, response.usage.output_tokens) == expected["usage"]
    if "reasoning_tokens" in expected:
        assert response.usage.reasoning_tokens == expected["reasoning_tokens"]
    assert response.provider_record is not None
    assert response.provider_record["protocol"] == "anthropic"
    assert (response.stop is None) is info.ok


def test_every_anthropic_recording_is_covered() -> None:
    covered = {n for n, _ in RECORDED} | {
        "anthropic__stream_event_error_overloaded.sse",
        "anthropic__400_prompt_too_long.json",
        "anthropic__doc_usage_cache_read_write.json",  # test_cache_read_and_write_tokens_...
    }
    assert {p.name for p in RECORDINGS.glob("anthropic__*")} <= covered


async def test_recording_refusal_after_server_tool_keeps_provider_blocks() -> None:
    response, _ = await call(
        Reply.file(RECORDINGS / "anthropic__stream_refusal_after_server_tool.sse")
    )
    assert response.provider_record is not None
    blocks = response.provider_record["content"]
    assert [b["type"] for b in blocks] == ["server_tool_use", "web_search_tool_result", "text"]
    assert blocks[0]["input"] == {"query": "solar eclipse viewing safety news 2026"}
    assert response.stop_info.detail["stop_details"]["fallback_has_prefill_claim"] is True


async def test_recording_thinking_signature_in_record() -> None:
    name = "anthropic__stream_refusal_midstream_stop_details_fallback_token.sse"
    response, _ = await call(Reply.file(RECORDINGS / name))
    assert response.provider_record is not None
    thinking = response.provider_record["content"][0]
    assert thinking["type"] == "thinking"
    assert thinking["thinking"] == response.reasoning
    assert (
        thinking["signature"]
        == "c3ludGhldGljLXNpZ25hdHVyZS1maXh0dXJlLWEtbm90LWEtcmVhbC1zaWduYXR1cmU="
    )


async def test_recording_stream_error_before_output_raises() -> None:
    error, server = await call_error(
        Reply.file(RECORDINGS / "anthropic__stream_event_error_overloaded.sse"), max_retries=0
    )
    assert isinstance(error, StreamError)
    assert error.error_type == "overloaded_error"
    assert error.message == "Overloaded"
    assert error.retryable
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [True, False])
async def test_recording_prompt_too_long_is_an_http_error(stream: bool) -> None:
    reply = Reply.file(RECORDINGS / "anthropic__400_prompt_too_long.json", status=400)
    error, _ = await call_error(reply, stream=stream, max_retries=0)
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 400
    assert error.error_type == "invalid_request_error"
    assert error.code == "prompt_too_long"
    assert error.message.startswith("prompt is too long: 210000 tokens")
    assert not error.retryable


@pytest.mark.parametrize("name", [n for n in SSE_RECORDINGS if "error" not in n])
async def test_non_stream_body_decodes_like_the_stream(name: str) -> None:
    streamed = decode_sse_bytes([(RECORDINGS / name).read_bytes()])
    payloads = sse_payloads(name)
    start = next(p for p in payloads if p["type"] == "message_start")["message"]
    delta = next(p for p in payloads if p["type"] == "message_delta")
    assert streamed.provider_record is not None
    body = {
        **start,
        "content": streamed.provider_record["content"],
        **delta["delta"],
        "usage": {**start["usage"], **delta["usage"]},
    }
    response, _ = await call(Reply.json(body), stream=False)
    assert response.stop_info == streamed.stop_info
    assert response.text == streamed.text
    assert response.reasoning == streamed.reasoning
    assert response.usage == streamed.usage
    assert response.model == streamed.model
    assert response.provider_record == {
        **streamed.provider_record,
        "origin": {"provider": "anthropic", "model": "claude-x"},  # stamped by Model.stream
    }
    assert [(c.id, c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        (c.id, c.name, c.parsed_arguments()) for c in streamed.tool_calls
    ]


# ---------------------------------------------------------------- stop mapping


def test_stop_table_is_the_documented_one() -> None:
    assert set(STOP_REASONS) == {
        "end_turn",
        "stop_sequence",
        "tool_use",
        "max_tokens",
        "pause_turn",
        "compaction",  # beta (BetaStopReason): a pause, see tests/test_pauses_are_continued.py
        "refusal",
        "model_context_window_exceeded",
    }
    assert get_protocol("anthropic").name == "anthropic"


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("end_turn", StopReason.END_TURN),
        ("max_tokens", StopReason.MAX_OUTPUT),
        ("model_context_window_exceeded", StopReason.CONTEXT_FULL),
        ("pause_turn", StopReason.PAUSED),
        ("brand_new_reason", StopReason.OTHER),
    ],
)
async def test_stop_values(raw: str, reason: StopReason, stream: bool) -> None:
    response = await call_both([TEXT], raw, stream)
    assert response.stop_info.reason is reason
    assert response.stop_info.raw == raw
    assert response.text == "Hello there"
    assert response.usage.input_tokens == 11
    assert response.usage.output_tokens == 7
    if reason is StopReason.OTHER:
        assert response.stop_info.category == "brand_new_reason"
        assert response.stop is not None
        assert response.stop.raw == "brand_new_reason"


@pytest.mark.parametrize("stream", [True, False])
async def test_stop_sequence_is_end_turn_with_the_sequence(stream: bool) -> None:
    response = await call_both([TEXT], "stop_sequence", stream, stop_sequence="###")
    assert response.stop_info.reason is StopReason.END_TURN
    assert response.stop_info.raw == "stop_sequence"
    assert response.stop_info.detail["stop_sequence"] == "###"
    assert response.stop is None


@pytest.mark.parametrize("stream", [True, False])
async def test_content_decides_tool_use(stream: bool) -> None:
    response = await call_both([TEXT, TOOL], "end_turn", stream)
    assert response.stop_info.reason is StopReason.TOOL_USE
    assert response.stop_info.raw == "end_turn"
    assert [c.parsed_arguments() for c in response.tool_calls] == [{"path": "/tmp/x"}]
    labelled = await call_both([TEXT], "tool_use", stream)
    assert labelled.stop_info.reason is StopReason.END_TURN
    assert labelled.stop_info.raw == "tool_use"


async def test_max_tokens_with_a_cut_tool_call_stays_max_output() -> None:
    cut = {**TOOL, "partial": '{"path": "/tm'}
    response, _ = await call(Reply.sse(message_events([cut], "max_tokens")))
    assert response.stop_info.reason is StopReason.MAX_OUTPUT
    assert response.tool_calls[0].arguments == '{"path": "/tm'
    assert response.provider_record is not None
    assert response.provider_record["content"][0]["input"] == {}


async def test_refusal_after_a_complete_tool_use() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "This request was declined."}
    events = message_events([TEXT, TOOL], "refusal", stop_details=details)
    response, _ = await call(Reply.sse(events))
    info = response.stop_info
    assert info.reason is StopReason.REFUSAL
    assert info.describe() == "refusal (cyber): This request was declined."
    assert response.text == "Hello there"
    assert response.tool_calls == (ToolCall("toolu_1", "delete_file", '{"path": "/tmp/x"}'),)
    record = PROTOCOL.without_tool_calls(response.provider_record)
    assert record is not None
    assert record["content"] == [TEXT]
    assert response.provider_record is not None
    assert [b["type"] for b in response.provider_record["content"]] == ["text", "tool_use"]
    # a withheld call is never replayed
    message = response.to_message("anthropic").replace(tool_calls=(), provider_record=record)
    body = PROTOCOL.encode_request(
        ModelRequest(model="m", messages=[UserMessage("hi"), message, UserMessage("again")]),
        VENDOR,
    ).body
    assert body["messages"][1] == {"role": "assistant", "content": [TEXT]}
    assert PROTOCOL.without_tool_calls(None) is None
    assert PROTOCOL.without_tool_calls({"protocol": "openai-chat", "content": []}) is None


async def test_vendor_finish_reasons_override_and_extend() -> None:
    vendor = replace(
        VENDOR,
        finish_reasons={"brand_new_reason": StopReason.PAUSED, "max_tokens": StopReason.OTHER},
    )
    response, _ = await call(Reply.sse(message_events([TEXT], "brand_new_reason")), vendor=vendor)
    assert response.stop_info.reason is StopReason.PAUSED
    response, _ = await call(Reply.sse(message_events([TEXT], "max_tokens")), vendor=vendor)
    assert response.stop_info.reason is StopReason.OTHER


async def test_refusal_with_stop_details_missing() -> None:
    response, _ = await call(
        Reply.json(message_body([], "refusal") | {"stop_details": None}), stream=False
    )
    body = message_body([], "refusal")
    del body["stop_details"]
    missing, _ = await call(Reply.json(body), stream=False)
    for r in (response, missing):
        assert r.stop_info.reason is StopReason.REFUSAL
        assert r.stop_info.message is None
        assert r.stop_info.recommended_model is None


# ---------------------------------------------------------------- errors and cut streams


async def test_error_event_after_text_is_interrupted() -> None:
    events = message_events([TEXT], None, end=False)
    events.append(
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    )
    response, _ = await call(Reply.sse(events))
    info = response.stop_info
    assert info.reason is StopReason.INTERRUPTED
    assert info.raw == "overloaded_error"
    assert info.message == "Overloaded"
    assert response.text == "Hello there"


async def test_error_event_before_text_raises() -> None:
    events = message_events([], None, end=False)
    events.append(("error", {"type": "error", "error": {"type": "api_error", "message": "boom"}}))
    error, _ = await call_error(Reply.sse(events), max_retries=0)
    assert isinstance(error, StreamError)
    assert error.error_type == "api_error"
    assert error.retryable


async def test_stream_cut_before_message_stop_is_interrupted() -> None:
    reply = Reply.file(RECORDINGS / "anthropic__stream_max_tokens_message_delta.sse", drop_after=10)
    response, _ = await call(reply)
    info = response.stop_info
    assert info.reason is StopReason.INTERRUPTED
    assert info.detail["incomplete_stream"] is True
    assert response.text.startswith("イルカ")
    assert len(response.text) < 20


async def test_stream_ending_without_stop_is_interrupted() -> None:
    response, _ = await call(Reply.sse(message_events([TEXT], None, end=False)))
    assert response.stop_info.reason is StopReason.INTERRUPTED
    assert response.stop_info.detail["incomplete_stream"] is True
    assert response.text == "Hello there"


async def test_malformed_events_are_counted_and_skipped() -> None:
    events = message_events([TEXT], "end_turn")
    events.insert(3, ("content_block_delta", "{not json"))
    events.insert(4, ("content_block_delta", {"type": "content_block_delta", "index": "x"}))
    events.insert(5, ("message_delta", [1, 2]))
    response, _ = await call(Reply.sse(events))
    assert response.stop_info.reason is StopReason.END_TURN
    assert response.stop_info.detail["malformed_events"] == 3
    assert response.text == "Hello there"


async def test_429_with_retry_after() -> None:
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    reply = Reply.json(body, status=429, headers={"retry-after": "7"})
    error, server = await call_error(reply, max_retries=0)
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 429
    assert error.retry_after == 7.0
    assert error.error_type == "rate_limit_error"
    assert error.message == "Slow down"
    assert error.body == body
    assert len(server.requests) == 1


async def test_529_overloaded_then_success_is_retried() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    response, server = await call(
        Reply.json(overloaded, status=529, headers={"retry-after": "0"}),
        Reply.sse(message_events([TEXT], "end_turn")),
        max_retries=1,
    )
    assert response.text == "Hello there"
    assert response.stop is None
    assert len(server.requests) == 2
    assert not server.unexpected


def test_http_refusal_rule_is_honoured() -> None:
    vendor = replace(
        VENDOR, http_refusals=(HTTPRefusal(400, "error.type", frozenset({"content_filter"})),)
    )
    body = {"type": "error", "error": {"type": "content_filter", "message": "Blocked."}}
    response = PROTOCOL.decoder(vendor).decode_error(400, {}, json.dumps(body).encode())
    assert response.stop_info.reason is StopReason.REFUSAL
    assert response.stop_info.message == "Blocked."
    assert response.text == ""
    with pytest.raises(ProviderHTTPError) as caught:
        PROTOCOL.decoder(VENDOR).decode_error(500, {}, b"<html>oops</html>")
    assert caught.value.status == 500
    assert caught.value.body == "<html>oops</html>"


def test_error_body_with_200_raises() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderError) as caught:
        PROTOCOL.decoder(VENDOR).decode_body(json.dumps(body).encode())
    assert caught.value.error_type == "overloaded_error"


# ---------------------------------------------------------------- requests


def test_encode_request() -> None:
    tool = ToolSpec(
        "read", "Read a file", {"type": "object", "properties": {"p": {"type": "string"}}}
    )
    request = ModelRequest(
        model="claude-x",
        messages=[
            SystemMessage("Be brief."),
            UserMessage("read two files"),
            AssistantMessage(
                text="Sure.",
                tool_calls=(ToolCall("t1", "read", '{"p": "a"}'), ToolCall("t2", "read", "{bad")),
            ),
            ToolResultMessage("t1", "read", "A"),
            ToolResultMessage("t2", "read", "no such file", is_error=True),
            UserMessage("thanks"),
            AssistantMessage(text="The answer is"),  # prefill
        ],
        tools=[tool],
        tool_choice="required",
        stop_sequences=["###"],
        temperature=0.2,
        stream=False,
        extra_body={"metadata": {"user_id": "u"}},
    )
    http = PROTOCOL.encode_request(request, VENDOR)
    assert http.path == "/v1/messages"
    assert http.method == "POST"
    assert http.response_format == "json"
    assert http.body == {
        "model": "claude-x",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "read two files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Sure."},
                    {"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "a"}},
                    {"type": "tool_use", "id": "t2", "name": "read", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "no such file",
                        "is_error": True,
                    },
                    {"type": "text", "text": "thanks"},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "The answer is"}]},
        ],
        "tools": [
            {"name": "read", "description": "Read a file", "input_schema": dict(tool.parameters)}
        ],
        "tool_choice": {"type": "any"},
        "stop_sequences": ["###"],
        "temperature": 0.2,
        "stream": False,
        "metadata": {"user_id": "u"},
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("read", {"type": "tool", "name": "read"}),
    ],
)
def test_encode_tool_choice(choice: str, wire: dict[str, str]) -> None:
    request = ModelRequest(model="m", messages=[UserMessage("x")], tool_choice=choice, max_tokens=9)
    http = PROTOCOL.encode_request(request, VENDOR)
    assert http.body["tool_choice"] == wire
    assert http.body["max_tokens"] == 9
    assert http.body["stream"] is True
    assert http.response_format == "sse"


@pytest.mark.parametrize("stream", [True, False])
async def test_pause_turn_record_is_replayed_unchanged(stream: bool) -> None:
    name = (
        "anthropic__stream_pause_turn_message_delta.sse"
        if stream
        else "anthropic__pause_turn_web_search.json"
    )
    end_reply = (
        Reply.sse(message_events([TEXT], "end_turn"))
        if stream
        else Reply.json(message_body([TEXT], "end_turn"))
    )
    with ReplayServer([Reply.file(RECORDINGS / name), end_reply]) as server:
        model = Model("anthropic", "claude-x", base_url=server.url, api_key="test", stream=stream)
        try:
            history: list[Any] = [UserMessage("run 15 searches")]
            paused = await model.complete(ModelRequest(model="claude-x", messages=history))
            assert paused.stop_info.reason is StopReason.PAUSED
            history.append(paused.to_message("anthropic"))
            await model.complete(ModelRequest(model="claude-x", messages=history))
        finally:
            await model.aclose()
    sent = server.requests[1].json["messages"]
    assert sent[-1]["role"] == "assistant"
    assert paused.provider_record is not None
    assert sent[-1]["content"] == paused.provider_record["content"]
    server_tools = [b for b in sent[-1]["content"] if b["type"] == "server_tool_use"]
    if stream:
        assert server_tools[-1] == {
            "type": "server_tool_use",
            "id": "srvtoolu_01NKrV3hGbcHeBVtaTKBHRuA",
            "name": "web_search",
            "input": {"query": "latest news on the air quality in San Francisco today"},
        }
        thinking = sent[-1]["content"][0]
        assert thinking["type"] == "thinking"
        assert thinking["signature"].startswith("EuwJCm4IDxgC")
    else:
        original = json.loads((RECORDINGS / name).read_text())["content"]
        assert sent[-1]["content"] == original  # byte-for-byte the blocks the API sent
        assert server_tools[0]["id"] == "srvtoolu_015V9Q8YNSkSyaVE5jFgZPhy"
    assert any(b["type"] == "web_search_tool_result" for b in sent[-1]["content"])


# ---------------------------------------------------------------- fuzzing (sans-IO)


def _outcome(chunks: list[bytes]) -> ModelResponse | tuple[str, str | None]:
    try:
        return decode_sse_bytes(chunks)
    except StreamError as error:
        return ("StreamError", error.error_type)


@pytest.mark.parametrize("name", SSE_RECORDINGS)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_chunk_splits_do_not_matter(name: str, data: st.DataObject) -> None:
    raw = (RECORDINGS / name).read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(raw) - 1)), max_size=30)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert _outcome(chunks) == _outcome([raw])


EVENT_NAMES = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "message",
    "surprise",
]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
SHAPED = st.fixed_dictionaries(
    {"type": st.sampled_from(EVENT_NAMES)},
    optional={
        "index": st.integers(-1, 3) | JSON,
        "delta": st.fixed_dictionaries(
            {
                "type": st.sampled_from(
                    [
                        "text_delta",
                        "thinking_delta",
                        "signature_delta",
                        "input_json_delta",
                        "citations_delta",
                        "x",
                    ]
                )
            },
            optional=dict.fromkeys(
                [
                    "text",
                    "thinking",
                    "signature",
                    "partial_json",
                    "citation",
                    "stop_reason",
                    "stop_details",
                ],
                JSON,
            ),
        )
        | JSON,
        "content_block": st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "tool_use", "thinking", "server_tool_use"])},
            optional={"id": JSON, "name": JSON, "input": JSON, "text": JSON},
        )
        | JSON,
        "message": JSON,
        "usage": st.dictionaries(
            st.sampled_from(["input_tokens", "output_tokens", "cache_read_input_tokens"]), JSON
        )
        | JSON,
        "error": JSON,
    },
)


@settings(max_examples=50, deadline=None)
@given(
    events=st.lists(
        st.tuples(
            st.sampled_from(EVENT_NAMES),
            st.one_of(st.text(max_size=30), JSON.map(json.dumps), SHAPED.map(json.dumps)),
        ),
        max_size=25,
    )
)
def test_garbage_events_only_raise_zett_errors(events: list[tuple[str, str]]) -> None:
    decoder = PROTOCOL.decoder(VENDOR)
    try:
        for name, data in events:
            decoder.feed_sse(name, data)
        response = decoder.finish()
    except ZettError:
        return
    assert isinstance(response, ModelResponse)
    json.dumps(response.provider_record)  # the record stays JSON-compatible


@settings(max_examples=50, deadline=None)
@given(
    body=st.one_of(
        st.binary(max_size=60),
        JSON.map(lambda v: json.dumps(v).encode()),
        SHAPED.map(lambda v: json.dumps(v).encode()),
    )
)
def test_garbage_bodies_only_raise_zett_errors(body: bytes) -> None:
    for decode in (
        lambda: PROTOCOL.decoder(VENDOR).decode_body(body),
        lambda: PROTOCOL.decoder(VENDOR).decode_error(400, {"retry-after": "x"}, body),
    ):
        try:
            response = decode()
        except ZettError:
            continue
        assert isinstance(response, ModelResponse)
    decoder = PROTOCOL.decoder(VENDOR)
    try:
        decoder.feed_sse("message", body.decode("utf-8", "replace"))
    except ZettError:
        return
    # a lone event never carries message_stop's end of stream unless it is one
    assert isinstance(decoder.finish(), ModelResponse)


async def test_cache_read_and_write_tokens_are_read_from_the_usage_block() -> None:
    body = (RECORDINGS / "anthropic__doc_usage_cache_read_write.json").read_bytes()
    response, _ = await call(Reply.body(body), stream=False)
    usage = response.usage
    assert usage.input_tokens == 50 + 1200 + 3000  # the whole input, cached parts included
    assert (usage.cached_input_tokens, usage.cache_write_tokens) == (3000, 1200)
