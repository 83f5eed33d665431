"""Google Gemini / Vertex: recordings replayed over a real socket, one case per documented
finishReason (stream and non-stream), prompt blocks, Vertex partialArgs, public-report
cases (empty ``content: {}``, no candidates after a tool round), errors, vendor rows,
request encoding, and fuzzing of the sans-IO decoder."""

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
from zett_agent.errors import ProviderHTTPError, StreamError, ZettError
from zett_agent.model import Model
from zett_agent.protocols import get_protocol
from zett_agent.stop import StopReason
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import get_vendor

RECORDINGS = Path(__file__).parent / "recordings"
PROTOCOL = get_protocol("gemini")
VENDOR = get_vendor("google")
R = StopReason
SSE_FILES = sorted(RECORDINGS.glob("gemini__stream_*.sse")) + sorted(
    RECORDINGS.glob("vertex__stream_*.sse")
)


# ---------------------------------------------------------------- helpers


async def call(
    *replies: Reply, req: ModelRequest | None = None, vendor: str = "google", **options: Any
) -> tuple[ModelResponse, ReplayServer]:
    return await replay_call(vendor, replies, req, api_key="test", max_retries=0, **options)


async def call_raises(exc: type[Exception], *replies: Reply, **options: Any) -> Exception:
    error, _ = await replay_raises(exc, "google", replies, api_key="test", max_retries=0, **options)
    return error


def chunks_reply(*chunks: dict[str, Any]) -> Reply:
    return Reply.sse([(None, c) for c in chunks])


def candidate(
    parts: list[dict[str, Any]] | None, finish: Any = None, **extra: Any
) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts} if parts else {}}
    if finish is not None:
        cand["finishReason"] = finish
    return {
        "candidates": [cand | extra],
        "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2},
        "modelVersion": "gemini-test",
    }


def body_or_stream(body: dict[str, Any], stream: bool) -> Reply:
    """``body`` whole, or as a stream whose text arrives before the finishing chunk."""
    if not stream:
        return Reply.json(body)
    cand = body["candidates"][0]
    parts = cand.get("content", {}).get("parts") or []
    head = {"candidates": [{"content": {"role": "model", "parts": parts}}]} if parts else None
    tail = {**body, "candidates": [{**cand, "content": {"role": "model", "parts": []}}]}
    return chunks_reply(*([head] if head else []), tail)


def decode_chunks(chunks: list[bytes]) -> ModelResponse:
    return decode_sse_chunks(PROTOCOL.decoder(VENDOR), chunks)


# ---------------------------------------------------------------- recordings


async def test_recording_stop_with_function_call_is_tool_use() -> None:
    body = (RECORDINGS / "gemini__STOP_with_functionCall_finishMessage.json").read_bytes()
    response, server = await call(Reply.body(body), stream=False)
    info = response.stop_info
    assert info.reason is R.TOOL_USE
    assert info.raw == "STOP"
    assert info.message == "Model generated function call(s)."
    (tool,) = response.tool_calls
    assert tool.name == "weather"
    assert tool.parsed_arguments() == {"location": "San Francisco"}
    assert response.usage.input_tokens == 29
    assert response.usage.output_tokens == 15 + 893
    assert response.usage.reasoning_tokens == 893
    assert response.model == "gemini-3-pro-preview"
    record = response.provider_record
    assert record is not None
    assert record["protocol"] == "gemini"
    assert record["content"]["parts"][0]["thoughtSignature"].startswith("EskgCsYgAb4")
    sent = server.requests[0]
    assert sent.path == "/models/m:generateContent"
    assert sent.headers["x-goog-api-key"] == "test"
    assert sent.json == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


async def test_recording_max_tokens() -> None:
    body = (RECORDINGS / "gemini__finish_max_tokens.json").read_bytes()
    response, _ = await call(Reply.body(body), stream=False)
    assert response.stop_info.reason is R.MAX_OUTPUT
    assert response.stop_info.raw == "MAX_TOKENS"
    assert response.text == "The capital of France is"
    assert response.usage.input_tokens == 15
    assert response.usage.output_tokens == 5


