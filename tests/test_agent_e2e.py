"""The agent loop end to end: real HTTP over 127.0.0.1, recorded provider traffic,
the real decoders. Checks what the runtime SENT on each request as well as what it
returned (issue: the agent loop, "Proof")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from zett_agent import (
    AgentEventType,
    AgentRunConfig,
    AssistantMessage,
    Model,
    StopReason,
    TransportError,
    create_agent,
)
from zett_agent.testing import ReplayServer, Reply

RECORDINGS = Path(__file__).parent / "recordings"

E = AgentEventType
RAN: list[dict[str, Any]] = []


def get_capital(country: str) -> str:
    """The capital of a country."""
    RAN.append({"country": country})
    return {"France": "Paris"}.get(country, "unknown")


def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append({"path": path})
    return "deleted"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def anthropic_sse(*events: dict[str, Any]) -> Reply:
    return Reply.sse((event["type"], event) for event in events)


def anthropic_text_reply(text: str, stop_reason: str = "end_turn") -> Reply:
    return anthropic_sse(
        {"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",
         "model": "claude-x", "content": [], "stop_reason": None,
         "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    )  # fmt: skip


def model_for(server: ReplayServer, vendor: str, **options: Any) -> Model:
    return Model(vendor, "m", base_url=server.url, api_key="test-key", **options)


async def test_anthropic_pause_turn_is_continued_with_the_server_blocks_sent_back() -> None:
    with ReplayServer(
        [
            Reply.file(RECORDINGS / "anthropic__stream_pause_turn_message_delta.sse"),
            anthropic_text_reply("The answer."),
        ]
    ) as server:
        agent = await create_agent(model_for(server, "anthropic"))
        events = [e async for e in agent.stream("Search the web")]
        await agent.aclose()
    assert E.MODEL_STOPPED not in [e.type for e in events]
    final = events[-1].message
    assert final is not None and final.stop is None and final.text == "The answer."
    assert len(server.requests) == 2
    first_answer = server.requests[1].json["messages"][-1]
    assert first_answer["role"] == "assistant"
    assert any(block["type"] == "server_tool_use" for block in first_answer["content"])


async def test_anthropic_refusal_after_complete_tool_use_never_runs_the_tool() -> None:
    refusal = anthropic_sse(
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
         "model": "claude-x", "content": [], "stop_reason": None,
         "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "Deleting now."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use",
         "id": "toolu_1", "name": "delete_file", "input": {}}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"/etc\"}"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": None,
         "stop_details": {"type": "refusal", "category": "cyber",
                          "explanation": "This request was declined."}},
         "usage": {"output_tokens": 20}},
        {"type": "message_stop"},
    )  # fmt: skip
    with ReplayServer([refusal, anthropic_text_reply("Okay.")]) as server:
        agent = await create_agent(model_for(server, "anthropic"), tools=[delete_file])
        message = await agent.run("Clean up")
        assert RAN == [] and message.tool_calls == ()
        assert message.stop is not None and message.stop.reason is StopReason.REFUSAL
        assert message.stop.describe() == "refusal (cyber): This request was declined."
        assert message.stop.detail["withheld_tool_calls"] == ["delete_file"]
        assert message.text == "Deleting now."
        # Replaying the history never sends a tool_use without its result.
        await agent.run("Something else")
        await agent.aclose()
    replayed = server.requests[1].json["messages"]
    kinds = [b["type"] for m in replayed if isinstance(m["content"], list) for b in m["content"]]
    assert "tool_use" not in kinds and "tool_result" not in kinds
    assert "Deleting now." in json.dumps(replayed)


async def test_openrouter_error_after_text_is_interrupted_with_text_kept() -> None:
    chunk = {"id": "gen-1", "object": "chat.completion.chunk", "model": "openai/gpt-4o"}
    stream = Reply.sse(
        [
            (None, {**chunk, "choices": [{"index": 0, "delta": {"content": "Half an "}}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {"content": "answer"}}]}),
            (None, {**chunk, "error": {"code": 502, "message": "Upstream died"},
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error",
                                 "native_finish_reason": None}]}),
            (None, "[DONE]"),
        ]
    )  # fmt: skip
    with ReplayServer([stream]) as server:
        agent = await create_agent(model_for(server, "openrouter"))
        events = [e async for e in agent.stream("hi")]
        await agent.aclose()
    stopped = [e for e in events if e.type is E.MODEL_STOPPED]
    assert len(stopped) == 1 and events[-1].type is E.RUN_COMPLETED
    message = events[-1].message
    assert message is not None and message.text == "Half an answer"
    assert message.stop is not None and message.stop.reason is StopReason.INTERRUPTED
    assert message.stop.message == "Upstream died"
    assert len(server.requests) == 1  # output was streamed: never retried


async def test_gemini_stop_with_function_call_runs_the_tool() -> None:
    answer = Reply.sse(
        [(None, {"candidates": [{"content": {"role": "model", "parts": [{"text": "Paris."}]},
                                 "finishReason": "STOP"}]})]
    )  # fmt: skip
    with ReplayServer(
        [Reply.file(RECORDINGS / "gemini__stream_functionCall_and_STOP_same_chunk.sse"), answer]
    ) as server:
        agent = await create_agent(model_for(server, "google"), tools=[get_capital])
        message = await agent.run("Capital of France?")
        await agent.aclose()
    assert RAN == [{"country": "France"}]
    assert message.text == "Paris." and message.stop is None
    sent = json.dumps(server.requests[1].json["contents"])
    assert "functionResponse" in sent and "Paris" in sent


async def test_kimi_content_filter_400_is_a_refusal_and_the_run_completes() -> None:
    with ReplayServer(
        [Reply.file(RECORDINGS / "kimi__400_content_filter_high_risk.json", status=400)]
    ) as server:
        agent = await create_agent(model_for(server, "kimi"))
        events = [e async for e in agent.stream("something risky")]
        await agent.aclose()
    assert [e.type for e in events][-3:] == [E.MODEL_COMPLETED, E.MODEL_STOPPED, E.RUN_COMPLETED]
    message = events[-1].message
    assert isinstance(message, AssistantMessage) and message.text == ""
    assert message.stop is not None and message.stop.refused
    assert message.stop.message == "The request was rejected because it was considered high risk"


async def test_transient_error_before_output_is_retried_honouring_retry_after() -> None:
    overloaded = Reply.json(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        status=529,
        headers={"retry-after": "0"},
    )
    with ReplayServer([overloaded, anthropic_text_reply("fine")]) as server:
        agent = await create_agent(model_for(server, "anthropic", max_retries=1))
        message = await agent.run("hi")
        await agent.aclose()
    assert message.text == "fine" and len(server.requests) == 2


async def test_dropped_stream_after_output_is_interrupted_and_not_retried() -> None:
    reply = anthropic_text_reply("Some words that will be cut")
    reply.drop_after = 4  # after the first text delta, before message_delta
    with ReplayServer([reply, anthropic_text_reply("never sent")]) as server:
        agent = await create_agent(model_for(server, "anthropic", max_retries=2))
        message = await agent.run("hi")
        await agent.aclose()
    assert message.stop is not None and message.stop.reason is StopReason.INTERRUPTED
    assert message.text == "Some words that will be cut"
    assert len(server.requests) == 1


async def test_idle_stream_ends_as_interrupted_keeping_text() -> None:
    reply = anthropic_text_reply("Before the stall")
    reply.stall_after, reply.stall_seconds = 4, 3.0
    with ReplayServer([reply]) as server:
        agent = await create_agent(model_for(server, "anthropic", idle_timeout=0.5))
        message = await agent.run("hi")
        await agent.aclose()
    assert message.stop is not None and message.stop.reason is StopReason.INTERRUPTED
    assert message.text == "Before the stall"
    assert "idle" in message.stop.detail["transport_error"]


async def test_dropped_connection_before_output_raises_after_retries() -> None:
    dead = anthropic_text_reply("x")
    dead.drop_after = 0
    dead2 = anthropic_text_reply("x")
    dead2.drop_after = 0
    with ReplayServer([dead, dead2]) as server:
        agent = await create_agent(model_for(server, "anthropic", max_retries=1))
        with pytest.raises(TransportError):
            await agent.run("hi")
        await agent.aclose()
    assert len(server.requests) == 2


async def test_key_goes_in_headers_and_string_model_resolves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ReplayServer([anthropic_text_reply("ok")]) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
        monkeypatch.setenv("ZETT_ANTHROPIC_BASE_URL", server.url)
        agent = await create_agent(
            "anthropic:claude-sonnet-4-5", config=AgentRunConfig("t", instructions="Be brief.")
        )
        await agent.run("hi")
        await agent.aclose()
    sent = server.requests[0]
    assert sent.headers["x-api-key"] == "sk-secret" and sent.path == "/v1/messages"
    assert sent.json["model"] == "claude-sonnet-4-5" and sent.json["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]


async def test_non_streamed_answer_may_take_longer_than_the_idle_timeout() -> None:
    body = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "slow but whole"}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 3},
    }  # fmt: skip
    with ReplayServer([Reply.json(body, stall_after=0, stall_seconds=1.0)]) as server:
        model = model_for(server, "anthropic", idle_timeout=0.3, stream=False, max_retries=0)
        agent = await create_agent(model)
        message = await agent.run("hi")
        await agent.aclose()
    assert message.text == "slow but whole" and message.stop is None


async def test_stream_silent_before_any_byte_is_a_retryable_transport_error() -> None:
    reply = anthropic_text_reply("late")
    reply.stall_after, reply.stall_seconds = 0, 2.0
    with ReplayServer([reply]) as server:
        model = model_for(server, "anthropic", first_output_timeout=0.3, max_retries=0)
        agent = await create_agent(model)
        with pytest.raises(TransportError) as caught:
            await agent.run("hi")
        await agent.aclose()
    assert caught.value.retryable and caught.value.limit == "first_output_timeout"
