"""Recovery extensions (issue: "Recovery as opt-in extensions"): end to end over the
replay server with handwritten and recorded Anthropic traffic, checking what was
SENT on each request and what the stored session keeps; the hook's own rules
offline with ScriptedModel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from zett_agent import (
    AgentClient,
    AgentEventType,
    AgentRunConfig,
    AssistantMessage,
    Extension,
    Message,
    Model,
    ProviderHTTPError,
    StopInfo,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    create_agent,
)
from zett_agent._recovery import error_stop, is_context_overflow, is_superseded, join_pieces
from zett_agent._resume import CONTINUE_PROMPT
from zett_agent.extensions import (
    ContinueWith,
    ConvergenceGuard,
    EndRun,
    OutputLimitRecovery,
    RecoveryContext,
    RefusalFallback,
    RetryRequest,
)
from zett_agent.extensions._compaction import DROPPED_NOTE, SUMMARY_HEADER, ContextCompaction
from zett_agent.testing import ReplayServer, Reply, ScriptedModel, reply

RECORDINGS = Path(__file__).parent / "recordings"
E = AgentEventType
RAN: list[str] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def weather(city: str) -> str:
    """Weather for a city."""
    RAN.append(city)
    return f"sunny in {city}"


# ---------------------------------------------------------------- wire helpers


def text_reply(text: str, stop_reason: str = "end_turn", model: str = "claude-x") -> Reply:
    return Reply.sse(
        (event["type"], event)
        for event in (
            {"type": "message_start", "message": {"id": "msg_1", "type": "message",
             "role": "assistant", "model": model, "content": [], "stop_reason": None,
             "usage": {"input_tokens": 10, "output_tokens": 1}}},
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": text}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop_reason,
             "stop_sequence": None}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        )
    )  # fmt: skip


def tool_reply(call_id: str, name: str, arguments: dict[str, Any]) -> Reply:
    return Reply.sse(
        (event["type"], event)
        for event in (
            {"type": "message_start", "message": {"id": "msg_t", "type": "message",
             "role": "assistant", "model": "claude-x", "content": [], "stop_reason": None,
             "usage": {"input_tokens": 10, "output_tokens": 1}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",
             "id": call_id, "name": name, "input": {}}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
             "partial_json": json.dumps(arguments)}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use",
             "stop_sequence": None}, "usage": {"output_tokens": 9}},
            {"type": "message_stop"},
        )
    )  # fmt: skip


def json_message(text: str, model: str) -> Reply:
    return Reply.json(
        {"id": "msg_f", "type": "message", "role": "assistant", "model": model,
         "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
         "stop_sequence": None, "usage": {"input_tokens": 18, "output_tokens": 4}}
    )  # fmt: skip


def model_for(server: ReplayServer, name: str = "m", **options: Any) -> Model:
    return Model("anthropic", name, base_url=server.url, api_key="test", max_retries=0, **options)


def sent_texts(request_json: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of each message sent, tool blocks shown by type and id."""
    shown: list[tuple[str, str]] = []
    for message in request_json["messages"]:
        content = message["content"]
        if isinstance(content, str):
            shown.append((message["role"], content))
            continue
        for block in content:
            if block["type"] == "text":
                shown.append((message["role"], block["text"]))
            else:
                key = block.get("id") or block.get("tool_use_id")
                shown.append((message["role"], f"<{block['type']} {key}>"))
    return shown


def tool_pairs_intact(request_json: dict[str, Any]) -> bool:
    uses, results = set(), set()
    for message in request_json["messages"]:
        if isinstance(message["content"], list):
            for block in message["content"]:
                if block["type"] == "tool_use":
                    uses.add(block["id"])
                elif block["type"] == "tool_result":
                    results.add(block["tool_use_id"])
    return uses == results


def long_history(turns: int = 5) -> list[Message]:
    """A conversation of ``turns`` user questions, each answered through a tool."""
    history: list[Message] = []
    for n in range(turns):
        history += [
            UserMessage(f"Question {n}: what is the weather in city {n}? " + "x" * 200),
            AssistantMessage(
                f"Looking up city {n}.", (ToolCall(f"toolu_{n}", "weather", f'{{"city": "{n}"}}'),)
            ),
            ToolResultMessage(f"toolu_{n}", "weather", f"sunny in {n} " + "y" * 200),
            AssistantMessage(f"It is sunny in city {n}."),
        ]
    return history


