"""``UIMessageStream`` on its own (sans-IO): a run's events become UI stream chunks.

Offline runs (``ScriptedModel``) cover what the replayed HTTP tests do not: answers
that arrive whole, reasoning, max_turns, duplicate tool call ids, a failed run, and
that the stored session gives the same parts as the stream.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from zett_agent import Agent, AgentClient, AgentRunConfig, ToolCall, Usage
from zett_agent._exchange import ModelResponse, ReasoningDelta, TextDelta
from zett_agent._resume import CONTINUE_PROMPT
from zett_agent.errors import ProviderHTTPError
from zett_agent.serve import UIMessageStream, finish_reason, stop_data, ui_messages
from zett_agent.sessions import InMemorySessionStore
from zett_agent.stop import StopInfo, StopReason
from zett_agent.testing import ScriptedModel, ScriptedTurn, reply


def get_weather(city: str) -> str:
    """Weather (test tool)."""
    return f"{city}: sunny"


async def encode(model: ScriptedModel, prompt: str = "hi", **config: Any) -> list[dict[str, Any]]:
    agent = Agent(model, AgentRunConfig("t", **config), [get_weather])
    encoder = UIMessageStream("a1")
    chunks = encoder.start()
    async for event in agent.stream(prompt):
        chunks += encoder.feed(event)
    return chunks + encoder.finish()


def kinds(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["type"] for c in chunks]


def whole(text: str, stop: StopInfo | StopReason | None = None, **fields: Any) -> ScriptedTurn:
    """A turn that arrives at once (no deltas), as the local model's does with tools."""
    streamed = reply(text, stop=stop)
    response = streamed.response
    if fields:
        response = ModelResponse(
            response.text,
            response.tool_calls,
            response.stop_info,
            Usage(),
            provider_record=response.provider_record,
            **fields,
        )
    return ScriptedTurn([], response)


async def test_an_answer_that_arrives_whole_is_sent_as_text() -> None:
    chunks = await encode(ScriptedModel(whole("All at once.", StopReason.MAX_OUTPUT)))
    assert kinds(chunks) == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "data-stop",
        "finish-step",
        "finish",
    ]
    assert chunks[3]["delta"] == "All at once."
    assert chunks[-1]["finishReason"] == "length"


async def test_reasoning_then_text_are_separate_closed_parts() -> None:
    turn = reply("Answer.")
    events = [ReasoningDelta("think "), ReasoningDelta("more"), TextDelta("Answer.")]
    response = ModelResponse(
        "Answer.",
        (),
        StopInfo(StopReason.END_TURN),
        Usage(),
        provider_record=turn.response.provider_record,
        reasoning="think more",
    )
    chunks = await encode(ScriptedModel(ScriptedTurn(events, response)))
    assert kinds(chunks)[1:9] == [
        "start-step",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-end",
    ]
    ids = {c["id"] for c in chunks if "id" in c}
    assert len(ids) == 2  # one id per part


async def test_max_turns_is_a_data_stop_outside_a_step_and_other() -> None:
    call = ToolCall("c1", "get_weather", '{"city": "Oslo"}')
    chunks = await encode(ScriptedModel(reply(tool_calls=[call])), max_turns=1)
    assert kinds(chunks)[-3:] == ["finish-step", "data-stop", "finish"]
    assert chunks[-2]["data"]["raw"] == "max_turns"
    assert chunks[-1]["finishReason"] == "other"


async def test_duplicate_and_empty_call_ids_get_distinct_tool_call_ids() -> None:
    calls = [
        ToolCall("same", "get_weather", '{"city": "A"}'),
        ToolCall("same", "get_weather", '{"city": "B"}'),  # the loop renames it, does not run it
        ToolCall("", "get_weather", '{"city": "C"}'),
    ]
    chunks = await encode(ScriptedModel(reply(tool_calls=calls), reply("done")))
    inputs = [c["toolCallId"] for c in chunks if c["type"] == "tool-input-available"]
    outputs = {c["toolCallId"]: c["output"] for c in chunks if c["type"] == "tool-output-available"}
    errors = {c["toolCallId"] for c in chunks if c["type"] == "tool-output-error"}
    assert len(set(inputs)) == 3 and "" not in inputs
    assert set(outputs) | errors == set(inputs)
    assert sorted(outputs.values()) == ["A: sunny", "C: sunny"]
    assert len(errors) == 1


