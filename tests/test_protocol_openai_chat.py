"""OpenAI Chat Completions protocol: the corpus recordings, cases from public bug
reports, what the client sends, and fuzzing of the sans-IO decoder.

Recordings are in ``tests/recordings`` (sources in ``SOURCES.md``); every call
goes through a real socket (ReplayServer -> httpx -> httpx-sse -> decoder).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import RECORDINGS
from helpers import decode_sse_chunks, replay_call
from zett_agent import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from zett_agent._exchange import ModelRequest, ModelResponse, ToolSpec
from zett_agent.errors import (
    DecodeError,
    ProviderError,
    ProviderHTTPError,
    StreamError,
    TransportError,
    ZettError,
)
from zett_agent.protocols import get_protocol
from zett_agent.protocols._openai_chat import OpenAIChat, OpenAIChatDecoder
from zett_agent.stop import StopReason
from zett_agent.testing import RecordedRequest, Reply
from zett_agent.vendors import get_vendor

R = StopReason


async def complete(
    vendor: str, *replies: Reply, streamed: bool = True, **request: Any
) -> tuple[ModelResponse, list[RecordedRequest]]:
    messages = request.pop("messages", [UserMessage("hi")])
    response, server = await replay_call(
        vendor,
        replies,
        ModelRequest(model="m", messages=messages, **request),
        api_key="test",
        max_retries=0,
        stream=streamed,
    )
    return response, server.requests


def recording(name: str, status: int = 200) -> Reply:
    return Reply.file(RECORDINGS / name, status=status)


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"object": "chat.completion.chunk", "model": "m-1", "choices": [choice], **extra}


def call(
    index: int | None, call_id: str | None = None, name: str | None = None, args: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {"function": {"arguments": args}}
    if index is not None:
        out["index"] = index
    if call_id is not None:
        out["id"] = call_id
        out["type"] = "function"
    if name is not None:
        out["function"]["name"] = name
    return out


def calls(response: ModelResponse) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, c.parsed_arguments()) for c in response.tool_calls]


# ---------------------------------------------------------------- corpus: 2xx


async def test_openai_stream_refusal_delta() -> None:
    response, _ = await complete("openai", recording("openai_chat__stream_refusal_delta.sse"))

    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (R.REFUSAL, "stop", "refusal")
    assert info.message == "I'm sorry, I can't assist with that request."
    assert response.text == info.message  # the refusal is the visible text too
    assert response.usage.input_tokens == 79
    assert response.usage.output_tokens == 11
    assert response.stop is info


async def test_openai_nonstream_refusal_field() -> None:
    response, _ = await complete(
        "openai", recording("openai_chat__refusal_field_structured_output.json"), streamed=False
    )

    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (R.REFUSAL, "stop", "refusal")
    assert info.message == "I'm very sorry, but I can't assist with that."
    assert response.text == info.message
    assert response.model == "gpt-4o-2024-08-06"


@pytest.mark.parametrize(
    ("name", "streamed"),
    [
        ("openai_chat__stream_length_truncated_json.sse", True),
        ("openai_chat__length_truncated_structured_output.json", False),
    ],
)
async def test_openai_length(name: str, streamed: bool) -> None:
    response, _ = await complete("openai", recording(name), streamed=streamed)

    assert (response.stop_info.reason, response.stop_info.raw) == (R.MAX_OUTPUT, "length")
    assert response.stop_info.truncated
    assert response.text == '{"'
    assert response.usage.input_tokens == 79
    assert response.usage.output_tokens == 1
    assert response.usage.reasoning_tokens == 0


async def test_openai_parallel_tool_calls_by_index() -> None:
    response, sent = await complete(
        "openai", recording("openai_chat__stream_parallel_tool_calls_index.sse")
    )

    assert (response.stop_info.reason, response.stop_info.raw) == (R.TOOL_USE, "tool_calls")
    assert calls(response) == [
        (
            "call_JMW1whyEaYG438VE1OIflxA2",
            "GetWeatherArgs",
            {"city": "Edinburgh", "country": "GB", "units": "c"},
        ),
        (
            "call_DNYTawLBoN8fj3KN6qU9N1Ou",
            "get_stock_price",
            {"ticker": "AAPL", "exchange": "NASDAQ"},
        ),
    ]
    assert response.usage.input_tokens == 149
    assert response.usage.output_tokens == 60
    assert sent[0].path == "/chat/completions"
    assert sent[0].json["stream_options"] == {"include_usage": True}
    record = response.provider_record
    assert record is not None
    assert record["protocol"] == "openai-chat"
    assert [c["function"]["name"] for c in record["message"]["tool_calls"]] == [
        "GetWeatherArgs",
        "get_stock_price",
    ]


async def test_openai_moderation_chunk_after_usage() -> None:
    response, _ = await complete(
        "openai", recording("openai_chat__stream_with_moderation_chunk.sse")
    )

    assert (response.stop_info.reason, response.stop_info.raw) == (R.END_TURN, "stop")
    assert response.stop is None
    assert response.text == "Paris."
    assert response.usage.input_tokens == 13
    assert response.usage.cached_input_tokens == 0
    assert response.model == "gpt-5-2025-08-07"


async def test_openai_moderation_flagged_is_still_stop() -> None:
    """A flagged input with a soft refusal in content is an ordinary answer."""
    response, _ = await complete(
        "openai", recording("openai_chat__moderation_flagged_finish_stop.json"), streamed=False
    )

    assert response.stop_info.reason is R.END_TURN
    assert response.text.startswith("I'm really sorry you're feeling this way.")
    assert response.usage.reasoning_tokens == 1536
    assert response.usage.output_tokens == 1880


async def test_anthropic_compat_tool_index_starts_at_1() -> None:
    response, _ = await complete(
        "openai", recording("anthropic_openai_compat__stream_tool_call_index_1.sse")
    )

    assert response.stop_info.reason is R.TOOL_USE
    assert response.text == "Reading it."
    assert calls(response) == [("toolu_sanitized", "read_file", {"path": "a.txt"})]


async def test_gateway_error_after_truncated_tool_args() -> None:
    response, _ = await complete(
        "openai", recording("openai_compat_gateway__stream_truncated_tool_args_then_error.sse")
    )

    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (
        R.INTERRUPTED,
        "all_routes_failed",
        "all_routes_failed",
    )
    assert info.message == "provider returned a malformed response; retry the request"
    assert info.detail["error"]["type"] == "api_error"
    [tool_call] = response.tool_calls  # the runtime withholds it; the decoder keeps it
    assert (tool_call.name, tool_call.arguments) == ("get_weather", '{"city')


async def test_deepseek_reasoner_stream() -> None:
    response, _ = await complete("deepseek", recording("deepseek__stream_reasoner_stop_usage.sse"))

    assert (response.stop_info.reason, response.stop_info.raw) == (R.END_TURN, "stop")
    assert response.text == "Hello there! 😊 How can I help you today?"
    assert response.reasoning.startswith('Hmm, the user just said "Hello".')
    assert response.usage.input_tokens == 6
    assert response.usage.output_tokens == 212
    assert response.usage.reasoning_tokens == 198
    assert response.usage.cached_input_tokens == 0


async def test_deepseek_tool_call_keeps_reasoning_content_for_replay() -> None:
    response, _ = await complete(
        "deepseek", recording("deepseek__stream_tool_call_index_fragments.sse")
    )

    assert response.stop_info.reason is R.TOOL_USE
    assert calls(response) == [
        ("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", {"location": "San Francisco"})
    ]
    assert response.usage.cached_input_tokens == 320
    assert response.usage.reasoning_tokens == 39
    assert response.provider_record == {
        "protocol": "openai-chat",
        "message": {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"location": "San Francisco"}'},
                }
            ],
            "reasoning_content": response.reasoning,
        },
        "origin": {"provider": "deepseek", "model": "m"},
    }
    assert response.reasoning.startswith("The user is asking for the weather")


async def test_glm_stream_without_finish_key_until_last() -> None:
    response, _ = await complete("glm", recording("glm__stream_no_finish_key_until_last.sse"))

    assert (response.stop_info.reason, response.stop_info.raw) == (R.END_TURN, "stop")
    assert response.text == "4"
    assert response.reasoning.startswith("\n1.  **Analyze the User's Request:**")
    assert response.usage.reasoning_tokens == 561
    assert response.model == "glm-4.7"


async def test_mistral_thinking_content_array() -> None:
    response, _ = await complete("mistral", recording("mistral__stream_thinking_stop_usage.sse"))

    assert response.stop_info.reason is R.END_TURN
    assert response.reasoning.startswith("Okay, the user is asking how to cross the street.")
    assert response.text.startswith("To cross the street safely")
    assert "Okay" not in response.text
    assert response.usage.output_tokens == 232
    assert response.provider_record is not None
    assert "reasoning_content" not in response.provider_record["message"]


async def test_mistral_whole_tool_call_without_index() -> None:
    response, _ = await complete(
        "mistral", recording("mistral__stream_tool_call_whole_no_index.sse")
    )

    assert (response.stop_info.reason, response.stop_info.raw) == (R.TOOL_USE, "tool_calls")
    assert calls(response) == [("gSIMJiOkT", "weather", {"location": "San Francisco"})]
    assert response.usage.input_tokens == 124


async def test_mistral_incremental_tool_call_with_empty_name_repeat() -> None:
    response, _ = await complete(
        "mistral", recording("mistral__stream_incremental_tool_call_glm.sse")
    )

    assert response.stop_info.reason is R.TOOL_USE
    assert calls(response) == [
        ("chatcmpl-tool-9f149c74c42f265b", "webSearchTool", {"query": "current Berlin weather"})
    ]
    assert response.usage.cached_input_tokens == 128


async def test_qwen_empty_id_continuations() -> None:
    response, _ = await complete("qwen", recording("qwen__stream_tool_call_empty_id_fragments.sse"))

    assert response.stop_info.reason is R.TOOL_USE
    assert calls(response) == [
        ("call_eee11723464a4b9eb8cee71d", "weather", {"location": "San Francisco"})
    ]
    assert response.usage.input_tokens == 295
    assert response.usage.output_tokens == 22


async def test_groq_x_groq_usage_and_whole_call() -> None:
    response, _ = await complete("groq", recording("groq__stream_tool_call_x_groq_usage.sse"))

    assert response.stop_info.reason is R.TOOL_USE
    assert calls(response) == [("tk85n1k4m", "weather", {})]
    assert response.usage.input_tokens == 210
    assert response.usage.output_tokens == 15


async def test_groq_event_error_after_reasoning_is_interrupted() -> None:
    response, _ = await complete("groq", recording("groq__stream_event_error_tool_use_failed.sse"))

    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (
        R.INTERRUPTED,
        "tool_use_failed",
        "tool_use_failed",
    )
    assert info.message is not None
    assert info.message.startswith("Tool call validation failed")
    assert info.detail["error"]["status_code"] == 400
    assert "incomplete_stream" not in info.detail
    assert response.reasoning.startswith("We need to call")
    assert response.text == ""
    # Groq rejects "reasoning" / "reasoning_content" on replayed assistant messages
    assert response.provider_record == {
        "protocol": "openai-chat",
        "message": {"role": "assistant", "content": ""},
        "origin": {"provider": "groq", "model": "m"},
    }


async def test_xai_reasoning_whole_call_usage_chunk() -> None:
    response, _ = await complete("xai", recording("xai__stream_tool_call_whole_no_finish_key.sse"))

    assert response.stop_info.reason is R.TOOL_USE
    assert response.reasoning == "First, the user is"
    assert calls(response) == [("call_55117580", "weather", {"location": "San Francisco"})]
    assert response.usage.cached_input_tokens == 290
    assert response.usage.reasoning_tokens == 196


@pytest.mark.parametrize(
    ("name", "native", "cached"),
    [
        ("openrouter__length_native_MAX_TOKENS_gemini.json", "MAX_TOKENS", 2161),
        ("openrouter__length_native_length_anthropic.json", "length", 0),
    ],
)
async def test_openrouter_native_finish_reason(name: str, native: str, cached: int) -> None:
    response, _ = await complete("openrouter", recording(name), streamed=False)

    info = response.stop_info
    assert (info.reason, info.raw) == (R.MAX_OUTPUT, "length")
    assert info.detail == {"native_finish_reason": native}
    assert response.usage.cached_input_tokens == cached
    assert response.usage.output_tokens == 100


async def test_openrouter_error_chunk_after_length_keeps_max_output() -> None:
    response, _ = await complete(
        "openrouter", recording("openrouter__stream_error_chunk_after_length.sse")
    )

    info = response.stop_info
    assert (info.reason, info.raw) == (R.MAX_OUTPUT, "length")
    assert info.detail["native_finish_reason"] == "length"
    assert info.detail["error"] == {"code": 400, "message": "Token limit reached"}
    assert response.reasoning == "We need to respond to a greeting. The user"
    assert response.usage.input_tokens == 43
    assert response.usage.reasoning_tokens == 11


async def test_openrouter_doc_midstream_error_without_output_raises_retryable() -> None:
    with pytest.raises(StreamError) as caught:
        await complete("openrouter", recording("openrouter__doc_midstream_error_chunk.sse"))

    error = caught.value
    assert error.status == 429
    assert error.code == 429
    assert error.error_type == "rate_limit_exceeded"
    assert error.message == "Rate limit exceeded"
    assert error.retryable


async def test_openrouter_midstream_error_after_text_is_interrupted() -> None:
    body = (RECORDINGS / "openrouter__doc_midstream_error_chunk.sse").read_text()
    head = chunk({"content": "Partial "}, provider="OpenAI")
    reply = Reply(
        [f"data: {json.dumps(head)}\n\n".encode(), body.encode()],
        content_type="text/event-stream",
    )
    response, _ = await complete("openrouter", reply)

    info = response.stop_info
    # raw is OpenRouter's own finish_reason, unchanged; the error's type is the category
    assert (info.reason, info.raw, info.category, info.message) == (
        R.INTERRUPTED,
        "error",
        "rate_limit_exceeded",
        "Rate limit exceeded",
    )
    assert info.detail["error"]["code"] == 429
    assert response.text == "Partial "


async def test_openrouter_nonstream_error_in_choice() -> None:
    response, _ = await complete(
        "openrouter", recording("openrouter__doc_nonstream_error_in_choice.json"), streamed=False
    )

    info = response.stop_info
    assert (info.reason, info.raw, info.category, info.message) == (
        R.INTERRUPTED,
        "error",
        "provider_unavailable",
        "Provider disconnected mid-stream",
    )
    assert info.detail["error"]["code"] == 502
    assert response.text == "partial output..."


async def test_openrouter_nonstream_error_without_output_raises() -> None:
    body = {
        "choices": [
            {
                "message": {"role": "assistant", "content": ""},
                "finish_reason": "error",
                "error": {"code": 502, "message": "upstream gone"},
            }
        ]
    }
    with pytest.raises(ProviderError) as caught:
        await complete("openrouter", Reply.json(body), streamed=False)
    assert caught.value.status == 502
    assert caught.value.retryable


# ---------------------------------------------------------------- corpus: errors


REFUSALS = [
    (
        "kimi",
        "kimi__400_content_filter_high_risk.json",
        400,
        "content_filter",
        "content_filter",
        "The request was rejected because it was considered high risk",
    ),
    (
        "openrouter",
        "openrouter__moderation_403_testderived.json",
        403,
        "403",  # raw: the provider's own error.code; a list of reasons is no code
        "harassment",  # metadata.reasons, joined
        "meta-llama/llama-3-70b requires moderation on OpenRouter."
        ' Your input was flagged for "harassment".',
    ),
    (
        "openrouter",
        "openrouter__doc_403_guardrail_patterns.json",
        403,
        "403",
        "ignore all previous instructions",  # metadata.patterns, joined
        "Request blocked: prompt injection patterns detected",
    ),
    (
        "glm",
        "glm__400_code_1301_sensitive.json",
        400,
        "1301",
        "sensitive",
        "系统检测到输入或生成内容可能包含不安全或敏感内容，请您避免输入易产生敏感内容的提示语，感谢您的配合。",
    ),
    (
        "qwen",
        "qwen__400_data_inspection_failed.json",
        400,
        "data_inspection_failed",
        "data_inspection_failed",
        "Input data may contain inappropriate content.",
    ),
    (
        "qwen",
        "qwen__400_data_inspection_failed_v2.json",
        400,
        "data_inspection_failed",
        "data_inspection_failed",
        "<400> InternalError.Algo.DataInspectionFailed:"
        " Input text data may contain inappropriate content.",
    ),
    (
        "deepseek",
        "deepseek__400_content_exists_risk.json",
        400,
        "invalid_request_error",  # the matched message is prose: error.code is raw
        "Content Exists Risk",
        "Content Exists Risk",
    ),
    (
        "openai",
        "openai_chat__400_invalid_prompt_safety.json",
        400,
        "invalid_prompt",
        "invalid_prompt",
        None,
    ),
    (
        "openai",
        "openai_azure__400_content_filter_innererror.json",
        400,
        "content_filter",
        "content_filter",
        "The response was filtered due to the prompt triggering"
        " Azure OpenAI's content management policy.",
    ),
    # the error is prose (with an API key id in it): no code, raw is None
    (
        "xai",
        "xai__403_safety_check_bio.json",
        403,
        None,
        "SAFETY_CHECK_TYPE_BIO",
        None,
    ),
]


@pytest.mark.parametrize(("vendor", "name", "status", "raw", "category", "message"), REFUSALS)
@pytest.mark.parametrize("streamed", [True, False])
async def test_refusal_sent_as_http_error(
    vendor: str,
    name: str,
    status: int,
    raw: str | None,
    category: str,
    message: str | None,
    streamed: bool,
) -> None:
    response, _ = await complete(vendor, recording(name, status), streamed=streamed)

    info = response.stop_info
    assert info.reason is R.REFUSAL
    assert info.category == category
    assert info.raw == raw  # the provider's own value or None, never made up
    if message is not None:
        assert info.message == message
    assert info.message
    assert info.detail["http_status"] == status
    assert response.text == ""
    assert response.tool_calls == ()


@pytest.mark.parametrize(
    ("vendor", "name", "status", "error_type", "code", "retryable"),
    [
        (
            "kimi",
            "kimi__403_access_terminated_error.json",
            403,
            "access_terminated_error",
            None,
            False,
        ),
        (
            "groq",
            "groq__400_tool_use_failed.json",
            400,
            "invalid_request_error",
            "tool_use_failed",
            False,
        ),
        ("openrouter", "openrouter__429_provider_error.json", 429, None, 429, True),
        # the same bodies on a vendor whose row has no such refusal
        (
            "openrouter",
            "kimi__400_content_filter_high_risk.json",
            400,
            "content_filter",
            400,
            False,
        ),
        ("groq", "openrouter__doc_403_guardrail_patterns.json", 403, None, 403, False),
        (
            "openai",
            "deepseek__400_content_exists_risk.json",
            400,
            "invalid_request_error",
            "invalid_request_error",
            False,
        ),
    ],
)
async def test_other_http_errors_raise(
    vendor: str, name: str, status: int, error_type: str | None, code: Any, retryable: bool
) -> None:
    reply = recording(name, status)
    reply.headers["retry-after"] = "7"
    with pytest.raises(ProviderHTTPError) as caught:
        await complete(vendor, reply)

    error = caught.value
    assert (error.status, error.error_type, error.code) == (status, error_type, code)
    assert error.provider == vendor
    assert error.retryable is retryable
    assert error.retry_after == 7.0
    assert error.message
    assert error.body == json.loads((RECORDINGS / name).read_text())


async def test_openai_invalid_prompt_without_safety_wording_raises() -> None:
    body = {
        "error": {
            "message": "Invalid prompt: missing field",
            "type": "invalid_request_error",
            "code": "invalid_prompt",
        }
    }
    with pytest.raises(ProviderHTTPError):
        await complete("openai", Reply.json(body, status=400))


async def test_non_json_error_body() -> None:
    with pytest.raises(ProviderHTTPError) as caught:
        await complete(
            "llamacpp", Reply.body("<html>Bad Gateway</html>", status=502, content_type="text/html")
        )
    assert caught.value.status == 502
    assert caught.value.retryable
    assert caught.value.message == "<html>Bad Gateway</html>"


# ---------------------------------------------------------------- bug-report cases


async def test_openrouter_finish_error_with_native_null() -> None:
    """OpenRouter sends finish_reason "error" with native_finish_reason null and no
    error object; text so far is kept."""
    response, _ = await complete(
        "openrouter",
        Reply.sse(
            [
                (None, chunk({"content": "Half an ans"}, native_finish_reason=None)),
                (
                    None,
                    {
                        **chunk(None, "error"),
                        "choices": [
                            {
                                "index": 0,
                                "delta": {},
                                "finish_reason": "error",
                                "native_finish_reason": None,
                            }
                        ],
                    },
                ),
                (None, "[DONE]"),
            ]
        ),
    )

    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (R.INTERRUPTED, "error", "error")
    assert "native_finish_reason" in info.detail
    assert info.detail["native_finish_reason"] is None
    assert response.text == "Half an ans"


@pytest.mark.parametrize(
    ("value", "reason"), [("end_turn", R.END_TURN), ("max_tokens", R.MAX_OUTPUT)]
)
async def test_gateway_passes_anthropic_stop_reason(value: str, reason: StopReason) -> None:
    response, _ = await complete(
        "openai",
        Reply.sse(
            [(None, chunk({"content": "Hello"})), (None, chunk(None, value)), (None, "[DONE]")]
        ),
    )
    assert (response.stop_info.reason, response.stop_info.raw) == (reason, value)


@pytest.mark.parametrize("streamed", [True, False])
async def test_tool_calls_with_finish_stop_are_tool_use(streamed: bool) -> None:
    if streamed:
        reply = Reply.sse(
            [
                (None, chunk({"tool_calls": [call(0, "call_a", "ls", '{"path":')]})),
                (None, chunk({"tool_calls": [call(0, args=' "."}')]})),
                (None, chunk(None, "stop")),
                (None, "[DONE]"),
            ]
        )
    else:
        reply = Reply.json(
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_a",
                                    "type": "function",
                                    "function": {"name": "ls", "arguments": '{"path": "."}'},
                                }
                            ],
                        },
                    }
                ]
            }
        )
    response, _ = await complete("llamacpp", reply, streamed=streamed)

    assert (response.stop_info.reason, response.stop_info.raw) == (R.TOOL_USE, "stop")
    assert calls(response) == [("call_a", "ls", {"path": "."})]


async def test_tool_calls_never_override_an_abnormal_stop() -> None:
    response, _ = await complete(
        "glm",
        Reply.sse(
            [
                (None, chunk({"tool_calls": [call(0, "call_a", "rm", "{}")]})),
                (None, chunk(None, "sensitive")),
            ]
        ),
    )
    assert (response.stop_info.reason, response.stop_info.raw) == (R.REFUSAL, "sensitive")
    assert response.stop_info.category == "sensitive"


async def test_refusal_field_with_finish_stop_streamed() -> None:
    response, _ = await complete(
        "openrouter",
        Reply.sse(
            [
                (None, chunk({"role": "assistant", "content": None, "refusal": ""})),
                (None, chunk({"refusal": "I can't help"})),
                (None, chunk({"refusal": " with that."})),
                (
                    None,
                    chunk(
                        None,
                        "stop",
                    ),
                ),
                (None, "[DONE]"),
            ]
        ),
    )
    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (R.REFUSAL, "stop", "refusal")
    assert info.message == response.text == "I can't help with that."


async def test_length_cuts_tool_call_arguments() -> None:
    response, _ = await complete(
        "openai",
        Reply.sse(
            [
                (None, chunk({"tool_calls": [call(0, "call_w", "write_file", "")]})),
                (None, chunk({"tool_calls": [call(0, args='{"path": "a.txt", "content": "lor')]})),
                (None, chunk(None, "length")),
                (None, {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 16}}),
                (None, "[DONE]"),
            ]
        ),
    )
    assert (response.stop_info.reason, response.stop_info.raw) == (R.MAX_OUTPUT, "length")
    [tool_call] = response.tool_calls
    assert tool_call.arguments == '{"path": "a.txt", "content": "lor'
    with pytest.raises(ValueError, match="Unterminated string"):
        tool_call.parsed_arguments()
    assert response.usage.output_tokens == 16


async def test_parallel_calls_sharing_index_0() -> None:
    response, _ = await complete(
        "openai",
        Reply.sse(
            [
                (None, chunk({"tool_calls": [call(0, "call_a", "get", "")]})),
                (None, chunk({"tool_calls": [call(0, args='{"k": 1}')]})),
                (None, chunk({"tool_calls": [call(0, "call_b", "put", "")]})),
                (None, chunk({"tool_calls": [call(0, args='{"k": 2}')]})),
                (None, chunk(None, "tool_calls")),
                (None, "[DONE]"),
            ]
        ),
    )
    assert calls(response) == [("call_a", "get", {"k": 1}), ("call_b", "put", {"k": 2})]


async def test_whole_calls_without_index_in_separate_chunks() -> None:
    response, _ = await complete(
        "xai",
        Reply.sse(
            [
                (None, chunk({"tool_calls": [call(None, "c1", "a", '{"n": 1}')]})),
                (
                    None,
                    chunk(
                        {
                            "tool_calls": [
                                call(None, "c2", "b", '{"n": 2}'),
                                call(None, "c3", "c", '{"n": 3}'),
                            ]
                        }
                    ),
                ),
                (None, chunk(None, "tool_calls")),
                (None, "[DONE]"),
            ]
        ),
    )
    assert calls(response) == [("c1", "a", {"n": 1}), ("c2", "b", {"n": 2}), ("c3", "c", {"n": 3})]


@pytest.mark.parametrize("streamed", [True, False])
async def test_llamacpp_legacy_function_call_with_trailing_colon(streamed: bool) -> None:
    if streamed:
        reply = Reply.sse(
            [
                (None, chunk({"function_call": {"name": "get_time:", "arguments": ""}})),
                (None, chunk({"function_call": {"arguments": '{"tz": "UTC"}'}})),
                (None, chunk(None, "function_call")),
                (None, "[DONE]"),
            ]
        )
    else:
        reply = Reply.json(
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "function_call",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "function_call": {"name": "get_time:", "arguments": '{"tz": "UTC"}'},
                        },
                    }
                ]
            }
        )
    response, _ = await complete("llamacpp", reply, streamed=streamed)

    assert (response.stop_info.reason, response.stop_info.raw) == (R.TOOL_USE, "function_call")
    [tool_call] = response.tool_calls
    assert (tool_call.name, tool_call.parsed_arguments()) == ("get_time", {"tz": "UTC"})


async def test_llamacpp_recording_function_call_beside_tool_calls_is_one_call() -> None:
    response, _ = await complete(
        "llamacpp",
        recording("llamacpp__tool_call_function_call_trailing_colon.json"),
        streamed=False,
    )

    assert (response.stop_info.reason, response.stop_info.raw) == (R.TOOL_USE, "tool_calls")
    assert [(c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert response.model == "smollm2"
    assert response.usage.input_tokens == 23


async def test_llamacpp_recording_empty_stream_is_a_transport_error() -> None:
    with pytest.raises(TransportError):
        await complete("llamacpp", recording("llamacpp__stream_tools_auto_empty_body.sse"))


async def test_llamacpp_empty_200_stream_is_a_transport_error() -> None:
    with pytest.raises(TransportError):
        await complete("llamacpp", Reply([b""], content_type="text/event-stream"))


async def test_llamacpp_empty_200_body_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="empty body"):
        await complete("llamacpp", Reply.body(b""), streamed=False)


async def test_stream_without_terminal_keeps_text_as_interrupted() -> None:
    response, _ = await complete("openai", Reply.sse([(None, chunk({"content": "Half"}))]))

    info = response.stop_info
    assert info.reason is R.INTERRUPTED
    assert info.raw is None
    assert info.detail["incomplete_stream"] is True
    assert response.text == "Half"


async def test_dropped_stream_keeps_text() -> None:
    reply = Reply.sse(
        [(None, chunk({"content": "Half"})), (None, chunk({"content": " more"}))], drop_after=1
    )
    response, _ = await complete("openai", reply)
    assert response.stop_info.reason is R.INTERRUPTED
    assert response.text == "Half"


async def test_finish_reason_without_done_is_fine() -> None:
    response, _ = await complete(
        "openai", Reply.sse([(None, chunk({"content": "Ok"})), (None, chunk(None, "stop"))])
    )
    assert response.stop_info.reason is R.END_TURN
    assert response.stop_info.detail == {}


async def test_done_without_finish_reason_is_other() -> None:
    """OpenCode Zen turns reasons it cannot convert into finish_reason null."""
    response, _ = await complete(
        "openai", Reply.sse([(None, chunk({"content": "Ok"})), (None, chunk()), (None, "[DONE]")])
    )
    assert response.stop_info.reason is R.OTHER
    assert response.stop_info.raw is None


async def test_kimi_usage_inside_choice_and_malformed_lines_counted() -> None:
    final = chunk(None, "stop")
    final["choices"][0]["usage"] = {"prompt_tokens": 9, "completion_tokens": 2}
    response, _ = await complete(
        "kimi",
        Reply(
            [
                f"data: {json.dumps(chunk({'content': 'Hi'}))}\n\n".encode(),
                b"data: {not json\n\n",
                b"data: [1, 2]\n\n",
                f"data: {json.dumps(final)}\n\n".encode(),
                b"data: [DONE]\n\n",
            ],
            content_type="text/event-stream",
        ),
    )
    assert response.stop_info.reason is R.END_TURN
    assert response.stop_info.detail == {"malformed_events": 2}
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 2)


async def test_azure_content_filter_finish_keeps_filter_results() -> None:
    results = {"hate": {"filtered": True, "severity": "high"}}
    response, _ = await complete(
        "openai",
        Reply.json(
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "content_filter",
                        "content_filter_results": results,
                        "message": {"role": "assistant", "content": "Par"},
                    }
                ]
            }
        ),
        streamed=False,
    )
    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (R.REFUSAL, "content_filter", "content_filter")
    assert info.detail["content_filter_results"] == results
    assert response.text == "Par"


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1,2]", b'{"id": "x"}', b'{"error": {"message": "overloaded", "code": 503}}'],
)
async def test_unusable_nonstream_bodies_raise_zett_errors(body: bytes) -> None:
    with pytest.raises(ZettError):
        await complete("openai", Reply.body(body), streamed=False)


async def test_error_in_200_stream_before_output_raises_stream_error() -> None:
    with pytest.raises(StreamError) as caught:
        await complete(
            "openai",
            Reply.sse(
                [("error", {"error": {"message": "Overloaded", "type": "overloaded_error"}})]
            ),
        )
    assert caught.value.retryable
    assert caught.value.status == 200


# ---------------------------------------------------------------- request


async def test_request_encoding() -> None:
    history = [
        SystemMessage("Be brief."),
        UserMessage("List files"),
        AssistantMessage(text="Sure.", tool_calls=(ToolCall("call_1", "ls", '{"path": "."}'),)),
        ToolResultMessage("call_1", "ls", "a.txt"),
        AssistantMessage(
            text="ignored",
            provider_record={
                "protocol": "openai-chat",
                "message": {"role": "assistant", "content": "a.txt", "reasoning_content": "R"},
            },
        ),
        AssistantMessage(text="from elsewhere", provider_record={"protocol": "anthropic", "x": 1}),
        UserMessage("thanks"),
    ]
    tools = [ToolSpec("ls", "List a folder", {"type": "object", "properties": {}})]
    reply = Reply.sse([(None, chunk({"content": "ok"}, "stop")), (None, "[DONE]")])
    _, sent = await complete(
        "deepseek",
        reply,
        messages=history,
        tools=tools,
        tool_choice="ls",
        max_tokens=50,
        temperature=0.2,
        stop_sequences=["END"],
        extra_body={"thinking": {"type": "enabled"}},
    )

    request = sent[0]
    assert (request.method, request.path) == ("POST", "/chat/completions")
    assert request.headers["authorization"] == "Bearer test"
    body = request.json
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "List files"},
        {
            "role": "assistant",
            "content": "Sure.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "ls", "arguments": '{"path": "."}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        {"role": "assistant", "content": "a.txt", "reasoning_content": "R"},
        {"role": "assistant", "content": "from elsewhere"},
        {"role": "user", "content": "thanks"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "ls",
                "description": "List a folder",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "ls"}}
    assert (body["model"], body["max_tokens"], body["stop"]) == ("m", 50, ["END"])
    assert body["temperature"] == 0.2
    assert body["thinking"] == {"type": "enabled"}
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
async def test_request_tool_choice_words_and_nonstream(choice: str) -> None:
    reply = Reply.json(
        {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "ok"},
                }
            ]
        }
    )
    response, sent = await complete("groq", reply, streamed=False, tool_choice=choice)

    body = sent[0].json
    assert body["tool_choice"] == choice
    assert body["stream"] is False
    assert "stream_options" not in body
    assert not {"tools", "max_tokens", "temperature", "stop"} & body.keys()
    assert response.text == "ok"


def test_protocol_registry_and_without_tool_calls() -> None:
    protocol = get_protocol("openai-chat")
    assert isinstance(protocol, OpenAIChat)
    assert protocol.name == "openai-chat"
    record = {
        "protocol": "openai-chat",
        "message": {
            "role": "assistant",
            "content": "Let me check.",
            "reasoning_content": "r",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
    }
    assert protocol.without_tool_calls(record) == {
        "protocol": "openai-chat",
        "message": {"role": "assistant", "content": "Let me check.", "reasoning_content": "r"},
    }
    only_calls = {"protocol": "openai-chat", "message": {**record["message"], "content": None}}
    assert protocol.without_tool_calls(only_calls) is None
    assert protocol.without_tool_calls({"protocol": "anthropic"}) is None
    assert protocol.without_tool_calls(None) is None


# ---------------------------------------------------------------- sans-IO fuzzing


def decode_sse(vendor: str, pieces: list[bytes]) -> ModelResponse:
    """Feed SSE bytes split into ``pieces`` to a fresh decoder, as model/_transport.py does."""
    return decode_sse_chunks(OpenAIChatDecoder(get_vendor(vendor)), pieces)


def outcome(vendor: str, pieces: list[bytes]) -> Any:
    try:
        return decode_sse(vendor, pieces)
    except ZettError as error:
        return (type(error), str(error))


SSE_RECORDINGS = sorted(
    p.name
    for p in RECORDINGS.glob("*.sse")
    if p.name.split("__")[0]
    in {
        "openai_chat",
        "openai_compat_gateway",
        "anthropic_openai_compat",
        "deepseek",
        "glm",
        "openrouter",
        "mistral",
        "qwen",
        "groq",
        "xai",
    }
)
VENDOR_OF = {
    "openai_chat": "openai",
    "openai_compat_gateway": "openai",
    "anthropic_openai_compat": "openai",
}


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@pytest.mark.parametrize("name", SSE_RECORDINGS)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(min_value=0, max_value=10**6), max_size=30))
def test_random_splits_give_the_same_response(name: str, cuts: list[int]) -> None:
    data = (RECORDINGS / name).read_bytes()
    prefix = name.split("__")[0]
    vendor = VENDOR_OF.get(prefix, prefix)
    assert outcome(vendor, split_at(data, cuts)) == outcome(vendor, [data])


def test_sse_recordings_are_all_covered() -> None:
    assert len(SSE_RECORDINGS) >= 18


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["stop", "length", "tool_calls", "error", "[DONE]", ""]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "choices",
                    "delta",
                    "message",
                    "content",
                    "tool_calls",
                    "index",
                    "id",
                    "function",
                    "name",
                    "arguments",
                    "finish_reason",
                    "usage",
                    "error",
                    "refusal",
                    "reasoning_content",
                    "native_finish_reason",
                    "code",
                    "prompt_tokens",
                    "function_call",
                    "x_groq",
                    "type",
                    "thinking",
                    "text",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=50, deadline=None)
@given(
    events=st.lists(st.tuples(st.sampled_from(["message", "error", "ping"]), JSON), max_size=8),
    vendor=st.sampled_from(["openai", "openrouter", "mistral", "qwen", "glm"]),
)
def test_garbage_json_only_raises_zett_errors(events: list[tuple[str, Any]], vendor: str) -> None:
    decoder = OpenAIChatDecoder(get_vendor(vendor))
    try:
        for name, data in events:
            decoder.feed_sse(name, json.dumps(data))
        decoder.finish()
    except ZettError:
        pass
    with contextlib.suppress(ZettError):
        OpenAIChatDecoder(get_vendor(vendor)).decode_body(json.dumps(events).encode())
    for status in (400, 403, 429):
        body = json.dumps(events[0][1] if events else {}).encode()
        with contextlib.suppress(ZettError):
            OpenAIChatDecoder(get_vendor(vendor)).decode_error(status, {}, body)


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=400), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_random_bytes_only_raise_zett_errors(data: bytes, cuts: list[int]) -> None:
    def chunks() -> Iterator[bytes]:
        yield from split_at(b"data: " + data + b"\n\n" + data, cuts)

    with contextlib.suppress(ZettError):
        decode_sse("openrouter", list(chunks()))
    decoder = OpenAIChatDecoder(get_vendor("openai"))
    for call_ in (
        lambda: decoder.decode_body(data),
        lambda: decoder.decode_error(500, {"retry-after": "x"}, data),
    ):
        with contextlib.suppress(ZettError):
            call_()


def test_deeply_nested_json_is_counted_not_raised() -> None:
    decoder = OpenAIChatDecoder(get_vendor("openai"))
    decoder.feed_sse("message", "[" * 100_000)
    decoder.feed_sse("message", '{"choices": ' + "[" * 100_000)
    with pytest.raises(DecodeError):
        decoder.decode_body(b"[" * 100_000)
    assert decoder.finish().stop_info.detail["malformed_events"] == 2
