"""The agent loop's decisions (seed 001's table), offline with ScriptedModel.

End-to-end versions over the HTTP stack are in test_agent_e2e.py.
"""

from __future__ import annotations

import json
import logging
import runpy
from pathlib import Path
from typing import Any

import anyio
import pytest

from zett_agent import (
    AgentEvent,
    AgentEventDispatcher,
    AgentEventType,
    AgentRunConfig,
    AgentStopError,
    AssistantMessage,
    Extension,
    ModelRequest,
    ModelResponse,
    ProviderHTTPError,
    StopInfo,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    create_agent,
)
from zett_agent.extensions import RefusalReplay, RefusalReplayExtension
from zett_agent.testing import ScriptedModel, reply
from zett_agent.tools import NOT_RUN

pytestmark = pytest.mark.looptime  # virtual time: tool timeouts and waits cost no wall time

E = AgentEventType
ROOT = Path(__file__).resolve().parents[1]


def call(name: str, args: dict[str, Any] | str, id: str = "c1") -> ToolCall:  # noqa: A002
    return ToolCall(id, name, args if isinstance(args, str) else json.dumps(args))


async def collect(agent: Any, prompt: str | None = "go") -> list[AgentEvent]:
    return [event async for event in agent.stream(prompt)]


def types(events: list[AgentEvent]) -> list[AgentEventType]:
    return [e.type for e in events if e.type not in (E.TEXT_DELTA, E.TOOL_CALL_DELTA)]


def final(events: list[AgentEvent]) -> AssistantMessage:
    assert events[-1].type is E.RUN_COMPLETED and events[-1].message is not None
    return events[-1].message


RAN: list[str] = []


def weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: the city name.
    """
    RAN.append(city)
    return f"sunny in {city}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def test_seed_example_program_runs() -> None:
    namespace = runpy.run_path(str(ROOT / "examples" / "stop_reasons.py"))
    anyio.run(namespace["main"])
    assert namespace["RAN"] == []


async def test_normal_end_is_not_reported() -> None:
    agent = await create_agent(ScriptedModel(reply("Hello there, friend")))
    events = await collect(agent)
    assert types(events) == [E.RUN_STARTED, E.MODEL_STARTED, E.MODEL_COMPLETED, E.RUN_COMPLETED]
    assert "".join(e.text or "" for e in events if e.type is E.TEXT_DELTA) == "Hello there, friend"
    message = final(events)
    assert message.stop is None and message.text == "Hello there, friend"
    assert events[-1].stop is None


async def test_tool_use_runs_tool_and_sends_result() -> None:
    model = ScriptedModel(
        reply("Looking.", [call("weather", {"city": "Paris"})]), reply("It is sunny.")
    )
    agent = await create_agent(model, tools=[weather])
    events = await collect(agent)
    assert RAN == ["Paris"]
    assert types(events) == [
        E.RUN_STARTED, E.MODEL_STARTED, E.MODEL_COMPLETED, E.TOOL_CALL_STARTED,
        E.TOOL_CALL_COMPLETED, E.MODEL_STARTED, E.MODEL_COMPLETED, E.RUN_COMPLETED,
    ]  # fmt: skip
    sent = model.requests[1].messages
    assert sent[-1] == ToolResultMessage("c1", "weather", "sunny in Paris")
    assert final(events).text == "It is sunny."
    spec = model.requests[0].tools[0]
    assert spec.name == "weather" and spec.description == "Weather for a city."
    assert spec.parameters["properties"]["city"]["description"] == "the city name."
    assert spec.parameters["required"] == ["city"]


async def test_content_decides_tool_use_whatever_the_label() -> None:
    model = ScriptedModel(
        reply("", [call("weather", {"city": "Oslo"})], StopInfo(StopReason.END_TURN, "end_turn")),
        reply("done"),
    )
    agent = await create_agent(model, tools=[weather])
    await agent.run("go")
    assert RAN == ["Oslo"]


async def test_bad_arguments_unknown_tool_and_failing_tool_are_answered_not_raised() -> None:
    def boom() -> str:
        raise RuntimeError("disk on fire")

    model = ScriptedModel(
        reply(
            "",
            [
                call("weather", {"town": "Paris"}, "a"),
                call("nope", {}, "b"),
                call("boom", {}, "c"),
                call("weather", "{not json", "d"),
            ],
        ),
        reply("ok"),
    )
    agent = await create_agent(model, tools=[weather, boom])
    message = await agent.run("go")
    results = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["a", "b", "c", "d"]
    assert all(r.is_error for r in results)
    assert "city" in results[0].content and "Unknown tool 'nope'" in results[1].content
    assert "disk on fire" in results[2].content and "not valid JSON" in results[3].content
    assert RAN == [] and message.text == "ok"


async def test_parallel_tool_calls_run_concurrently_in_order() -> None:
    first_started = anyio.Event()
    second_started = anyio.Event()

    async def first() -> str:
        first_started.set()
        await second_started.wait()  # deadlocks unless both run at once
        return "one"

    async def second() -> str:
        second_started.set()
        await first_started.wait()
        return "two"

    model = ScriptedModel(reply("", [call("first", {}, "1"), call("second", {}, "2")]), reply("x"))
    agent = await create_agent(model, tools=[first, second])
    with anyio.fail_after(5):
        await agent.run("go")
    results = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == ["one", "two"]


@pytest.mark.parametrize("reason", [StopReason.REFUSAL, StopReason.INTERRUPTED])
async def test_refusal_and_interruption_withhold_tool_calls(reason: StopReason) -> None:
    stop = StopInfo(reason, raw=reason.value, category="cyber", message="Declined.")
    model = ScriptedModel(reply("I'll delete", [call("weather", {"city": "X"})], stop))
    agent = await create_agent(model, tools=[weather])
    events = await collect(agent)
    assert types(events) == [
        E.RUN_STARTED, E.MODEL_STARTED, E.MODEL_COMPLETED, E.MODEL_STOPPED, E.RUN_COMPLETED,
    ]  # fmt: skip
    message = final(events)
    assert RAN == [] and message.tool_calls == ()
    assert message.text == "I'll delete"
    assert message.stop is not None and message.stop.reason is reason
    assert message.stop.detail["withheld_tool_calls"] == ["weather"]
    assert message.provider_record is not None and message.provider_record["tool_calls"] == []
    stopped = next(e for e in events if e.type is E.MODEL_STOPPED)
    assert stopped.stop == message.stop
    with pytest.raises(AgentStopError):
        message.raise_for_stop()


async def test_after_model_sees_the_stored_stop() -> None:
    seen: list[Any] = []

    class Watch(Extension):
        def after_model(self, response: ModelResponse) -> None:
            seen.append(response.stop)

    stop = StopInfo(StopReason.REFUSAL, "refusal", "bio")
    model = ScriptedModel(reply("", [call("weather", {"city": "X"})], stop))
    agent = await create_agent(model, tools=[weather], extensions=[Watch()])
    message = await agent.run("go")
    assert seen == [message.stop]


async def test_paused_is_continued_silently() -> None:
    model = ScriptedModel(
        reply("searching", stop=StopReason.PAUSED),
        reply("more", stop=StopReason.PAUSED),
        reply("answer"),
    )
    agent = await create_agent(model)
    events = await collect(agent)
    assert E.MODEL_STOPPED not in types(events)
    assert len(model.requests) == 3
    # the paused message is sent back as the last message of the continuation
    assert isinstance(model.requests[1].messages[-1], AssistantMessage)
    assert final(events).stop is None and final(events).text == "answer"


async def test_paused_is_reported_when_continuations_run_out() -> None:
    model = ScriptedModel(*(reply("x", stop=StopReason.PAUSED) for _ in range(3)))
    agent = await create_agent(model)
    agent.max_pause_continuations = 2
    events = await collect(agent)
    assert len(model.requests) == 3
    assert types(events).count(E.MODEL_STOPPED) == 1
    assert final(events).stop is not None
    assert final(events).stop.reason is StopReason.PAUSED  # type: ignore[union-attr]


async def test_max_output_cut_tool_call_is_answered_with_error_and_model_goes_on() -> None:
    cut = reply("", [call("weather", '{"city": "Pa')], StopReason.MAX_OUTPUT)
    model = ScriptedModel(cut, reply("sorry"))
    agent = await create_agent(model, tools=[weather])
    events = await collect(agent)
    assert RAN == []
    result = model.requests[1].messages[-1]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert "cut off" in result.content
    assert types(events).count(E.MODEL_STOPPED) == 1
    assert final(events).text == "sorry"


@pytest.mark.parametrize("reason", [StopReason.MAX_OUTPUT, StopReason.CONTEXT_FULL])
async def test_truncation_without_tools_ends_and_reports(reason: StopReason) -> None:
    model = ScriptedModel(reply("half an ans", stop=reason))
    events = await collect(await create_agent(model))
    assert E.MODEL_STOPPED in types(events) and types(events)[-1] is E.RUN_COMPLETED
    message = final(events)
    assert message.stop is not None and message.stop.truncated and message.text == "half an ans"


async def test_other_is_reported_and_the_run_carries_on() -> None:
    odd = StopInfo(StopReason.OTHER, raw="MODEL_ARMOR")
    model = ScriptedModel(reply("", [call("weather", {"city": "Rome"})], odd), reply("fine"))
    events = await collect(await create_agent(model, tools=[weather]))
    assert RAN == ["Rome"]
    assert types(events).count(E.MODEL_STOPPED) == 1
    assert final(events).stop is None


async def test_max_turns_ends_with_its_own_result() -> None:
    model = ScriptedModel(*(reply("", [call("weather", {"city": "Loop"})]) for _ in range(3)))
    agent = await create_agent(model, AgentRunConfig("t", max_turns=3), tools=[weather])
    events = await collect(agent)
    assert len(model.requests) == 3 and RAN == ["Loop"] * 3
    assert E.MAX_TURNS_REACHED in types(events)
    message = final(events)
    assert message.stop is not None and message.stop.raw == "max_turns"
    assert (
        message.stop.describe() == "other (max_turns): The run reached its limit of 3 model calls."
    )


async def test_stop_hook_vetoes_completion_once() -> None:
    class NeedTests(Extension):
        vetoed = False

        def on_complete(self, message: AssistantMessage, messages: Any) -> str | None:
            if self.vetoed:
                return None
            self.vetoed = True
            return "Run the tests before you finish."

    model = ScriptedModel(reply("done?"), reply("tests pass, done"))
    agent = await create_agent(model, extensions=[NeedTests()])
    message = await agent.run("go")
    assert message.text == "tests pass, done"
    assert model.requests[1].messages[-1] == UserMessage("Run the tests before you finish.")


async def test_stop_hook_is_not_asked_after_a_refusal() -> None:
    class Veto(Extension):
        def on_complete(self, message: AssistantMessage, messages: Any) -> str:
            return "again"

    model = ScriptedModel(reply("no", stop=StopReason.REFUSAL))
    message = await (await create_agent(model, extensions=[Veto()])).run("go")
    assert len(model.requests) == 1 and message.stop is not None


async def test_before_model_changes_only_the_request() -> None:
    class Shout(Extension):
        async def before_model(self, request: ModelRequest) -> ModelRequest:
            request.messages = [UserMessage("CHANGED")]
            return request

    model = ScriptedModel(reply("a"))
    agent = await create_agent(model, extensions=[Shout()])
    await agent.run("original")
    assert model.requests[0].messages == [UserMessage("CHANGED")]
    assert agent.messages[0] == UserMessage("original")


@pytest.mark.parametrize(("replay", "sent"), [(RefusalReplay.KEEP, 3), (RefusalReplay.DROP, 2)])
async def test_refusal_replay(replay: RefusalReplay, sent: int) -> None:
    model = ScriptedModel(reply("no", stop=StopReason.REFUSAL), reply("ok"))
    agent = await create_agent(model, extensions=[RefusalReplayExtension(replay=replay)])
    await agent.run("first")
    await agent.run("second")
    assert len(model.requests[1].messages) == sent
    # history and stored messages keep the refused answer either way
    assert len(agent.messages) == 4
    refused = agent.messages[1]
    assert isinstance(refused, AssistantMessage) and refused.stop is not None


async def test_dispatcher_hears_model_stopped() -> None:
    heard: list[str] = []

    class Notices(AgentEventDispatcher):
        async def on_model_stopped_event(self, event: AgentEvent) -> None:
            assert event.stop is not None
            heard.append(event.stop.describe())

        def on_run_completed_event(self, event: AgentEvent) -> None:
            heard.append("completed")

    stop = StopInfo(StopReason.REFUSAL, "refusal", "cyber", "No.")
    agent = await create_agent(ScriptedModel(reply("", stop=stop)))
    await agent.run("go", dispatcher=Notices())
    assert heard == ["refusal (cyber): No.", "completed"]


async def test_provider_error_fails_the_run_with_an_event() -> None:
    error = ProviderHTTPError("bad key", provider="x", status=401)
    agent = await create_agent(ScriptedModel(error))
    events: list[AgentEvent] = []

    async def consume() -> None:
        async for event in agent.stream("go"):
            events.append(event)

    with pytest.raises(ProviderHTTPError):
        await consume()
    assert events[-1].type is E.RUN_FAILED and events[-1].error is error


async def test_orphaned_tool_call_in_history_is_repaired_before_sending() -> None:
    model = ScriptedModel(reply("ok"))
    agent = await create_agent(model)
    history = [UserMessage("a"), AssistantMessage("", (call("weather", {"city": "X"}),))]
    await agent.run("b", history=history)
    sent = model.requests[0].messages
    assert sent[2] == ToolResultMessage("c1", "weather", NOT_RUN, is_error=True)
    assert sent[3] == UserMessage("b")


async def test_one_structured_log_record_per_model_call(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel(reply("", [call("weather", {"city": "P"})]), reply("done"))
    agent = await create_agent(model, AgentRunConfig("logged"), tools=[weather])
    with caplog.at_level(logging.INFO, logger="zett_agent.steps"):
        await agent.run("go")
    records = [r.zett_step for r in caplog.records if hasattr(r, "zett_step")]  # type: ignore[attr-defined]
    assert [r["step"] for r in records] == [1, 2]
    assert records[0]["finish_reason"] == "tool_use" and records[0]["tool_calls_count"] == 1
    assert records[1]["content_len"] == 4 and records[1]["agent"] == "logged"
    assert set(records[0]) >= {"run_id", "finish_reason_raw", "elapsed_ms", "output_tokens"}
    assert json.loads(caplog.records[0].getMessage())["step"] == 1


async def test_event_records_are_json() -> None:
    stop = StopInfo(StopReason.REFUSAL, "refusal", "cyber")
    events = await collect(await create_agent(ScriptedModel(reply("x", stop=stop))))
    for event in events:
        json.dumps(event.to_dict())
    stopped = next(e for e in events if e.type is E.MODEL_STOPPED).to_dict()
    assert stopped["stop"]["describe"] == "refusal (cyber)"


async def test_forced_tool_choice_is_reset_after_tools_ran() -> None:
    model = ScriptedModel(reply("", [call("weather", {"city": "Paris"})]), reply("done"))
    config = AgentRunConfig("t", tool_choice="weather")
    message = await (await create_agent(model, config, tools=[weather])).run("go")
    assert [r.tool_choice for r in model.requests] == ["weather", None]
    assert message.text == "done"


async def test_forced_tool_choice_kept_when_reset_is_off() -> None:
    model = ScriptedModel(*(reply("", [call("weather", {"city": "P"})]) for _ in range(2)))
    config = AgentRunConfig("t", tool_choice="weather", reset_tool_choice=False, max_turns=2)
    await (await create_agent(model, config, tools=[weather])).run("go")
    assert [r.tool_choice for r in model.requests] == ["weather", "weather"]


async def test_max_turns_marker_is_stored_but_never_sent() -> None:
    model = ScriptedModel(reply("", [call("weather", {"city": "A"})]), reply("after"))
    agent = await create_agent(model, AgentRunConfig("t", max_turns=1), tools=[weather])
    first = await agent.run("go")
    assert first.stop is not None and first.stop.raw == "max_turns"
    assert first.stop.message == "The run reached its limit of 1 model call."
    assert agent.messages[-1] == first  # a reopened session shows why the run ended
    assert await agent.run(None) == agent.messages[-1]  # carry on from the tool result
    sent = model.requests[1].messages
    assert all(not (isinstance(m, AssistantMessage) and m.stop) for m in sent)
    assert isinstance(sent[-1], ToolResultMessage)


async def test_context_full_with_tool_calls_runs_complete_ones_and_answers_cut_ones() -> None:
    full = reply(
        "", [call("weather", {"city": "Oslo"}, "a"), call("weather", '{"ci', "b")],
        StopReason.CONTEXT_FULL,
    )  # fmt: skip
    model = ScriptedModel(full, reply("ok"))
    events = await collect(await create_agent(model, tools=[weather]))
    assert RAN == ["Oslo"]
    results = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, True] and "cut off" in results[1].content
    assert types(events).count(E.MODEL_STOPPED) == 1


async def test_paused_with_tool_calls_runs_them_and_goes_on() -> None:
    paused = reply("", [call("weather", {"city": "Lima"})], StopReason.PAUSED)
    model = ScriptedModel(paused, reply("done"))
    message = await (await create_agent(model, tools=[weather])).run("go")
    assert RAN == ["Lima"] and message.text == "done"
    assert isinstance(model.requests[1].messages[-1], ToolResultMessage)


async def test_cancel_while_tools_run_stores_finished_results_and_says_so() -> None:
    async def fast() -> str:
        return "fast done"

    async def slow() -> str:
        await anyio.sleep(30)
        return "never"

    model = ScriptedModel(reply("", [call("fast", {}, "f"), call("slow", {}, "s")]))
    agent = await create_agent(model, tools=[fast, slow])
    with anyio.move_on_after(0.5) as scope:
        await agent.run("go")
    assert scope.cancelled_caught
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("f", False), ("s", True)]
    assert results[0].content == "fast done"
    assert "cancelled while this tool call was running" in results[1].content


async def test_a_failed_model_call_gets_a_step_record(caplog: pytest.LogCaptureFixture) -> None:
    agent = await create_agent(ScriptedModel(ProviderHTTPError("down", provider="x", status=500)))
    with caplog.at_level(logging.INFO, logger="zett_agent.steps"), pytest.raises(ProviderHTTPError):
        await agent.run("go")
    records = [r.zett_step for r in caplog.records if hasattr(r, "zett_step")]  # type: ignore[attr-defined]
    assert len(records) == 1 and records[0]["finish_reason"] == "interrupted"