async def test_recording_max_tokens_with_no_parts() -> None:
    body = (RECORDINGS / "gemini__finish_max_tokens_empty_thinking.json").read_bytes()
    response, _ = await call(Reply.body(body), stream=False)
    assert response.stop_info.reason is R.MAX_OUTPUT
    assert response.text == ""
    assert response.usage.reasoning_tokens == 2
    assert response.provider_record is None


async def test_recording_safety_with_empty_content() -> None:
    body = (RECORDINGS / "gemini__finish_safety_empty_content.json").read_bytes()
    response, _ = await call(Reply.body(body), stream=False)
    info = response.stop_info
    assert info.reason is R.REFUSAL
    assert info.raw == "SAFETY"
    assert info.category == "SAFETY"
    assert info.message is None
    assert info.detail["safety_ratings"][0]["blocked"] is True
    assert response.text == ""


async def test_recording_stream_function_call_and_stop_in_one_chunk() -> None:
    path = RECORDINGS / "gemini__stream_functionCall_and_STOP_same_chunk.sse"
    response, server = await call(Reply.file(path))
    assert response.stop_info.reason is R.TOOL_USE
    (tool,) = response.tool_calls
    assert tool.name == "get_capital"
    assert tool.parsed_arguments() == {"country": "France"}
    assert response.usage.input_tokens == 52
    sent = server.requests[0]
    assert sent.path == "/models/m:streamGenerateContent?alt=sse"


async def test_recording_stream_function_call_then_stop_with_empty_text() -> None:
    path = RECORDINGS / "gemini__stream_functionCall_then_STOP_empty_text.sse"
    response, _ = await call(Reply.file(path))
    assert response.stop_info.reason is R.TOOL_USE
    assert response.stop_info.raw == "STOP"
    assert response.tool_calls[0].parsed_arguments() == {"location": "San Francisco"}
    assert response.text == ""
    record = response.provider_record
    assert record is not None
    (part,) = record["content"]["parts"]  # the empty text part is not kept
    assert part["functionCall"]["name"] == "weather"
    assert part["thoughtSignature"].startswith("EqUCCqICAb4")


async def test_recording_stream_usage_is_the_last_chunks() -> None:
    path = RECORDINGS / "gemini__stream_text_usage_changes_between_chunks.sse"
    response, _ = await call(Reply.file(path))
    assert response.stop_info.reason is R.END_TURN
    assert response.text == "The temperature in Paris is 30°C.\n"
    assert response.usage.input_tokens == 79  # not 169 + 79
    assert response.usage.output_tokens == 12
    record = response.provider_record
    assert record is not None
    assert record["content"]["parts"] == [{"text": "The temperature in Paris is 30°C.\n"}]


async def test_recording_vertex_model_armor_is_a_refusal_with_message() -> None:
    body = (RECORDINGS / "vertex__finish_model_armor_finishMessage.json").read_bytes()
    response, _ = await call(Reply.body(body), vendor="vertex", stream=False)
    info = response.stop_info
    assert info.reason is R.REFUSAL
    assert info.raw == "MODEL_ARMOR"
    assert info.category == "MODEL_ARMOR"
    assert info.message is not None
    assert info.message.startswith("The response violated Responsible AI Safety")
    assert response.text == ""


@pytest.mark.parametrize("stream", [True, False])
async def test_recording_vertex_prompt_blocked(stream: bool) -> None:
    body = json.loads(
        (RECORDINGS / "vertex__promptFeedback_blockReason_model_armor.json").read_text()
    )
    reply = chunks_reply(body) if stream else Reply.json(body)
    response, _ = await call(reply, vendor="vertex", stream=stream)
    info = response.stop_info
    assert info.reason is R.REFUSAL
    assert info.raw == "MODEL_ARMOR"
    assert info.category == "MODEL_ARMOR"
    assert info.message == "The prompt violated Prompt Injection and Jailbreak filters."
    assert response.text == ""
    assert response.tool_calls == ()


