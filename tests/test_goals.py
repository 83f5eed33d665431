"""Goals (seed 001, "Subagents and goals"), offline with ScriptedModel."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio
import pytest

from zett_agent import (
    AgentEventType,
    AssistantMessage,
    Goal,
    Message,
    StopInfo,
    StopReason,
    UserMessage,
    create_agent,
)
from zett_agent.testing import ScriptedModel, reply

REFUSED = StopInfo(
    StopReason.REFUSAL, raw="refusal", category="cyber", message="This request was declined."
)


class Cites:
    """A predicate that records each call: met when the answer holds a URL."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, message: AssistantMessage, messages: Sequence[Message]) -> tuple[bool, str]:
        self.seen.append(message.text)
        met = "http" in message.text
        return met, "cites a URL" if met else "no URL is cited"


async def test_goal_met_first_time() -> None:
    check = Cites()
    goal = Goal("Cite a source", check)
    model = ScriptedModel(reply("See https://example.org"))
    agent = await create_agent(model, extensions=[goal])
    with anyio.fail_after(5):
        message = await agent.run("go")
    assert message.text == "See https://example.org"
    assert len(model.requests) == 1
    assert goal.met is True
    assert goal.attempts == 1
    assert not goal.exhausted
    assert check.seen == ["See https://example.org"]


async def test_goal_unmet_then_met_asks_the_model_to_keep_working() -> None:
    check = Cites()
    goal = Goal("Cite a source", check)
    model = ScriptedModel(reply("Trust me."), reply("See https://example.org"))
    agent = await create_agent(model, extensions=[goal])
    with anyio.fail_after(5):
        message = await agent.run("go")
    asked = model.requests[1].messages[-1]
    assert isinstance(asked, UserMessage)
    assert asked.content.splitlines() == [
        "The goal is not met yet: Cite a source",
        "Why: no URL is cited",
        "Keep working until it is met (attempt 1 of 3).",
    ]
    assert asked in agent.messages  # the request to go on is stored history
    assert message.text == "See https://example.org"
    assert goal.met is True
    assert [(v.attempt, v.met) for v in goal.verdicts] == [(1, False), (2, True)]


async def test_goal_attempts_exhausted_completes_and_host_can_tell(
    caplog: pytest.LogCaptureFixture,
) -> None:
    goal = Goal("Cite a source", lambda message, messages: False, max_attempts=2)
    model = ScriptedModel(reply("One."), reply("Two."))
    agent = await create_agent(model, extensions=[goal])
    with caplog.at_level(logging.WARNING, logger="zett_agent.goals"), anyio.fail_after(5):
        message = await agent.run("go")
    assert message.text == "Two."
    assert message.stop is None
    assert len(model.requests) == 2
    assert goal.met is False
    assert goal.exhausted
    assert goal.attempts == 2
    assert "not met after 2 attempts" in caplog.text


async def test_refused_second_attempt_ends_the_run_and_is_not_evaluated() -> None:
    check = Cites()
    goal = Goal("Cite a source", check)
    model = ScriptedModel(reply("Trust me."), reply("I can't help with that.", stop=REFUSED))
    agent = await create_agent(model, extensions=[goal])
    with anyio.fail_after(5):
        events = [event async for event in agent.stream("go")]
    stopped = [e.stop for e in events if e.type is AgentEventType.MODEL_STOPPED]
    assert stopped == [REFUSED]
    assert events[-1].type is AgentEventType.RUN_COMPLETED
    assert events[-1].stop == REFUSED
    assert events[-1].message is not None
    assert events[-1].message.stop == REFUSED
    assert check.seen == ["Trust me."]  # the refused answer was never evaluated
    assert goal.attempts == 1
    assert len(model.requests) == 2
    assert not goal.exhausted


async def test_judge_model_decides_and_an_async_check_works() -> None:
    judge = ScriptedModel(reply("NO\nIt is in English."), reply("YES. It is French."))
    goal = Goal("Answer in French", judge=judge)
    model = ScriptedModel(reply("Hello"), reply("Bonjour"))
    agent = await create_agent(model, extensions=[goal])
    with anyio.fail_after(5):
        message = await agent.run("greet")
    assert message.text == "Bonjour"
    assert goal.met is True
    assert [(v.met, v.reason) for v in goal.verdicts] == [
        (False, "It is in English."),
        (True, "YES. It is French."),
    ]
    question = judge.requests[0].messages[-1]
    assert isinstance(question, UserMessage)
    assert "Goal: Answer in French" in question.content
    assert "Hello" in question.content

    async def slow_yes(message: AssistantMessage, messages: Sequence[Message]) -> bool:
        await anyio.sleep(0)
        return True

    other = Goal("anything", slow_yes)
    agent = await create_agent(ScriptedModel(reply("x")), extensions=[other])
    with anyio.fail_after(5):
        await agent.run("go")
    assert other.met is True
    assert other.verdicts[0].reason == "the check passed"


async def test_refusing_judge_leaves_goal_undecided_and_run_completes() -> None:
    goal = Goal("Answer in French", judge=ScriptedModel(reply("", stop=REFUSED)))
    agent = await create_agent(ScriptedModel(reply("Hello")), extensions=[goal])
    with anyio.fail_after(5):
        message = await agent.run("greet")
    assert message.text == "Hello"
    assert goal.met is None
    assert goal.verdicts[0].judge_stop == REFUSED


async def test_a_new_run_counts_attempts_again_and_arguments_are_checked() -> None:
    goal = Goal("never", lambda message, messages: False, max_attempts=2)
    model = ScriptedModel(reply("a"), reply("b"), reply("c"), reply("d"))
    agent = await create_agent(model, extensions=[goal])
    with anyio.fail_after(5):
        await agent.run("one")
        assert goal.exhausted
        await agent.run("two")
    assert goal.attempts == 2
    assert len(model.requests) == 4
    with pytest.raises(ValueError, match="exactly one"):
        Goal("x")
    with pytest.raises(ValueError, match="at least 1"):
        Goal("x", lambda m, ms: True, max_attempts=0)
