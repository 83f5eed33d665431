"""Every documented finish_reason of every OpenAI-Chat vendor, streamed and not,
through a real socket (ReplayServer -> httpx -> httpx-sse -> OpenAIChatDecoder).

Values per vendor: the vendor docs in ``zett_agent.vendors`` and
``../shared/corpus/WIRE.md`` sections 2 and 5-12; the bodies are written here
because the corpus has no recording of most of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from zett_agent import ModelRequest, ModelResponse, UserMessage
from zett_agent.model import Model
from zett_agent.stop import StopReason
from zett_agent.testing import ReplayServer, Reply

R = StopReason
OPENAI_VALUES = {
    "stop": R.END_TURN,
    "length": R.MAX_OUTPUT,
    "tool_calls": R.TOOL_USE,
    "content_filter": R.REFUSAL,
    "function_call": R.TOOL_USE,
}
DOCUMENTED: dict[str, dict[str, StopReason]] = {
    "openai": OPENAI_VALUES,
    "deepseek": {
        "stop": R.END_TURN,
        "length": R.MAX_OUTPUT,  # also covers an over-long conversation
        "content_filter": R.REFUSAL,
        "tool_calls": R.TOOL_USE,
        "insufficient_system_resource": R.INTERRUPTED,
        "aborted": R.INTERRUPTED,
    },
    "glm": {
        "stop": R.END_TURN,
        "tool_calls": R.TOOL_USE,
        "length": R.MAX_OUTPUT,
        "sensitive": R.REFUSAL,
        "model_context_window_exceeded": R.CONTEXT_FULL,
        "network_error": R.INTERRUPTED,
    },
    "kimi": {"stop": R.END_TURN, "length": R.MAX_OUTPUT, "tool_calls": R.TOOL_USE},
    "openrouter": {
        "tool_calls": R.TOOL_USE,
        "stop": R.END_TURN,
        "length": R.MAX_OUTPUT,
        "content_filter": R.REFUSAL,
        "error": R.INTERRUPTED,
    },
    "mistral": {
        "stop": R.END_TURN,
        "length": R.MAX_OUTPUT,
        "model_length": R.CONTEXT_FULL,
        "error": R.INTERRUPTED,
        "tool_calls": R.TOOL_USE,
    },
    "qwen": {"stop": R.END_TURN, "length": R.MAX_OUTPUT, "tool_calls": R.TOOL_USE},
    "groq": OPENAI_VALUES,
    "xai": OPENAI_VALUES,
    "llamacpp": OPENAI_VALUES,
}
CASES = [
    (vendor, value, reason, streamed)
    for vendor, table in DOCUMENTED.items()
    for value, reason in table.items()
    for streamed in (True, False)
]


def _message_parts(value: str) -> dict[str, Any]:
    """The assistant message for ``value``: a tool call for the tool values, else text."""
    if value == "function_call":
        return {"function_call": {"name": "lookup", "arguments": '{"q": 1}'}}
    if value == "tool_calls":
        return {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": 1}'},
                }
            ]
        }
    return {"content": "Hi there"}


def _reply(vendor: str, value: str, streamed: bool) -> Reply:
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    native = {"native_finish_reason": value.upper()} if vendor == "openrouter" else {}
    if not streamed:
        message = {"role": "assistant", "content": None, **_message_parts(value)}
        choice = {"index": 0, "message": message, "finish_reason": value, **native}
        return Reply.json({"model": f"{vendor}-model", "choices": [choice], "usage": usage})
    head = {"model": f"{vendor}-model", "object": "chat.completion.chunk"}
    return Reply.sse(
        [
            (None, {**head, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
            (None, {**head, "choices": [{"index": 0, "delta": _message_parts(value)}]}),
            (
                None,
                {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": value, **native}]},
            ),
            (None, {**head, "choices": [], "usage": usage}),
            (None, "[DONE]"),
        ]
    )


async def _complete(vendor: str, reply: Reply, streamed: bool) -> tuple[ModelResponse, Any]:
    with ReplayServer([reply]) as server:
        model = Model(
            vendor, "m", base_url=server.url, api_key="test", max_retries=0, stream=streamed
        )
        try:
            response = await model.complete(ModelRequest(model="m", messages=[UserMessage("hi")]))
        finally:
            await model.aclose()
    return response, server.requests[0].json


@pytest.mark.parametrize(("vendor", "value", "reason", "streamed"), CASES)
async def test_documented_finish_reason(
    vendor: str, value: str, reason: StopReason, streamed: bool
) -> None:
    response, sent = await _complete(vendor, _reply(vendor, value, streamed), streamed)

    info = response.stop_info
    assert info.reason is reason
    assert info.raw == value
    assert info.category == (None if info.ok else value)  # normal ends have no category
    assert response.model == f"{vendor}-model"
    assert response.usage.input_tokens == 7
    assert response.usage.output_tokens == 3
    if reason is R.TOOL_USE:
        assert response.text == ""
        [call] = response.tool_calls
        assert call.name == "lookup"
        assert call.parsed_arguments() == {"q": 1}
        assert response.stop is None
    else:
        assert response.text == "Hi there"
        assert response.tool_calls == ()
        assert (response.stop is None) == (reason is R.END_TURN)
    if vendor == "openrouter":
        assert info.detail["native_finish_reason"] == value.upper()
    else:
        assert "native_finish_reason" not in info.detail
    assert sent["stream"] is streamed
    assert ("stream_options" in sent) is streamed


UNKNOWN = [
    ("openai", "sensitive"),  # GLM's word means nothing on OpenAI's row
    ("openai", "error"),
    ("kimi", "model_length"),
    ("deepseek", "network_error"),
    ("groq", "brand_new_reason"),
    ("llamacpp", "eos"),
]


@pytest.mark.parametrize(("vendor", "value"), UNKNOWN)
@pytest.mark.parametrize("streamed", [True, False])
async def test_value_not_in_the_vendor_row_is_other(
    vendor: str, value: str, streamed: bool
) -> None:
    response, _ = await _complete(vendor, _reply(vendor, value, streamed), streamed)

    assert response.stop_info.reason is R.OTHER
    assert response.stop_info.raw == value
    assert response.text == "Hi there"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("end_turn", R.END_TURN),
        ("stop_sequence", R.END_TURN),
        ("tool_use", R.END_TURN),  # the label without a tool call: the content decides
        ("max_tokens", R.MAX_OUTPUT),
    ],
)
@pytest.mark.parametrize("vendor", ["openai", "openrouter", "llamacpp"])
@pytest.mark.parametrize("streamed", [True, False])
async def test_gateway_passing_anthropic_words(
    vendor: str, value: str, reason: StopReason, streamed: bool
) -> None:
    """Gateways in front of Claude pass stop_reason through as finish_reason."""
    response, _ = await _complete(vendor, _reply(vendor, value, streamed), streamed)

    assert response.stop_info.reason is reason
    assert response.stop_info.raw == value
    assert response.text == "Hi there"  # text body for every value here