async def test_recording_vertex_partial_args_join_into_calls() -> None:
    path = RECORDINGS / "vertex__stream_functionCall_partialArgs_willContinue.sse"
    response, _ = await call(Reply.file(path), vendor="vertex")
    assert response.stop_info.reason is R.TOOL_USE
    assert [(c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        ("getWeather", {"location": "Boston"}),
        ("getWeather", {"location": "San Francisco"}),
    ]
    assert len({c.id for c in response.tool_calls}) == 2
    assert response.usage.input_tokens == 26
    assert response.usage.output_tokens == 23 + 132
    record = response.provider_record
    assert record is not None
    first, second = record["content"]["parts"]
    assert first["functionCall"] == {"name": "getWeather", "args": {"location": "Boston"}}
    assert first["thoughtSignature"].startswith("CiMBjz1rX25")
    assert "thoughtSignature" not in second


async def test_recording_vertex_partial_args_without_terminal_call() -> None:
    path = RECORDINGS / "vertex__stream_partialArgs_missing_terminal_functionCall.sse"
    response, _ = await call(Reply.file(path), vendor="vertex")
    assert response.stop_info.reason is R.TOOL_USE
    (tool,) = response.tool_calls
    assert tool.name == "writeItems"
    assert tool.parsed_arguments() == {
        "operations": [
            {
                "action": "add",
                "description": "Fresh red apple",
                "itemid": "apple_001",
                "price": 0.5,
            },
            {
                "action": "add",
                "description": "Ripe yellow banana",
                "itemid": "banana_001",
                "price": 0.3,
            },
        ]
    }


async def test_recording_429_resource_exhausted_retry_info() -> None:
    body = (RECORDINGS / "gemini__429_RESOURCE_EXHAUSTED_retryinfo.json").read_bytes()
    error = await call_raises(ProviderHTTPError, Reply.body(body, status=429))
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 429
    assert error.error_type == "RESOURCE_EXHAUSTED"
    assert error.code == 429
    assert error.retry_after == 34.4
    assert error.retryable
    assert error.message == "You exceeded your current quota, please check your plan."
    header = await call_raises(
        ProviderHTTPError, Reply.body(body, status=429, headers={"retry-after": "5"})
    )
    assert isinstance(header, ProviderHTTPError)
    assert header.retry_after == 5.0  # the header wins


@pytest.mark.parametrize(
    ("recording", "stream"),
    [
        ("gemini__stream_doc_usage_tool_use_prompt_search.sse", True),
        ("gemini__doc_usage_tool_use_prompt_search.json", False),
    ],
)
async def test_tool_use_prompt_tokens_are_input(recording: str, stream: bool) -> None:
    """A google_search answer: totalTokenCount 832 = prompt 209 + candidates 301 +
    thoughts 36 + toolUsePrompt 286 (google-genai GenerateContentResponseUsageMetadata)."""
    response, _ = await call(Reply.file(RECORDINGS / recording), stream=stream)
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (495, 337, 36)
    assert usage.total_tokens == 832


def test_every_recording_is_covered() -> None:
    names = {p.name for p in RECORDINGS.glob("gemini__*")} | {
        p.name for p in RECORDINGS.glob("vertex__*")
    }
    source = Path(__file__).read_text()
    assert all(name in source for name in names)


# ---------------------------------------------------------------- documented values

REFUSALS = [
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "MODEL_ARMOR",
    "ESCALATION",
    "PUP_LIMITED_DISABLED",
]
OTHERS = [
    "OTHER",
    "MALFORMED_FUNCTION_CALL",
    "LANGUAGE",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "FINISH_REASON_UNSPECIFIED",
    "SOMETHING_NEW",
    7,
]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("raw", "reason"),
    [("STOP", R.END_TURN), ("MAX_TOKENS", R.MAX_OUTPUT), ("CONTINUATION", R.PAUSED)]
    + [(v, R.REFUSAL) for v in REFUSALS]
    + [(v, R.OTHER) for v in OTHERS],
)
async def test_finish_values(raw: Any, reason: StopReason, stream: bool) -> None:
    ratings = [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}]
    body = candidate(
        [{"text": "Some text"}], raw, finishMessage="Why it ended.", safetyRatings=ratings
    )
    response, _ = await call(body_or_stream(body, stream), stream=stream)
    info = response.stop_info
    assert info.reason is reason
    assert info.raw == str(raw)
    assert info.message == "Why it ended."
    # abnormal stops without a policy category carry the raw value (seed 002)
    assert info.category == (None if info.ok else str(raw))
    assert ("safety_ratings" in info.detail) == (reason is R.REFUSAL)
    assert response.text == "Some text"
    assert response.usage.input_tokens == 4