async def session_with(client: AgentClient, messages: list[Message]) -> None:
    for message in messages:
        await client.store.append(client.session_id, message)


# ---------------------------------------------------------------- output limit


async def test_max_output_recovered_by_raised_limit_then_a_continue_turn_into_one_answer() -> None:
    with ReplayServer(
        [
            text_reply("An answer that got c", "max_tokens"),
            text_reply("A longer answer, still c", "max_tokens"),
            text_reply("ut off, and now finished.", "end_turn"),
            text_reply("You're welcome."),
        ]
    ) as server:
        agent = await create_agent(
            model_for(server),
            AgentRunConfig(max_tokens=100),
            extensions=[OutputLimitRecovery(max_tokens_ceiling=400)],
        )
        client = AgentClient(agent)
        events = [e async for e in client.stream("Write it")]
        stored = await client.messages()
        await client.run("Thanks")  # the stored session, loaded again
        await agent.aclose()
    first, retried, continued, later = (r.json for r in server.requests)
    assert not server.unexpected
    # 1. the same request, with the output limit raised
    assert first["max_tokens"] == 100 and retried["max_tokens"] == 400
    assert retried["messages"] == first["messages"]
    # 2. the cut answer and a continue turn, at the raised limit; the superseded
    #    first attempt is never sent
    assert continued["max_tokens"] == 400
    assert sent_texts(continued) == [
        ("user", "Write it"),
        ("assistant", "A longer answer, still c"),
        ("user", CONTINUE_PROMPT),
    ]
    # a later run sends the conversation as the model saw it, never the superseded attempt
    assert sent_texts(later)[:4] == [
        *sent_texts(continued),
        ("assistant", "ut off, and now finished."),
    ]
    assert "got c" not in json.dumps(later)
    # one answer
    final = events[-1].message
    assert events[-1].type is E.RUN_COMPLETED and final is not None
    assert final.text == "A longer answer, still cut off, and now finished."
    assert final.stop is None and final.usage.output_tokens == 10
    # the stored session shows what happened
    assert [type(m).__name__ for m in stored] == [
        "UserMessage", "AssistantMessage", "AssistantMessage", "UserMessage", "AssistantMessage"
    ]  # fmt: skip
    attempt, piece, _, last = stored[1], stored[2], stored[3], stored[4]
    assert isinstance(attempt, AssistantMessage) and attempt.stop is not None
    assert attempt.stop.reason is StopReason.MAX_OUTPUT and is_superseded(attempt)
    assert attempt.stop.detail["recovery"] == {
        "by": "OutputLimitRecovery", "action": "retry", "attempt": 1, "max_tokens": 400
    }  # fmt: skip
    assert isinstance(piece, AssistantMessage) and piece.stop is not None
    assert piece.stop.detail["recovery"]["action"] == "continue" and not is_superseded(piece)
    assert stored[3] == UserMessage(CONTINUE_PROMPT)
    assert isinstance(last, AssistantMessage) and last.stop is None
    assert last.text == "ut off, and now finished."
    # the host heard about each cut attempt
    stopped = [e.stop for e in events if e.type is E.MODEL_STOPPED]
    assert [s.reason for s in stopped if s] == [StopReason.MAX_OUTPUT] * 2


async def test_output_limit_recovery_is_bounded_then_max_output_is_reported() -> None:
    with ReplayServer([text_reply(f"part {n} ", "max_tokens") for n in range(3)]) as server:
        agent = await create_agent(
            model_for(server),
            AgentRunConfig(max_tokens=100),
            extensions=[OutputLimitRecovery(max_tokens_ceiling=400, max_recoveries=2)],
        )
        message = await agent.run("Write it")
        await agent.aclose()
    assert len(server.requests) == 3 and not server.unexpected
    assert message.stop is not None and message.stop.reason is StopReason.MAX_OUTPUT
    assert message.text == "part 1 part 2 "  # part 0 was superseded by the retry