async def test_a_failed_run_sends_an_error_without_the_provider_text() -> None:
    error = ProviderHTTPError("the key sk-secret-123 is invalid", status=401)
    agent = Agent(ScriptedModel(error), AgentRunConfig("t"))
    encoder = UIMessageStream("a1")
    chunks = encoder.start()

    async def feed() -> None:
        nonlocal chunks
        async for event in agent.stream("hi"):
            chunks += encoder.feed(event)

    with pytest.raises(ProviderHTTPError):
        await feed()
    chunks += encoder.fail("The run failed: ProviderHTTPError.")
    assert kinds(chunks) == ["error", "finish"]  # nothing streamed: no message started
    assert "secret" not in str(chunks)
    assert chunks[-1]["finishReason"] == "error"


def test_abort_closes_open_parts() -> None:
    encoder = UIMessageStream("a1")
    from zett_agent import AgentEvent, AgentEventType

    encoder.feed(AgentEvent(AgentEventType.MODEL_STARTED, "r", 1))
    encoder.feed(AgentEvent(AgentEventType.TEXT_DELTA, "r", 1, text="par"))
    assert encoder.abort() == [
        {"type": "text-end", "id": "a1-t1"},
        {"type": "finish-step"},
        {"type": "abort", "reason": "cancelled"},
    ]


def test_finish_reason_and_stop_data() -> None:
    stop = StopInfo(StopReason.REFUSAL, "refusal", "cyber", "No.", detail={"x": 1})
    assert finish_reason(None) == "stop"
    assert finish_reason(stop) == "content-filter"
    assert stop_data(stop) == {
        "reason": "refusal",
        "raw": "refusal",
        "category": "cyber",
        "message": "No.",
        "recommended_model": None,
        "detail": {"x": 1},
        "describe": "refusal (cyber): No.",
    }


async def test_a_stored_resumed_session_is_one_message_per_answer() -> None:
    store = InMemorySessionStore()
    model = ScriptedModel(reply("Half", stop=StopReason.MAX_OUTPUT), reply(" and the rest."))
    client = AgentClient(Agent(model, AgentRunConfig("t")), store)
    await client.run("go", session_id="s")
    await client.resume("s")
    rows = await store.rows("s")
    messages = ui_messages(rows, CONTINUE_PROMPT)
    assert [m["id"] for m in messages] == ["u1", "a1"]
    assert [p["type"] for p in messages[1]["parts"]] == [
        "step-start",
        "text",
        "data-stop",
        "step-start",
        "text",
    ]
    # a user who sends the continuation text after a normal answer is a user turn
    model.turns.append(reply("ok"))
    await client.run(CONTINUE_PROMPT, session_id="s")
    messages = ui_messages(await store.rows("s"), CONTINUE_PROMPT)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]


@pytest.mark.parametrize(
    "reason", [StopReason.MAX_OUTPUT, StopReason.CONTEXT_FULL, StopReason.OTHER]
)
async def test_is_cut_off_says_what_the_tool_gate_does(reason: StopReason) -> None:
    """The UI stream shows a call as cut (tool-input-error) exactly when the loop
    answers it with the cut-off error instead of running it."""
    from zett_agent import AssistantMessage, ToolResultMessage
    from zett_agent._telemetry import Telemetry
    from zett_agent.tools import CUT_OFF_ARGUMENTS, ToolGate, as_tool, is_cut_off

    calls = (
        ToolCall("a", "get_weather", '{"city": "Oslo"}'),
        ToolCall("b", "get_weather", '{"city": "Os'),
        ToolCall("c", "get_weather", ""),
        ToolCall("d", "get_weather", "[1]"),
    )
    answer = AssistantMessage(tool_calls=calls, stop=StopInfo(reason))
    gate = ToolGate({"get_weather": as_tool(get_weather)}, (), Telemetry(None, enabled=False))
    screening = gate.screen(answer)
    results: list[ToolResultMessage | None] = [None] * len(calls)

    async def keep(index: int, result: ToolResultMessage) -> None:
        results[index] = result

    await gate.run(calls, None, keep, answered=screening.answered)
    ran_as_cut = [r is not None and r.content == CUT_OFF_ARGUMENTS for r in results]
    assert ran_as_cut == [is_cut_off(answer, call) for call in calls]
    assert any(ran_as_cut) is (reason is not StopReason.OTHER)
