"""Structured garbage for every decoder: JSON built from the wire's own keys and
values, nested at random, so the fuzzer reaches deep into each decoder (plain
random bytes stop at the JSON parser). Whatever arrives, a decoder raises only
``ZettError`` subclasses (issue 2: nothing a provider sends may crash decoding)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from zett_agent import AssistantMessage, ModelRequest, ToolCall, ToolResultMessage, UserMessage
from zett_agent.errors import ProviderHTTPError, ZettError
from zett_agent.protocols import get_protocol
from zett_agent.stop import StopReason
from zett_agent.vendors import HTTPRefusal, Vendor, get_vendor

KEYS = [
    "type", "choices", "delta", "message", "content", "tool_calls", "index", "id", "function",
    "name", "arguments", "finish_reason", "native_finish_reason", "error", "usage", "x_groq",
    "refusal", "candidates", "finishReason", "parts", "functionCall", "partialArgs", "jsonPath",
    "willContinue", "promptFeedback", "blockReason", "usageMetadata", "response", "output",
    "status", "incomplete_details", "reason", "item", "item_id", "output_index", "done",
    "done_reason", "stop_reason", "stop_details", "content_block", "partial_json", "text",
    "args", "category", "code", "metadata", "finishMessage", "thought", "input_tokens",
]  # fmt: skip
WORDS = [
    "", "stop", "STOP", "error", "tool_calls", "tool_use", "text", "message_start",
    "content_block_start", "content_block_delta", "message_delta", "text_delta",
    "input_json_delta", "function_call", "response.completed", "refusal", "length",
]  # fmt: skip
EVENTS = [
    "message", "error", "message_start", "content_block_start", "content_block_delta",
    "content_block_stop", "message_delta", "message_stop", "response.output_item.added",
    "response.function_call_arguments.delta", "response.failed", "response.completed",
    "response.output_text.delta", "response.refusal.delta", "response.incomplete",
]  # fmt: skip
PROTOCOLS = [
    ("anthropic", "anthropic"),
    ("openai-chat", "openrouter"),
    ("openai-chat", "glm"),
    ("openai-responses", "openai-responses"),
    ("gemini", "google"),
    ("ollama", "ollama"),
]

atoms = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 2**70), st.floats(allow_nan=False),
    st.sampled_from(WORDS), st.text(max_size=5),
)  # fmt: skip
shapes = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    ),
    max_leaves=12,
)
events = st.lists(st.tuples(st.sampled_from(EVENTS), shapes), min_size=1, max_size=6)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def decoder(index: int) -> Any:
    protocol, vendor = PROTOCOLS[index]
    return get_protocol(protocol).decoder(get_vendor(vendor))


@FUZZ
@given(st.integers(0, len(PROTOCOLS) - 1), events)
def test_stream_of_shaped_garbage_raises_only_zett_errors(
    index: int, stream: list[tuple[str, Any]]
) -> None:
    d = decoder(index)
    try:
        for name, data in stream:
            if PROTOCOLS[index][0] == "ollama":
                d.feed_line(json.dumps(data))
            else:
                d.feed_sse(name, json.dumps(data))
        d.finish()
    except ZettError:
        pass


@FUZZ
@given(st.integers(0, len(PROTOCOLS) - 1), shapes)
@example(0, {"content": [{"type": []}], "stop_reason": "end_turn"})  # was a TypeError
def test_body_of_shaped_garbage_raises_only_zett_errors(index: int, body: Any) -> None:
    with contextlib.suppress(ZettError):
        decoder(index).decode_body(json.dumps(body).encode())


@FUZZ
@given(st.integers(0, len(PROTOCOLS) - 1), st.sampled_from([400, 403, 429, 500, 529]), shapes)
def test_error_body_of_shaped_garbage_raises_only_zett_errors(
    index: int, status: int, body: Any
) -> None:
    with contextlib.suppress(ZettError):
        decoder(index).decode_error(status, {"retry-after": "1"}, json.dumps(body).encode())


@pytest.mark.parametrize("index", range(len(PROTOCOLS)))
@pytest.mark.parametrize("body", [{}, {"foo": 1}, {"model": "x"}, []])
def test_a_body_that_is_no_response_is_never_a_normal_answer(index: int, body: Any) -> None:
    try:
        response = decoder(index).decode_body(json.dumps(body).encode())
    except ZettError:
        return
    assert not response.stop_info.ok, response


@FUZZ
@given(st.integers(0, len(PROTOCOLS) - 1), st.binary(max_size=200))
def test_random_bytes_as_a_body_raise_only_zett_errors(index: int, body: bytes) -> None:
    for status in (200, 400, 429, 500):
        with contextlib.suppress(ZettError):
            if status == 200:
                decoder(index).decode_body(body)
            else:
                decoder(index).decode_error(status, {}, body)


@pytest.mark.parametrize(
    "protocol", ["anthropic", "openai-chat", "openai-responses", "gemini", "ollama"]
)
def test_http_refusal_rule_of_a_vendor_row_is_honoured_by_every_protocol(protocol: str) -> None:
    vendor = Vendor(
        "gateway",
        protocol,  # type: ignore[arg-type]
        "http://x",
        http_refusals=(HTTPRefusal(403, "error.code", frozenset({"blocked_by_policy"})),),
    )
    body = json.dumps({"error": {"code": "blocked_by_policy", "message": "No."}}).encode()
    response = get_protocol(protocol).decoder(vendor).decode_error(403, {}, body)
    assert response.stop_info.reason is StopReason.REFUSAL
    assert response.stop_info.raw == "blocked_by_policy"
    assert response.stop_info.message == "No."
    assert response.text == ""
    with pytest.raises(ProviderHTTPError):
        get_protocol(protocol).decoder(vendor).decode_error(403, {}, b'{"error": {"code": "x"}}')


@pytest.mark.parametrize(
    "protocol", ["anthropic", "openai-chat", "openai-responses", "gemini", "ollama"]
)
def test_tool_call_arguments_nested_too_deep_still_encode(protocol: str) -> None:
    """``'[' * 100000`` makes json.loads raise RecursionError, not ValueError: the
    encoders that send arguments as an object send ``{}`` instead of crashing."""
    call = ToolCall("call_1", "f", "[" * 100_000)
    request = ModelRequest(
        model="m",
        messages=[
            UserMessage("hi"),
            AssistantMessage(tool_calls=(call,)),
            ToolResultMessage("call_1", "f", "ok"),
        ],
    )
    vendor = Vendor("gateway", protocol, "http://x")  # type: ignore[arg-type]
    http = get_protocol(protocol).encode_request(request, vendor)
    assert "f" in json.dumps(http.body)