async def test_output_limit_continues_at_once_without_a_ceiling() -> None:
    model = ScriptedModel(reply("abc", stop=StopReason.MAX_OUTPUT), reply("def"))
    agent = await create_agent(model, extensions=[OutputLimitRecovery(max_tokens_ceiling=None)])
    message = await agent.run("go")
    assert message.text == "abcdef" and message.stop is None
    assert model.requests[1].messages[-1] == UserMessage(CONTINUE_PROMPT)


async def test_output_limit_never_for_a_cut_tool_call() -> None:
    cut = ToolCall("c1", "weather", '{"city": "Par')
    model = ScriptedModel(reply("", [cut], stop=StopReason.MAX_OUTPUT), reply("sorry"))
    agent = await create_agent(
        model, AgentRunConfig(max_tokens=10), tools=[weather], extensions=[OutputLimitRecovery()]
    )
    message = await agent.run("go")
    assert message.text == "sorry" and RAN == []
    assert model.requests[1].max_tokens == 10  # not raised
    result = model.requests[1].messages[-1]
    assert isinstance(result, ToolResultMessage) and result.is_error


# ---------------------------------------------------------------- compaction


def overflow_reply(text: str = "Partial") -> Reply:
    return text_reply(text, "model_context_window_exceeded")


async def test_context_full_is_compacted_and_retried_keeping_tool_pairs_and_full_history() -> None:
    history = long_history()
    with ReplayServer([overflow_reply(), text_reply("Done.")]) as server:
        agent = await create_agent(
            model_for(server),
            AgentRunConfig(instructions="Be brief."),
            tools=[weather],
            extensions=[ContextCompaction(keep_last=3)],
        )
        client = AgentClient(agent)
        await session_with(client, history)
        message = await client.run("And city 9?")
        stored = await client.messages()
        await agent.aclose()
    full, compacted = server.requests[0].json, server.requests[1].json
    assert not server.unexpected
    assert message.text == "Done." and message.stop is None
    # the compacted request is smaller, keeps the system prompt and the latest turns
    assert len(compacted["messages"]) < len(full["messages"])
    assert len(json.dumps(compacted)) < len(json.dumps(full)) / 2
    # the system prompt is a cache breakpoint (prompt_cache, on by default)
    assert (
        compacted["system"]
        == full["system"]
        == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    )
    assert tool_pairs_intact(full) and tool_pairs_intact(compacted)
    shown = sent_texts(compacted)
    assert shown[0][0] == "user" and shown[0][1].startswith("[")
    assert "earlier messages were left out" in shown[0][1]
    assert shown[-1] == ("user", "And city 9?")
    assert sent_texts(full)[-len(shown) + 1 :] == shown[1:]  # the tail is sent unchanged
    # the stored session keeps the full history, the attempt, and the answer
    assert stored[: len(history)] == history
    attempt = stored[len(history) + 1]
    assert isinstance(attempt, AssistantMessage) and attempt.stop is not None
    assert attempt.stop.reason is StopReason.CONTEXT_FULL and is_superseded(attempt)
    assert attempt.text == "Partial"
    note = attempt.stop.detail["recovery"]
    assert note["by"] == "ContextCompaction" and note["action"] == "retry"
    assert note["dropped_messages"] > 0 and note["summarized"] is False
    assert stored[-1] == message.replace(provider_record=stored[-1].provider_record)


async def test_prompt_too_long_400_is_compacted_the_same_way(tmp_path: Path) -> None:
    history = long_history()
    with ReplayServer(
        [
            Reply.file(RECORDINGS / "anthropic__400_prompt_too_long.json", status=400),
            text_reply("Done."),
        ]
    ) as server:
        agent = await create_agent(
            model_for(server), tools=[weather], extensions=[ContextCompaction(keep_last=2)]
        )
        client = AgentClient(agent, tmp_path / "sessions.sqlite3")  # stored as JSON rows
        await session_with(client, history)
        events = [e async for e in client.stream("And city 9?")]
        stored = await client.messages()
        await client.aclose()
        await agent.aclose()
    assert E.RUN_FAILED not in [e.type for e in events]
    final = events[-1].message
    assert final is not None and final.text == "Done." and final.stop is None
    full, compacted = server.requests[0].json, server.requests[1].json
    assert len(compacted["messages"]) < len(full["messages"]) and tool_pairs_intact(compacted)
    # the failed call is recorded as an empty attempt saying why
    attempt = stored[len(history) + 1]
    assert isinstance(attempt, AssistantMessage) and attempt.text == ""
    assert attempt.stop is not None and attempt.stop.reason is StopReason.CONTEXT_FULL
    assert attempt.stop.raw == "prompt_too_long" and is_superseded(attempt)
    assert attempt.stop.detail["error"]["status"] == 400
    assert attempt.stop.message == "prompt is too long: 210000 tokens > 200000 maximum"


