"""How a typed result is asked for, per vendor row, and what the loop does with
each kind of answer: the forced output tool (and the gate around it), the modes a
host forces, reasoning settings beside ``output_config``, llama.cpp's own mode,
unions, wrapped scalars, JSON-schema outputs, output validators, stored outputs
validated again on reload, ``max_turns`` and ``resume()``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from faults.wire import WIRES, Call, sse
from sdk_shapes import CHECKS
from zett_agent import (
    AgentClient,
    AgentEventType,
    AgentRunConfig,
    AssistantMessage,
    ConfigError,
    Model,
    OutputRetry,
    OutputValidationError,
    StopInfo,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    create_agent,
)
from zett_agent.testing import ReplayServer, Reply, ScriptedModel, reply

HERE = Path(__file__).parent / "recordings" / "structured"
OK = '{"name": "Paris", "population": 2102650}'


class City(BaseModel):
    name: str
    population: int


PARIS = City(name="Paris", population=2102650)
written: list[str] = []


def write_note(text: str) -> str:
    """Write a note."""
    written.append(text)
    return "written"


async def run_model(
    vendor: str,
    replies: list[Reply],
    config: AgentRunConfig | None = None,
    *,
    tools: list[Any] | None = None,
    output_type: Any = City,
) -> tuple[AssistantMessage | BaseException, list[dict[str, Any]], list[Any]]:
    with ReplayServer(replies) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k")
        agent = await create_agent(model, config, tools=tools or [], output_type=output_type)
        try:
            result: AssistantMessage | BaseException = await agent.run("The capital of France?")
        except Exception as error:
            result = error
        finally:
            await agent.aclose()
    return result, [r.json for r in server.requests], agent.messages


# ---------------------------------------------------------------- tool mode


async def test_a_row_without_a_native_mode_gets_a_forced_output_tool() -> None:
    message, bodies, _ = await run_model(
        "deepseek", [Reply.file(HERE / "deepseek__structured_tool_ok.sse")]
    )
    assert isinstance(message, AssistantMessage) and message.output == PARIS
    body = bodies[0]
    assert "response_format" not in body
    assert [t["function"]["name"] for t in body["tools"]] == ["final_result"]
    assert body["tools"][0]["function"]["parameters"]["required"] == ["name", "population"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
    CHECKS["openai-chat"](body)


async def test_an_invalid_output_call_is_answered_with_its_errors_and_retried() -> None:
    replies = [
        Reply.file(HERE / "deepseek__structured_tool_invalid.sse"),
        Reply.file(HERE / "deepseek__structured_tool_ok.sse"),
    ]
    message, bodies, history = await run_model("deepseek", replies)
    assert isinstance(message, AssistantMessage) and message.output == PARIS
    sent_back = bodies[1]["messages"][-1]
    assert sent_back["role"] == "tool" and sent_back["tool_call_id"] == "call_out"
    assert "population: Field required" in sent_back["content"]
    kinds = [type(m).__name__ for m in history]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",  # the errors, as the output tool's error result
        "AssistantMessage",
        "ToolResultMessage",  # "accepted": the output call has its result
    ]
    assert history[2].is_error and not history[4].is_error


async def test_a_cut_output_call_is_not_retried() -> None:
    replies = [
        Reply.file(HERE / "deepseek__structured_tool_max_output.sse"),
        Reply.file(HERE / "deepseek__structured_tool_ok.sse"),
    ]
    message, bodies, _ = await run_model("deepseek", replies)
    assert isinstance(message, AssistantMessage)
    assert message.stop is not None and message.stop.reason is StopReason.MAX_OUTPUT
    assert message.output is None and len(bodies) == 1


async def test_forcing_native_on_a_row_without_one_is_a_config_error() -> None:
    config = AgentRunConfig(output_mode="native")
    error, bodies, _ = await run_model("deepseek", [], config)
    assert isinstance(error, ConfigError) and "deepseek" in str(error)
    assert bodies == []  # nothing was sent


async def test_a_host_can_force_the_tool_mode_on_a_native_row() -> None:
    config = AgentRunConfig(output_mode="tool")
    message, bodies, _ = await run_model(
        "openai", [Reply.file(HERE / "deepseek__structured_tool_ok.sse")], config
    )
    assert isinstance(message, AssistantMessage) and message.output == PARIS
    assert "response_format" not in bodies[0]
    assert bodies[0]["tool_choice"]["function"]["name"] == "final_result"


async def test_a_call_of_another_tool_while_the_output_tool_is_forced_is_not_run() -> None:
    written.clear()
    chat = WIRES["openai-chat"]
    other = chat.reply(chat.answer([], Call(("a note",))))  # calls write_note
    config = AgentRunConfig(output_mode="tool", tool_choice="final_result")
    replies = [other, Reply.file(HERE / "deepseek__structured_tool_ok.sse")]
    message, bodies, history = await run_model("openai", replies, config, tools=[write_note])
    first = bodies[0]
    assert {t["function"]["name"] for t in first["tools"]} == {"write_note", "final_result"}
    assert first["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
    assert written == []  # the gate's rule 1: the request forced another tool
    result = history[2]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert "required a call of 'final_result'" in result.content
    answer = history[1]
    assert answer.stop.detail["not_offered_tool_calls"] == ["write_note"]
    assert isinstance(message, AssistantMessage) and message.output == PARIS
    assert bodies[1]["tool_choice"] == "required"  # tools ran: the forced choice was reset


async def test_output_tool_calls_never_reach_the_gate_as_functions() -> None:
    model = ScriptedModel(reply(tool_calls=[ToolCall("c1", "final_result", OK)]))
    agent = await create_agent(model, AgentRunConfig(output_mode="tool"), output_type=City)
    events = [e async for e in agent.stream("hi")]
    started = [e for e in events if e.type is AgentEventType.TOOL_CALL_STARTED]
    assert started == []  # not run as a tool
    assert events[-1].output == PARIS
    assert model.requests[0].tool_choice == "final_result"


async def test_no_forced_tool_with_extended_thinking() -> None:
    config = AgentRunConfig(output_mode="tool", reasoning="high")
    # the model answers in text, as it may without a forced tool: accepted when valid
    message, bodies, _ = await run_model(
        "anthropic", [Reply.file(HERE / "anthropic__structured_ok.sse")], config
    )
    body = bodies[0]
    assert body["tool_choice"] == {"type": "auto"}
    assert body["thinking"] == {"type": "adaptive"}
    assert [t["name"] for t in body["tools"]] == ["final_result"]
    CHECKS["anthropic"](body)
    assert isinstance(message, AssistantMessage) and message.output == PARIS


async def test_output_config_holds_the_format_and_the_reasoning_effort() -> None:
    config = AgentRunConfig(reasoning="high")
    _, bodies, _ = await run_model(
        "anthropic", [Reply.file(HERE / "anthropic__structured_ok.sse")], config
    )
    output_config = bodies[0]["output_config"]
    assert output_config["effort"] == "high"
    assert output_config["format"]["type"] == "json_schema"
    assert output_config["format"]["schema"]["additionalProperties"] is False
    CHECKS["anthropic"](bodies[0])


async def test_model_options_cannot_replace_the_output_format() -> None:
    other = {"output_config": {"format": {"type": "json_object"}}}
    error, bodies, _ = await run_model("anthropic", [], AgentRunConfig(model_options=other))
    assert isinstance(error, ConfigError) and "output_config.format.type" in str(error)
    assert bodies == []


async def test_gemini_beside_function_tools_uses_the_output_tool() -> None:
    call = {"functionCall": {"name": "final_result", "args": json.loads(OK)}}
    answer = {
        "candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}]
    }
    replies = [Reply([sse(answer)], content_type="text/event-stream")]
    message, bodies, _ = await run_model("google", replies, tools=[write_note])
    body = bodies[0]
    names = [d["name"] for d in body["tools"][0]["functionDeclarations"]]
    assert names == ["write_note", "final_result"]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert "responseJsonSchema" not in body.get("generationConfig", {})
    CHECKS["gemini"](body)
    assert isinstance(message, AssistantMessage) and message.output == PARIS


async def test_llamacpp_takes_json_object_with_a_schema_and_no_tool_choice() -> None:
    chat = WIRES["openai-chat"]
    replies = [chat.reply(chat.answer([OK]))]
    message, bodies, _ = await run_model("llamacpp", replies)
    body = bodies[0]
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["required"] == ["name", "population"]
    assert "tool_choice" not in body and "tools" not in body
    assert isinstance(message, AssistantMessage) and message.output == PARIS


async def test_llamacpp_with_a_tool_choice_uses_the_output_tool() -> None:
    chat = WIRES["openai-chat"]
    replies = [chat.reply(chat.answer([OK]))]  # a text answer; the schema was not applied
    config = AgentRunConfig(tool_choice="auto")
    message, bodies, _ = await run_model("llamacpp", replies, config, tools=[write_note])
    body = bodies[0]
    assert "response_format" not in body
    assert {t["function"]["name"] for t in body["tools"]} == {"write_note", "final_result"}
    assert body["tool_choice"] == "auto"
    assert isinstance(message, AssistantMessage) and message.output == PARIS


# ---------------------------------------------------------------- the types


@dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    left: str
    right: str


async def run_scripted(
    output_type: Any, *turns: Any, config: AgentRunConfig | None = None
) -> tuple[AssistantMessage, ScriptedModel]:
    model = ScriptedModel(*turns)
    agent = await create_agent(model, config, output_type=output_type)
    return await agent.run("hi"), model


async def test_a_union_is_one_output_tool_per_branch() -> None:
    call = ToolCall("c1", "final_result_Point", '{"x": 1, "y": 2}')
    message, model = await run_scripted(
        City | Point, reply(tool_calls=[call]), config=AgentRunConfig(output_mode="tool")
    )
    assert message.output == Point(1, 2)
    names = [t.name for t in model.requests[0].tools]
    assert names == ["final_result_City", "final_result_Point"]
    assert model.requests[0].tool_choice == "required"


async def test_scalars_lists_and_unions_are_wrapped_in_native_modes() -> None:
    message, model = await run_scripted(list[int], reply('{"result": [1, 2, 3]}'))
    assert message.output == [1, 2, 3]
    schema = model.requests[0].output.schema  # type: ignore[union-attr]
    assert schema["type"] == "object" and schema["required"] == ["result"]
    assert schema["properties"]["result"]["type"] == "array"
    message, model = await run_scripted(City | Point, reply('{"result": {"x": 3, "y": 4}}'))
    assert message.output == Point(3, 4)
    assert "anyOf" in model.requests[0].output.schema["properties"]["result"]  # type: ignore[union-attr]
    message, _ = await run_scripted(int, reply('{"result": 7}'))
    assert message.output == 7


async def test_dataclasses_typeddicts_and_json_schemas() -> None:
    message, _ = await run_scripted(Point, reply('{"x": 1, "y": 2}'))
    assert message.output == Point(1, 2)
    message, _ = await run_scripted(Pair, reply('```json\n{"left": "a", "right": "b"}\n```'))
    assert message.output == {"left": "a", "right": "b"}  # a Markdown fence is ignored
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}},
        "required": ["n"],
    }
    message, model = await run_scripted(schema, reply('{"n": 0}'), reply('{"n": 2}'))
    assert message.output == {"n": 2}
    retry = model.requests[1].messages[-1]
    assert isinstance(retry, UserMessage) and "0 is less than the minimum of 1" in retry.content


async def test_output_validators_run_after_the_schema_and_can_ask_for_a_retry() -> None:
    seen: list[Any] = []

    async def big_enough(city: City) -> None:
        seen.append(city)
        if city.population < 1000:
            raise OutputRetry("a capital has more than 1000 people")

    def shout(city: City) -> City:
        return city.model_copy(update={"name": city.name.upper()})

    config = AgentRunConfig(output_validators=[big_enough, shout])
    message, model = await run_scripted(
        City,
        reply('{"name": "Paris", "population": 3}'),
        reply(OK),
        config=config,
    )
    assert message.output == City(name="PARIS", population=2102650)
    assert len(seen) == 2
    assert "a capital has more than 1000 people" in model.requests[1].messages[-1].content


async def test_a_text_answer_in_tool_mode_is_reminded_of_the_tool() -> None:
    call = ToolCall("c1", "final_result", OK)
    message, model = await run_scripted(
        City,
        reply("Paris, about two million."),
        reply(tool_calls=[call]),
        config=AgentRunConfig(output_mode="tool"),
    )
    assert message.output == PARIS
    reminder = model.requests[1].messages[-1]
    assert isinstance(reminder, UserMessage) and "final_result" in reminder.content


async def test_an_unknown_stop_is_not_retried() -> None:
    other = StopInfo(StopReason.OTHER, raw="MALFORMED_FUNCTION_CALL")
    message, model = await run_scripted(City, reply('{"name": "Paris"}', stop=other), reply(OK))
    assert message.stop is not None and message.stop.raw == "MALFORMED_FUNCTION_CALL"
    assert message.output is None and len(model.requests) == 1


async def test_a_retry_counts_against_max_turns() -> None:
    message, model = await run_scripted(
        City, reply('{"name": "Paris"}'), reply(OK), config=AgentRunConfig(max_turns=1)
    )
    assert message.stop is not None and message.stop.raw == "max_turns"
    assert message.output is None and len(model.requests) == 1


async def test_output_retries_zero_fails_at_once() -> None:
    with pytest.raises(OutputValidationError) as caught:
        await run_scripted(City, reply("{}"), config=AgentRunConfig(output_retries=0))
    assert len(caught.value.attempts) == 1
    assert isinstance(caught.value.message, AssistantMessage)


async def test_a_per_run_output_type_wins_over_the_agents() -> None:
    model = ScriptedModel(reply('{"x": 5, "y": 6}'))
    agent = await create_agent(model, output_type=City)
    message = await agent.run("hi", output_type=Point)
    assert message.output == Point(5, 6)


# ---------------------------------------------------------------- stored, resumed


async def test_the_output_is_stored_as_json_and_made_the_type_again(tmp_path: Path) -> None:
    agent = await create_agent(ScriptedModel(reply(OK)), output_type=City)
    client = AgentClient(agent, tmp_path / "s.sqlite3", session_id="s1")
    message = await client.run("The capital of France?")
    assert message.output == PARIS
    rows = await client.store.rows("s1")
    stored = [r for r in rows if isinstance(r.message, AssistantMessage)][-1]
    assert stored.schema_version == 3 and stored.message.output == json.loads(OK)
    plain = await client.messages("s1")
    assert plain[-1].output == json.loads(OK)  # JSON without the type
    typed = await client.messages("s1", output_type=City)
    assert typed[-1].output == PARIS and isinstance(typed[-1].output, City)
    await client.aclose()


async def test_a_cut_structured_answer_is_resumed_and_validated_joined() -> None:
    model = ScriptedModel(
        reply('{"name": "Par', stop=StopReason.MAX_OUTPUT),
        reply('is", "population": 2102650}'),
    )
    agent = await create_agent(model, output_type=City)
    first = await agent.run("The capital of France?")
    assert first.stop is not None and first.stop.reason is StopReason.MAX_OUTPUT
    resumed = await agent.resume()
    assert resumed.output == PARIS


async def test_a_cut_typed_answer_resumed_by_prefill_is_validated_joined() -> None:
    """Anthropic continues a prefill: the continuation (``02650}``) is not JSON on its
    own; joined to the cut text it is the answer, with no second call."""
    wire = WIRES["anthropic"]

    def cut(texts: list[str], stop_reason: str) -> Reply:
        chunks = wire.answer(texts)
        tail = {
            "type": "message_delta",
            "usage": {"output_tokens": 5},
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        }
        return wire.reply([*chunks[:-2], sse(tail, "message_delta"), chunks[-1]])

    replies = [cut(['{"name": "Paris", ', '"population": 21'], "max_tokens")]
    replies.append(cut(["02650}"], "end_turn"))
    with ReplayServer(replies) as server:
        model = Model("anthropic", "m", base_url=server.url, api_key="k")
        agent = await create_agent(model, output_type=City)
        try:
            first = await agent.run("The capital of France?")
            assert first.stop is not None and first.stop.reason is StopReason.MAX_OUTPUT
            resumed = await agent.resume()
        finally:
            await agent.aclose()
    assert resumed.output == PARIS
    assert resumed.text == OK
    assert len(server.requests) == 2  # no "invalid, try again" turn
    sent = server.requests[1].json["messages"]
    assert sent[-1]["role"] == "assistant"  # the prefill
