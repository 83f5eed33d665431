"""Telemetry (issue: "telemetry a host already knows how to read"): OpenTelemetry
GenAI spans asserted with the SDK's in-memory exporter, and the per-step log record
whose keys are documented as stable.

The tracer provider is passed explicitly (``AgentRunConfig.tracer_provider``), so
nothing here depends on, or sets, the process-global provider."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from zett_agent import (
    AgentRunConfig,
    AssistantMessage,
    Message,
    Model,
    ProviderHTTPError,
    StopInfo,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    create_agent,
)
from zett_agent import _telemetry as telemetry_module
from zett_agent._telemetry import STEP_RECORD_KEYS, Telemetry, provider_name
from zett_agent.extensions import ContextCompaction
from zett_agent.testing import ReplayServer, Reply, ScriptedModel, reply

RECORDINGS = Path(__file__).parent / "recordings"

DOCUMENTED_STEP_KEYS = [
    "run_id",
    "agent",
    "step",
    "provider",
    "model",
    "finish_reason_raw",
    "finish_reason",
    "content_len",
    "tool_calls_count",
    "withheld_tool_calls",
    "input_tokens",
    "output_tokens",
    "elapsed_ms",
    "cache_read_tokens",
    "cache_write_tokens",
]

CURRENT_IN_TOOL: list[str] = []


def weather(city: str) -> str:
    """Weather for a city."""
    span = trace.get_current_span()
    CURRENT_IN_TOOL.append(getattr(span, "name", ""))
    return f"sunny in {city}"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    CURRENT_IN_TOOL.clear()
    yield tracer_provider
    tracer_provider.shutdown()


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    spans: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        spans.setdefault(span.name, []).append(span)
    return spans


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def sse(*events: dict[str, Any]) -> Reply:
    return Reply.sse((event["type"], event) for event in events)


def message_start(model: str = "claude-x") -> dict[str, Any]:
    return {"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": None,
            "usage": {"input_tokens": 11, "output_tokens": 1}}}  # fmt: skip


def tool_use_reply() -> Reply:
    return sse(
        message_start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",
         "id": "toolu_1", "name": "weather", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
         "partial_json": "{\"city\": \"Paris\"}"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    )  # fmt: skip


def text_reply(text: str, stop_reason: str = "end_turn", **delta: Any) -> Reply:
    return sse(
        message_start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None,
         **delta}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    )  # fmt: skip


def long_history(turns: int) -> list[Message]:
    history: list[Message] = []
    for n in range(turns):
        history += [
            UserMessage(f"Question {n}"),
            AssistantMessage("", (ToolCall(f"toolu_{n}", "weather", "{}"),)),
            ToolResultMessage(f"toolu_{n}", "weather", "sunny"),
            AssistantMessage(f"Answer {n}"),
        ]
    return history


def model_for(server: ReplayServer) -> Model:
    return Model("anthropic", "m", base_url=server.url, api_key="test", max_retries=0)


async def test_one_span_per_run_model_call_and_tool_with_genai_attributes(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    with ReplayServer([tool_use_reply(), text_reply("Sunny.")]) as server:
        config = AgentRunConfig("weather-bot", max_tokens=256, tracer_provider=provider)
        agent = await create_agent(model_for(server), config, tools=[weather])
        await agent.run("Weather in Paris?")
        await agent.aclose()
    spans = by_name(exporter)
    assert sorted(spans) == ["chat m", "execute_tool weather", "invoke_agent weather-bot"]
    (run,) = spans["invoke_agent weather-bot"]
    chats = spans["chat m"]
    (tool,) = spans["execute_tool weather"]
    assert len(chats) == 2

    assert run.kind is SpanKind.INTERNAL and run.parent is None
    assert attrs(run) | {"zett.run_id": "-"} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather-bot",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "m",
        "zett.run_id": "-",
        "zett.steps": 2,
        "zett.recoveries": 0,
        "gen_ai.usage.input_tokens": 22,
        "gen_ai.usage.output_tokens": 12,
        "zett.stop.reason": "end_turn",
    }
    run_id = run.context.span_id  # type: ignore[union-attr]
    for child in [*chats, tool]:
        assert child.parent is not None and child.parent.span_id == run_id
        assert child.context.trace_id == run.context.trace_id  # type: ignore[union-attr]

    first = chats[0] if attrs(chats[0])["zett.stop.reason"] == "tool_use" else chats[1]
    assert first.kind is SpanKind.CLIENT
    assert attrs(first) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "m",
        "gen_ai.request.max_tokens": 256,
        "gen_ai.response.model": "claude-x",
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.usage.input_tokens": 11,
        "gen_ai.usage.output_tokens": 7,
        "zett.stop.reason": "tool_use",
    }

    assert tool.kind is SpanKind.INTERNAL
    assert attrs(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "weather",
        "gen_ai.tool.call.id": "toolu_1",
        "gen_ai.tool.type": "function",
    }
    assert CURRENT_IN_TOOL == ["execute_tool weather"]  # the tool's own spans nest in it


async def test_refusal_span_carries_raw_finish_reason_and_zett_stop(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    refusal = sse(
        message_start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",
         "id": "toolu_1", "name": "weather", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
         "partial_json": "{\"city\": \"X\"}"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": None,
         "stop_details": {"type": "refusal", "category": "cyber", "explanation": "No."}},
         "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    )  # fmt: skip
    with ReplayServer([refusal]) as server:
        agent = await create_agent(
            model_for(server), AgentRunConfig(tracer_provider=provider), tools=[weather]
        )
        message = await agent.run("go")
        await agent.aclose()
    assert message.stop is not None and message.stop.reason is StopReason.REFUSAL
    spans = by_name(exporter)
    assert "execute_tool weather" not in spans
    (chat,) = spans["chat m"]
    assert attrs(chat)["gen_ai.response.finish_reasons"] == ("refusal",)
    assert attrs(chat)["zett.stop.reason"] == "refusal"
    assert attrs(chat)["zett.stop.category"] == "cyber"
    assert attrs(chat)["zett.stop.withheld_tool_calls"] == ("weather",)
    (run,) = spans["invoke_agent agent"]
    assert attrs(run)["zett.stop.reason"] == "refusal"
    assert attrs(run)["zett.stop.category"] == "cyber"
    assert run.status.status_code is StatusCode.UNSET  # a refusal is an outcome, not an error


async def test_raw_values_are_kept_for_other_providers_finish_reasons(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    stop = StopInfo(StopReason.MAX_OUTPUT, raw="length", category="length")
    model = ScriptedModel(reply("cut", stop=stop))
    await (await create_agent(model, AgentRunConfig(tracer_provider=provider))).run("go")
    (chat,) = by_name(exporter)["chat scripted-model"]
    assert attrs(chat)["gen_ai.response.finish_reasons"] == ("length",)
    assert attrs(chat)["zett.stop.reason"] == "max_output"
    assert attrs(chat)["gen_ai.provider.name"] == "scripted"


async def test_a_failed_call_marks_chat_and_run_spans_as_errors(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    too_long = RECORDINGS / "anthropic__400_prompt_too_long.json"
    with ReplayServer([Reply.file(too_long, status=400)]) as server:
        agent = await create_agent(model_for(server), AgentRunConfig(tracer_provider=provider))
        with pytest.raises(ProviderHTTPError):
            await agent.run("go")
        await agent.aclose()
    spans = by_name(exporter)
    (chat,) = spans["chat m"]
    (run,) = spans["invoke_agent agent"]
    for span in (chat, run):
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span)["error.type"] == "prompt_too_long"
    assert any(event.name == "exception" for event in chat.events)


async def test_a_recovered_call_says_so_on_its_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    too_long = RECORDINGS / "anthropic__400_prompt_too_long.json"
    with ReplayServer([Reply.file(too_long, status=400), text_reply("ok")]) as server:
        agent = await create_agent(
            model_for(server),
            AgentRunConfig(tracer_provider=provider),
            extensions=[ContextCompaction()],
        )
        message = await agent.run("go", history=long_history(3))
        await agent.aclose()
    assert message.text == "ok"
    spans = by_name(exporter)
    failed, answered = sorted(spans["chat m"], key=lambda s: s.start_time or 0)
    assert attrs(failed)["zett.recovery.by"] == "ContextCompaction"
    assert attrs(failed)["zett.recovery.action"] == "retry"
    assert attrs(failed)["error.type"] == "prompt_too_long"
    assert "zett.recovery.action" not in attrs(answered)
    (run,) = spans["invoke_agent agent"]
    assert attrs(run)["zett.recoveries"] == 1 and attrs(run)["zett.steps"] == 2
    assert run.status.status_code is StatusCode.UNSET


async def test_cancelled_run_ends_its_span_without_an_error(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedModel(reply("a long answer that streams in pieces", chunk=4))
    agent = await create_agent(model, AgentRunConfig(tracer_provider=provider))
    stream = agent.stream("go")
    async for event in stream:
        if event.text:
            break
    await stream.aclose()
    spans = by_name(exporter)
    (run,) = spans["invoke_agent agent"]
    assert attrs(run)["zett.cancelled"] is True
    assert run.status.status_code is StatusCode.UNSET


async def test_no_spans_when_disabled_or_when_opentelemetry_is_absent(
    provider: TracerProvider, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(reply("", [ToolCall("c", "weather", '{"city": "P"}')]), reply("ok"))
    config = AgentRunConfig(telemetry=False, tracer_provider=provider)
    assert (await create_agent(model, config, tools=[weather])).messages == []
    await (await create_agent(model, config, tools=[weather])).run("go")
    assert exporter.get_finished_spans() == ()

    monkeypatch.setattr(telemetry_module, "_OTEL", [None])  # as if the import had failed
    assert Telemetry(provider).tracer is None
    model = ScriptedModel(reply("", [ToolCall("c", "weather", '{"city": "P"}')]), reply("ok"))
    agent = await create_agent(model, AgentRunConfig(tracer_provider=provider), tools=[weather])
    assert (await agent.run("go")).text == "ok"
    assert exporter.get_finished_spans() == ()


def test_provider_names_follow_the_conventions() -> None:
    assert provider_name("anthropic") == "anthropic"
    assert provider_name("google") == "gcp.gemini"
    assert provider_name("vertex") == "gcp.vertex_ai"
    assert provider_name("mistral") == "mistral_ai"
    assert provider_name("deepseek") == "deepseek"


# ---------------------------------------------------------------- the step log record


async def test_step_log_record_keys_are_exactly_as_documented(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert list(STEP_RECORD_KEYS) == DOCUMENTED_STEP_KEYS
    doc = telemetry_module.__doc__ or ""
    documented = doc.split("Step log record (stable)")[1]
    for key in DOCUMENTED_STEP_KEYS:
        assert f"\n{key} " in documented, key

    refusal = StopInfo(StopReason.REFUSAL, "refusal", "cyber")
    model = ScriptedModel(
        reply("", [ToolCall("c", "weather", '{"city": "P"}')]),
        reply("no", [ToolCall("d", "weather", "{}")], stop=refusal),
    )
    agent = await create_agent(model, AgentRunConfig("logged"), tools=[weather])
    with caplog.at_level(logging.INFO, logger="zett_agent.steps"):
        await agent.run("go")
    records = [r.zett_step for r in caplog.records if hasattr(r, "zett_step")]  # type: ignore[attr-defined]
    assert len(records) == 2
    for record in records:
        assert list(record) == DOCUMENTED_STEP_KEYS
    assert records[1]["finish_reason"] == "refusal" and records[1]["withheld_tool_calls"] == 1
    messages = [json.loads(r.getMessage()) for r in caplog.records if hasattr(r, "zett_step")]
    assert messages == records


async def test_step_record_is_not_built_when_info_is_off(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="zett_agent.steps"):
        await (await create_agent(ScriptedModel(reply("ok")))).run("go")
    assert not [r for r in caplog.records if hasattr(r, "zett_step")]


async def test_each_recovery_is_one_log_record(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel(reply("", stop=StopReason.CONTEXT_FULL), reply("ok"))
    agent = await create_agent(model, extensions=[ContextCompaction()])
    with caplog.at_level(logging.INFO, logger="zett_agent.recovery"):
        await agent.run("go", history=long_history(3))
    (record,) = [r.zett_recovery for r in caplog.records if hasattr(r, "zett_recovery")]  # type: ignore[attr-defined]
    assert record["by"] == "ContextCompaction" and record["action"] == "retry"
    assert record["reason"] == "context_full" and record["step"] == 1
    assert set(record) == {"run_id", "step", "by", "action", "reason", "note"}