async def test_compaction_is_bounded_then_the_error_is_raised() -> None:
    too_long = RECORDINGS / "anthropic__400_prompt_too_long.json"
    with ReplayServer([Reply.file(too_long, status=400) for _ in range(3)]) as server:
        agent = await create_agent(
            model_for(server), extensions=[ContextCompaction(keep_last=4, max_compactions=2)]
        )
        with pytest.raises(ProviderHTTPError) as raised:
            await agent.run("And city 9?", history=long_history())
        await agent.aclose()
    assert raised.value.code == "prompt_too_long"
    assert len(server.requests) == 3 and not server.unexpected
    sizes = [len(r.json["messages"]) for r in server.requests]
    assert sizes[0] > sizes[1] > sizes[2]  # each compaction keeps fewer turns


async def test_context_full_bounded_then_reported() -> None:
    model = ScriptedModel(*[reply("x", stop=StopReason.CONTEXT_FULL) for _ in range(2)])
    agent = await create_agent(model, extensions=[ContextCompaction(max_compactions=1)])
    message = await agent.run("go", history=long_history())
    assert len(model.requests) == 2
    assert message.stop is not None and message.stop.reason is StopReason.CONTEXT_FULL
    assert not is_superseded(message)


async def test_compaction_summary_by_callable_and_by_the_model() -> None:
    seen: list[list[Message]] = []

    def summarize(dropped: Any) -> str:
        seen.append(list(dropped))
        return "Cities 0 to 3 are sunny."

    model = ScriptedModel(reply("", stop=StopReason.CONTEXT_FULL), reply("ok"))
    agent = await create_agent(model, extensions=[ContextCompaction(summarize=summarize)])
    await agent.run("next", history=long_history())
    head = model.requests[1].messages[0]
    assert isinstance(head, UserMessage)
    assert head.content.startswith(f"{SUMMARY_HEADER}\nCities 0 to 3 are sunny.")
    assert seen and all(not isinstance(m, SystemMessage) for m in seen[0])

    model = ScriptedModel(
        reply("", stop=StopReason.CONTEXT_FULL), reply("They were all sunny."), reply("ok")
    )
    agent = await create_agent(model, extensions=[ContextCompaction(summarize="model")])
    await agent.run("next", history=long_history())
    summary_request = model.requests[1]
    assert isinstance(summary_request.messages[0], SystemMessage)
    assert "city 0" in summary_request.messages[1].content  # type: ignore[union-attr]
    head = model.requests[2].messages[0]
    assert isinstance(head, UserMessage) and "They were all sunny." in head.content


async def test_a_failing_summary_falls_back_to_dropping() -> None:
    def broken(dropped: Any) -> str:
        raise RuntimeError("no summary today")

    model = ScriptedModel(reply("", stop=StopReason.CONTEXT_FULL), reply("ok"))
    agent = await create_agent(model, extensions=[ContextCompaction(summarize=broken)])
    assert (await agent.run("next", history=long_history())).text == "ok"
    head = model.requests[1].messages[0]
    assert isinstance(head, UserMessage) and head.content.endswith("to fit the context window.]")