@pytest.mark.parametrize("stream", [True, False])
async def test_malformed_function_call_with_empty_content(stream: bool) -> None:
    """Public-report case: ``content: {}`` with MALFORMED_FUNCTION_CALL never crashes."""
    body = {
        "candidates": [
            {
                "content": {},
                "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": "Malformed function call: print(default_api.x(",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 100, "totalTokenCount": 100},
    }
    reply = chunks_reply(body) if stream else Reply.json(body)
    response, _ = await call(reply, stream=stream)
    info = response.stop_info
    assert info.reason is R.OTHER
    assert info.raw == "MALFORMED_FUNCTION_CALL"
    assert info.message == "Malformed function call: print(default_api.x("
    assert response.text == ""
    assert response.tool_calls == ()


def tool_round() -> ModelRequest:
    return ModelRequest(
        model="m",
        messages=[
            UserMessage("weather in Paris?"),
            AssistantMessage("", (ToolCall("call_0", "weather", '{"city": "Paris"}'),)),
            ToolResultMessage("call_0", "weather", "sunny"),
        ],
    )


async def test_no_candidates_after_a_tool_round_body() -> None:
    """Public-report case: after a function response Gemini answers 200 with no candidates
    and no promptFeedback. Chosen reading: INTERRUPTED (the provider ended the step without
    output or a reason), so the runtime reports it instead of carrying on."""
    body = {
        "usageMetadata": {"promptTokenCount": 80, "totalTokenCount": 80},
        "modelVersion": "gemini-2.5-flash",
    }
    response, server = await call(Reply.json(body), req=tool_round(), stream=False)
    info = response.stop_info
    assert info.reason is R.INTERRUPTED
    assert info.detail["no_candidates"] is True
    assert info.message == "the provider returned no candidates"
    assert response.usage.input_tokens == 80
    contents = server.requests[0].json["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [{"functionCall": {"name": "weather", "args": {"city": "Paris"}}}],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "weather", "response": {"result": "sunny"}}}],
    }


async def test_no_candidates_after_a_tool_round_stream_is_the_body_stop() -> None:
    """Issue 11 part 3: a stream that sent chunks with no candidates answered, like the
    body: INTERRUPTED ``no_candidates``, not retried as "nothing arrived"."""
    body = {"usageMetadata": {"promptTokenCount": 80}, "modelVersion": "gemini-2.5-flash"}
    with ReplayServer([chunks_reply(body), chunks_reply(body)]) as server:
        model = Model("google", "m", base_url=server.url, api_key="test", max_retries=1)
        response = await model.complete(tool_round())
        await model.aclose()
    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (R.INTERRUPTED, None, None)
    assert info.detail == {"no_candidates": True}
    assert info.message == "the provider returned no candidates"
    assert len(server.requests) == 1  # not retried


async def test_stream_without_finish_reason_is_interrupted() -> None:
    reply = chunks_reply({"candidates": [{"content": {"parts": [{"text": "Half an ans"}]}}]})
    response, _ = await call(reply)
    assert response.stop_info.reason is R.INTERRUPTED
    assert response.stop_info.detail["incomplete_stream"] is True
    assert response.text == "Half an ans"


async def test_dropped_stream_keeps_text() -> None:
    reply = chunks_reply(
        {"candidates": [{"content": {"parts": [{"text": "Half"}]}}]},
        {"candidates": [{"content": {"parts": [{"text": " more"}]}, "finishReason": "STOP"}]},
    )
    reply.drop_after = 1
    response, _ = await call(reply)
    assert response.stop_info.reason is R.INTERRUPTED
    assert response.text == "Half"
    assert "transport_error" in response.stop_info.detail


async def test_error_chunk_after_text_is_interrupted() -> None:
    reply = chunks_reply(
        {"candidates": [{"content": {"parts": [{"text": "Partial"}]}}]},
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
    )
    response, _ = await call(reply)
    info = response.stop_info
    assert info.reason is R.INTERRUPTED
    assert info.raw == "UNAVAILABLE"
    assert info.message == "The model is overloaded."
    assert response.text == "Partial"


async def test_error_chunk_before_output_raises() -> None:
    reply = chunks_reply({"error": {"code": 500, "message": "Internal", "status": "INTERNAL"}})
    error = await call_raises(StreamError, reply)
    assert isinstance(error, StreamError)
    assert error.error_type == "INTERNAL"
    assert error.code == 500


async def test_thought_parts_are_reasoning_and_kept_for_replay() -> None:
    reply = chunks_reply(
        {"candidates": [{"content": {"parts": [{"text": "Let me think", "thought": True}]}}]},
        {"candidates": [{"content": {"parts": [{"text": ". Done.", "thought": True}]}}]},
        {
            "candidates": [
                {
                    "content": {"parts": [{"text": "Answer", "thoughtSignature": "sig"}]},
                    "finishReason": "STOP",
                }
            ]
        },
    )
    response, _ = await call(reply)
    assert response.reasoning == "Let me think. Done."
    assert response.text == "Answer"
    record = response.provider_record
    assert record is not None
    assert record["content"]["parts"] == [
        {"text": "Let me think. Done.", "thought": True},
        {"text": "Answer", "thoughtSignature": "sig"},
    ]


async def test_malformed_chunks_are_counted_and_skipped() -> None:
    reply = chunks_reply(
        {"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}
    )
    reply.chunks = [b"data: {oops\n\n", b"data: 42\n\n", *reply.chunks]
    response, _ = await call(reply)
    assert response.stop_info.reason is R.END_TURN
    assert response.stop_info.detail["malformed_events"] == 2


# ---------------------------------------------------------------- vendors


async def test_vertex_row_sends_a_bearer_token() -> None:
    path = RECORDINGS / "gemini__stream_text_usage_changes_between_chunks.sse"
    _, server = await call(Reply.file(path), vendor="vertex")
    assert server.requests[0].headers["authorization"] == "Bearer test"
    assert "x-goog-api-key" not in server.requests[0].headers
    _, express = await call(Reply.file(path), vendor="vertex-express")
    assert express.requests[0].headers["x-goog-api-key"] == "test"


async def test_vertex_base_url_follows_the_documented_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vertex = get_vendor("vertex")
    assert vertex.protocol == "gemini"
    assert vertex.base_url == (
        "https://aiplatform.googleapis.com/v1/projects/{project}/locations/{location}"
        "/publishers/google"
    )
    url = "https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/google"
    monkeypatch.setenv("ZETT_VERTEX_BASE_URL", url)
    monkeypatch.setenv("VERTEX_ACCESS_TOKEN", "tok")
    model = Model("vertex", "gemini-2.5-flash")
    assert model.base_url == url
    assert model.headers()["authorization"] == "Bearer tok"
    await model.aclose()


async def test_opencode_zen_gemini_endpoint_and_cost_frame() -> None:
    path = RECORDINGS / "gemini__stream_functionCall_and_STOP_same_chunk.sse"
    reply = Reply.file(path)
    reply.chunks = [
        *reply.chunks,
        b'event: ping\ndata: {"type":"ping","cost":"0.0004"}\n\n',
        b'data: {"cost":"0.0004"}\n\n',
    ]
    response, server = await call(reply, vendor="opencode-zen", protocol="gemini")
    assert response.stop_info.reason is R.TOOL_USE
    assert "malformed_events" not in response.stop_info.detail
    sent = server.requests[0]
    assert sent.headers["x-goog-api-key"] == "test"  # Zen's /models endpoint reads this one
    assert "authorization" not in sent.headers
    assert sent.path == "/models/m:streamGenerateContent?alt=sse"


# ---------------------------------------------------------------- encoding


def test_encode_request() -> None:
    record = {
        "protocol": "gemini",
        "content": {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "fc-9", "name": "a", "args": {}}, "thoughtSignature": "s1"},
                {"functionCall": {"name": "b", "args": {"x": 1}}},
            ],
        },
    }
    req = ModelRequest(
        model="models/gemini-2.5-pro",
        messages=[
            SystemMessage("Be brief."),
            UserMessage("go"),
            AssistantMessage(
                "",
                (ToolCall("fc-9", "a"), ToolCall("call_1", "b", '{"x":1}')),
                provider_record=record,
            ),
            ToolResultMessage("fc-9", "a", "A!"),
            ToolResultMessage("call_1", "b", "bad", is_error=True),
            AssistantMessage("Done.", (ToolCall("call_0", "c", "not json"),)),
        ],
        tools=[ToolSpec("a", "Tool A", {"type": "object"})],
        max_tokens=50,
        temperature=0.5,
        stop_sequences=["END"],
        tool_choice="a",
        stream=False,
        extra_body={"safetySettings": []},
    )
    http = PROTOCOL.encode_request(req, VENDOR)
    assert http.path == "/models/gemini-2.5-pro:generateContent"
    assert http.response_format == "json"
    assert http.params == {}
    assert http.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            record["content"],
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "a", "response": {"result": "A!"}, "id": "fc-9"}},
                    {"functionResponse": {"name": "b", "response": {"error": "bad"}}},
                ],
            },
            {
                "role": "model",
                "parts": [{"text": "Done."}, {"functionCall": {"name": "c", "args": {}}}],
            },
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {"name": "a", "description": "Tool A", "parameters": {"type": "object"}}
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a"]}},
        "generationConfig": {"maxOutputTokens": 50, "temperature": 0.5, "stopSequences": ["END"]},
        "safetySettings": [],
    }
    streamed = PROTOCOL.encode_request(
        ModelRequest(model="m", messages=[], tool_choice="none"), VENDOR
    )
    assert streamed.params == {"alt": "sse"}
    assert streamed.body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