async def test_compaction_is_remembered_for_the_next_turns() -> None:
    model = ScriptedModel(
        reply("", stop=StopReason.CONTEXT_FULL),
        reply("", [ToolCall("c9", "weather", '{"city": "9"}')]),
        reply("sunny"),
    )
    agent = await create_agent(model, tools=[weather], extensions=[ContextCompaction(keep_last=2)])
    agent.messages = long_history()
    await agent.run("And city 9?")
    retried, after_tool = model.requests[1].messages, model.requests[2].messages
    assert retried[0] == after_tool[0]  # the same compacted head, no second overflow
    assert isinstance(after_tool[-1], ToolResultMessage) and RAN == ["9"]
    assert len(agent.messages) == len(long_history()) + 5  # prompt, attempt, call, result, answer


async def test_compaction_pins_the_latest_prompt_when_the_tail_has_none() -> None:
    history: list[Message] = [UserMessage("Check ten cities.")]
    for n in range(6):
        history += [
            AssistantMessage("", (ToolCall(f"c{n}", "weather", f'{{"city": "{n}"}}'),)),
            ToolResultMessage(f"c{n}", "weather", "sunny"),
        ]
    model = ScriptedModel(reply("", stop=StopReason.CONTEXT_FULL), reply("ok"))
    agent = await create_agent(model, extensions=[ContextCompaction(keep_last=2)])
    await agent.run(None, history=history)
    sent = model.requests[1].messages
    expected_note = DROPPED_NOTE.format(count=8)
    assert sent[0] == UserMessage(f"{expected_note}\n\nCheck ten cities.")
    assert [type(m).__name__ for m in sent[1:]] == [
        "AssistantMessage", "ToolResultMessage", "AssistantMessage", "ToolResultMessage"
    ]  # fmt: skip


# ---------------------------------------------------------------- convergence


async def test_a_looping_model_is_stopped_by_the_guard() -> None:
    same = [tool_reply(f"toolu_{n}", "weather", {"city": "Paris"}) for n in range(3)]
    with ReplayServer([*same, text_reply("never sent")]) as server:
        agent = await create_agent(
            model_for(server), tools=[weather], extensions=[ConvergenceGuard(tool_repeats=3)]
        )
        message = await agent.run("Weather?")
        await agent.aclose()
    assert len(server.requests) == 3 and server.remaining == 1
    assert RAN == ["Paris", "Paris"]  # the third, repeated call never ran
    assert message.stop is not None and message.stop.reason is StopReason.OTHER
    assert message.stop.raw == "convergence" and message.tool_calls == ()
    assert message.stop.detail["repeated"] == "tool_calls"
    assert message.stop.detail["withheld_tool_calls"] == ["weather"]
    assert "weather" in (message.stop.message or "")
    # the stored history never sends the withheld call
    assert tool_pairs_intact(server.requests[2].json)


async def test_the_guard_lets_progress_through() -> None:
    model = ScriptedModel(
        *[
            reply("", [ToolCall(f"c{n}", "weather", json.dumps({"city": str(n)}))])
            for n in range(4)
        ],
        reply("all sunny"),
    )
    agent = await create_agent(model, tools=[weather], extensions=[ConvergenceGuard()])
    message = await agent.run("go")
    assert message.stop is None and RAN == ["0", "1", "2", "3"]


async def test_near_identical_answers_sent_back_by_a_stop_hook_end_the_run() -> None:
    class NeverSatisfied(Extension):
        def on_complete(self, message: AssistantMessage, messages: Any) -> str:
            return "Not good enough, try again."

    model = ScriptedModel(
        reply("The capital of France is Paris, of course."),
        reply("The capital of France is Paris — of course!"),
        reply("unused"),
    )
    agent = await create_agent(
        model, AgentRunConfig(max_turns=10), extensions=[ConvergenceGuard(), NeverSatisfied()]
    )
    message = await agent.run("Capital?")
    assert len(model.requests) == 2
    assert message.stop is not None and message.stop.raw == "convergence"
    assert message.stop.detail["repeated"] == "text"
    assert message.stop.detail["similarity"] >= 0.9


# ---------------------------------------------------------------- refusal fallback


async def test_refusal_falls_back_to_the_recommended_model_when_opted_in() -> None:
    with ReplayServer(
        [
            Reply.file(RECORDINGS / "anthropic__refusal_stop_details.json"),
            json_message("Here is a safe answer.", "claude-fable-5"),
        ]
    ) as server:

        def make(name: str) -> Model:
            return model_for(server, name, stream=False)

        fallback = RefusalFallback(make)
        agent = await create_agent(model_for(server, stream=False), extensions=[fallback])
        client = AgentClient(agent)
        message = await client.run("Scan this network")
        stored = await client.messages()
        await fallback.aclose()
        await agent.aclose()
    refused, retried = server.requests[0].json, server.requests[1].json
    assert refused["model"] == "m" and retried["model"] == "claude-fable-5"
    assert retried["messages"] == refused["messages"]
    assert message.text == "Here is a safe answer." and message.stop is None
    assert message.model == "claude-fable-5"
    # both attempts are stored; the refused one is never sent again
    first = stored[1]
    assert isinstance(first, AssistantMessage) and first.stop is not None
    assert first.stop.reason is StopReason.REFUSAL and is_superseded(first)
    assert first.stop.detail["recovery"] == {
        "by": "RefusalFallback", "action": "retry", "model": "claude-fable-5",
        "refused_model": "m",
    }  # fmt: skip
    assert stored[2] == message.replace(provider_record=stored[2].provider_record)


async def test_refusal_fallback_is_bounded_and_skips_the_same_model() -> None:
    refusal = StopInfo(StopReason.REFUSAL, "refusal", recommended_model="other")
    model = ScriptedModel(reply(stop=refusal), reply(stop=refusal))
    fallback_model = ScriptedModel(reply(stop=refusal), name="other")
    agent = await create_agent(
        model, extensions=[RefusalFallback(lambda name: fallback_model, max_fallbacks=1)]
    )
    message = await agent.run("go")
    assert message.stop is not None and message.stop.reason is StopReason.REFUSAL
    assert len(model.requests) == 1 and len(fallback_model.requests) == 1

    same = StopInfo(StopReason.REFUSAL, "refusal", recommended_model="scripted-model")
    model = ScriptedModel(reply(stop=same))
    agent = await create_agent(model, extensions=[RefusalFallback(lambda name: model)])
    message = await agent.run("go")
    assert message.stop is not None and message.stop.reason is StopReason.REFUSAL


# ------------------------------------------------------ never without, never after refusal


@pytest.mark.parametrize(
    ("turn", "reason"),
    [
        (reply("cut", stop=StopReason.MAX_OUTPUT), StopReason.MAX_OUTPUT),
        (reply("full", stop=StopReason.CONTEXT_FULL), StopReason.CONTEXT_FULL),
        (
            reply(stop=StopInfo(StopReason.REFUSAL, "refusal", recommended_model="x")),
            StopReason.REFUSAL,
        ),
    ],
)
async def test_no_recovery_without_the_extension(turn: Any, reason: StopReason) -> None:
    model = ScriptedModel(turn)
    message = await (await create_agent(model)).run("go", history=long_history(2))
    assert len(model.requests) == 1
    assert message.stop is not None and message.stop.reason is reason
    assert not is_superseded(message) and "recovery" not in message.stop.detail


async def test_prompt_too_long_without_the_extension_still_raises() -> None:
    with ReplayServer(
        [Reply.file(RECORDINGS / "anthropic__400_prompt_too_long.json", status=400)]
    ) as server:
        agent = await create_agent(model_for(server))
        events: list[Any] = []

        async def run() -> None:
            async for event in agent.stream("go"):
                events.append(event)

        with pytest.raises(ProviderHTTPError):
            await run()
        await agent.aclose()
    assert events[-1].type is E.RUN_FAILED and len(server.requests) == 1


async def test_output_limit_and_compaction_never_act_after_a_refusal() -> None:
    refusal = StopInfo(StopReason.REFUSAL, "refusal", "cyber", "No.")
    model = ScriptedModel(reply("partial", stop=refusal))
    agent = await create_agent(
        model, extensions=[OutputLimitRecovery(), ContextCompaction(), ConvergenceGuard()]
    )
    message = await agent.run("go", history=long_history(2))
    assert len(model.requests) == 1
    assert message.stop is not None and message.stop.reason is StopReason.REFUSAL
    assert "recovery" not in message.stop.detail


# ---------------------------------------------------------------- the hook itself