def test_without_tool_calls() -> None:
    record = {
        "protocol": "gemini",
        "content": {
            "role": "model",
            "parts": [{"text": "Let me check."}, {"functionCall": {"name": "a", "args": {}}}],
        },
    }
    assert PROTOCOL.without_tool_calls(record) == {
        "protocol": "gemini",
        "content": {"role": "model", "parts": [{"text": "Let me check."}]},
    }
    assert (
        PROTOCOL.without_tool_calls(
            {"protocol": "gemini", "content": {"parts": [{"functionCall": {"name": "a"}}]}}
        )
        is None
    )
    assert PROTOCOL.without_tool_calls(None) is None


# ---------------------------------------------------------------- fuzzing


@pytest.mark.parametrize("path", SSE_FILES, ids=lambda p: p.name)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_chunk_splits_do_not_matter(path: Path, data: st.DataObject) -> None:
    body = path.read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=30)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decoded(decode_chunks(pieces)) == decoded(decode_chunks([body]))


_KEYS = st.sampled_from(
    [
        "candidates",
        "content",
        "parts",
        "text",
        "thought",
        "functionCall",
        "name",
        "args",
        "partialArgs",
        "jsonPath",
        "stringValue",
        "numberValue",
        "boolValue",
        "nullValue",
        "willContinue",
        "finishReason",
        "finishMessage",
        "promptFeedback",
        "blockReason",
        "usageMetadata",
        "promptTokenCount",
        "error",
        "index",
        "id",
        "thoughtSignature",
    ]
)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["$.a", "$.a[2].b", "$['x']", "$[0]", "$..", "STOP"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=25,
)


@settings(max_examples=40, deadline=None)
@given(events=st.lists(_JSON | st.text(max_size=30), max_size=10))
def test_garbage_chunks_only_raise_zett_errors(events: list[Any]) -> None:
    decoder = PROTOCOL.decoder(VENDOR)
    try:
        for payload in events:
            decoder.feed_sse(
                "message", payload if isinstance(payload, str) else json.dumps(payload)
            )
        decoder.finish()
    except ZettError:
        pass


async def test_implicit_cache_hits_are_reported_as_cached_input() -> None:
    body = (RECORDINGS / "gemini__doc_usage_implicit_cache.json").read_bytes()
    response, _ = await call(Reply.body(body), stream=False)
    usage = response.usage
    assert (usage.input_tokens, usage.cached_input_tokens) == (2006, 1920)
    assert (usage.output_tokens, usage.reasoning_tokens) == (300, 100)  # thoughts included
    assert usage.cache_write_tokens is None  # implicit caching bills no writes