async def test_end_run_on_a_failed_call_completes_the_run_with_that_stop() -> None:
    class GiveUp(Extension):
        def recover(self, context: RecoveryContext) -> EndRun | None:
            if context.error is None:
                return None
            return EndRun(StopInfo(StopReason.INTERRUPTED, "gave_up", message=str(context.error)))

    model = ScriptedModel(ProviderHTTPError("boom", provider="x", status=500))
    events = [e async for e in (await create_agent(model, extensions=[GiveUp()])).stream("go")]
    assert [e.type for e in events][-1] is E.RUN_COMPLETED
    final = events[-1].message
    assert final is not None and final.stop is not None and final.stop.raw == "gave_up"
    assert final.stop.detail["recovery"] == {"by": "GiveUp", "action": "end"}
    assert final.stop.detail["replaced_stop"]["reason"] == "interrupted"


async def test_retries_count_towards_max_turns() -> None:
    class AlwaysRetry(Extension):
        def recover(self, context: RecoveryContext) -> RetryRequest:
            return RetryRequest(context.request)

    model = ScriptedModel(*[reply("x", stop=StopReason.INTERRUPTED) for _ in range(3)])
    agent = await create_agent(model, AgentRunConfig(max_turns=3), extensions=[AlwaysRetry()])
    message = await agent.run("go")
    assert len(model.requests) == 3
    assert message.stop is not None and message.stop.raw == "max_turns"
    assert sum(is_superseded(m) for m in agent.messages) == 3


async def test_retry_and_continue_are_ignored_on_a_normal_step_and_bad_values_rejected() -> None:
    class Pushy(Extension):
        def recover(self, context: RecoveryContext) -> ContinueWith:
            return ContinueWith([UserMessage("more")])

    model = ScriptedModel(reply("done"))
    message = await (await create_agent(model, extensions=[Pushy()])).run("go")
    assert message.text == "done" and len(model.requests) == 1

    class Wrong(Extension):
        def recover(self, context: RecoveryContext) -> str:
            return "retry please"

    agent = await create_agent(ScriptedModel(reply("x")), extensions=[Wrong()])
    with pytest.raises(TypeError, match=r"Wrong\.recover"):
        await agent.run("go")


async def test_the_first_extension_that_answers_wins_and_sees_the_run() -> None:
    contexts: list[RecoveryContext] = []

    class Watch(Extension):
        async def recover(self, context: RecoveryContext) -> None:
            contexts.append(context)

    model = ScriptedModel(reply("a", stop=StopReason.MAX_OUTPUT), reply("b"))
    agent = await create_agent(
        model, extensions=[OutputLimitRecovery(max_tokens_ceiling=None), Watch()]
    )
    agent.messages = [UserMessage("before"), AssistantMessage("earlier")]
    await agent.run("go")
    assert len(contexts) == 1  # the first step was taken by OutputLimitRecovery
    seen = contexts[0]
    assert seen.step == 2 and seen.stop.reason is StopReason.END_TURN
    assert list(seen.run_messages) == [UserMessage("go"), agent.messages[3], agent.messages[4]]
    assert len(agent.messages) == 6 and agent.messages[4] == UserMessage(CONTINUE_PROMPT)
    assert [r.action for r in seen.recoveries] == ["continue"]
    assert seen.made_by(OutputLimitRecovery()) == 1


def test_helpers() -> None:
    too_long = ProviderHTTPError(
        "prompt is too long: 5 > 4", provider="anthropic", status=400, code="prompt_too_long"
    )
    openai = ProviderHTTPError(
        "This model's maximum context length is 128000 tokens.", status=400, code=None
    )
    other = ProviderHTTPError("bad key", status=401, error_type="authentication_error")
    assert is_context_overflow(too_long) and is_context_overflow(openai)
    assert not is_context_overflow(other) and not is_context_overflow(ValueError("x"))
    assert error_stop(too_long).reason is StopReason.CONTEXT_FULL
    assert error_stop(other).reason is StopReason.INTERRUPTED
    assert error_stop(other).raw == "authentication_error"
    joined = join_pieces([AssistantMessage("a", reasoning="r1"), AssistantMessage("b")])
    assert joined.text == "ab" and joined.reasoning == "r1" and joined.provider_record is None
