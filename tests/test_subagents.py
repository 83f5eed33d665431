"""Subagents and background tasks (seed 001, "Subagents and goals"), offline with ScriptedModel."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from zett_agent import (
    AgentEventType,
    BackgroundTask,
    BackgroundTasks,
    ProviderHTTPError,
    StopInfo,
    StopReason,
    SubAgent,
    SubAgentResult,
    TaskStatus,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    create_agent,
)
from zett_agent.testing import ScriptedModel, reply

REFUSED = StopInfo(
    StopReason.REFUSAL, raw="refusal", category="cyber", message="This request was declined."
)
NOTICE = '[subagent "researcher" stopped: refusal (cyber): This request was declined.]'


def call(name: str, args: dict[str, Any], id: str = "c1") -> ToolCall:  # noqa: A002
    return ToolCall(id, name, json.dumps(args))


async def researcher(*turns: Any, tools: Any = (), **kw: Any) -> SubAgent:
    child = await create_agent(ScriptedModel(*turns), tools=tools)
    return SubAgent(child, name=kw.pop("name", "researcher"), description="Finds sources.", **kw)


# ---------------------------------------------------------------- foreground


async def test_refused_subagent_reports_to_parent_model_and_host() -> None:
    seen: list[SubAgentResult] = []
    sub = await researcher(reply("", stop=REFUSED), on_result=seen.append)
    parent_model = ScriptedModel(
        reply("", [call("researcher", {"task": "find exploits"})]), reply("It declined.")
    )
    parent = await create_agent(parent_model, tools=[sub.tool])
    heard: list[SubAgentResult | None] = []
    with anyio.fail_after(5):
        async for event in parent.stream("go"):
            if event.type is AgentEventType.TOOL_CALL_COMPLETED:
                assert event.tool_call is not None
                heard.append(sub.result_for(event.tool_call.id))
            if event.type is AgentEventType.RUN_COMPLETED:
                final = event.message
    # The parent model's next request holds a result that starts with the notice.
    result_message = parent_model.requests[1].messages[-1]
    assert isinstance(result_message, ToolResultMessage)
    assert result_message.content == NOTICE
    assert not result_message.is_error
    # The parent host sees the child's stop; the parent run completed normally.
    result = sub.results[-1]
    assert heard == [result]
    assert seen == [result]
    assert result.stop == REFUSED
    assert result.text == ""
    assert not result.ok
    assert result.tool_call_id == "c1"
    assert result.task == "find exploits"
    assert result.messages[0] == UserMessage("find exploits")
    assert final is not None
    assert final.stop is None
    assert final.text == "It declined."
    assert parent_model.requests[0].tools[0].parameters["required"] == ["task"]


async def test_interrupted_child_returns_partial_text() -> None:
    cut = StopInfo(StopReason.INTERRUPTED, raw="error", message="stream dropped")
    sub = await researcher(reply("Half an ans", stop=cut))
    parent_model = ScriptedModel(reply("", [call("researcher", {"task": "t"})]), reply("ok"))
    parent = await create_agent(parent_model, tools=[sub.tool])
    with anyio.fail_after(5):
        message = await parent.run("go")
    content = parent_model.requests[1].messages[-1]
    assert isinstance(content, ToolResultMessage)
    assert content.content.splitlines() == [
        '[subagent "researcher" stopped: interrupted: stream dropped]',
        "Half an ans",
    ]
    assert sub.results[-1].stop == cut
    assert sub.results[-1].text == "Half an ans"
    assert message.stop is None


async def test_child_provider_error_is_an_error_result_not_raised() -> None:
    error = ProviderHTTPError("overloaded", provider="x", status=529)
    sub = await researcher(error)
    parent_model = ScriptedModel(reply("", [call("researcher", {"task": "t"})]), reply("ok"))
    parent = await create_agent(parent_model, tools=[sub.tool])
    with anyio.fail_after(5):
        message = await parent.run("go")
    content = parent_model.requests[1].messages[-1]
    assert isinstance(content, ToolResultMessage)
    assert content.is_error
    assert content.content.startswith(
        '[subagent "researcher" failed: interrupted (ProviderHTTPError): [x 529] overloaded]'
    )
    result = sub.results[-1]
    assert result.error is error
    assert result.stop is not None
    assert result.stop.reason is StopReason.INTERRUPTED
    assert result.stop.raw == "error"
    assert message.text == "ok"
    assert message.stop is None


async def test_normal_child_runs_with_fresh_history_each_time() -> None:
    sub = await researcher(reply("First."), reply("Second."))
    with anyio.fail_after(5):
        one = await sub.run("a")
        two = await sub.run("b")
    assert one.ok
    assert one.report() == "First."
    assert two.report() == "Second."
    assert two.messages[0] == UserMessage("b")
    assert len(two.messages) == 2
    assert sub.agent.messages == []
    model = sub.agent.model
    assert isinstance(model, ScriptedModel)
    assert model.requests[1].messages == [UserMessage("b")]


async def test_bad_subagent_arguments_and_names() -> None:
    sub = await researcher()
    result = await sub.tool.call(ToolCall("c1", "researcher", '{"topic": "x"}'))
    assert result.is_error
    assert result.content.startswith("invalid arguments")
    with pytest.raises(ValueError, match="must match"):
        await researcher(name="has space")


# ---------------------------------------------------------------- background


async def test_background_completion_notice_reaches_parent_model_and_host() -> None:
    release = anyio.Event()

    async def hold() -> str:
        """Wait for the test."""
        await release.wait()
        return "held"

    sub = await researcher(reply("", [call("hold", {})]), reply("Found 3 sources."), tools=[hold])
    done: list[BackgroundTask] = []
    parent_model = ScriptedModel(
        reply("", [call("start_researcher", {"task": "find sources"})]),
        reply("Started; waiting."),
        reply("Summary of the 3 sources."),
        reply("You're welcome."),
    )
    with anyio.fail_after(5):
        async with BackgroundTasks(on_complete=done.append) as tasks:
            parent = await create_agent(
                parent_model, tools=[tasks.tool(sub)], extensions=[tasks.extension]
            )
            await parent.run("research in the background")
            started = parent_model.requests[1].messages[-1]
            assert isinstance(started, ToolResultMessage)
            assert started.content.startswith('Started background task bg-1 ("researcher")')
            assert tasks.tasks["bg-1"].status is TaskStatus.RUNNING
            release.set()
            task = await tasks.wait()
            assert task.status is TaskStatus.COMPLETED
            assert task.stop is None
            assert done == [task]
            assert task.note == "completed"
            assert not task.delivered
            await parent.run(None)  # the model reads the notice on its next turn
            await parent.run("thanks")
    notice = UserMessage('[background task bg-1 ("researcher") completed]\nFound 3 sources.')
    assert parent_model.requests[2].messages[-1] == notice
    assert task.delivered
    assert sub.results == [task.result]
    # The notice is part of the conversation: stored once, sent again with it.
    later = parent_model.requests[3].messages
    assert later[later.index(notice) - 1].text == "Started; waiting."
    assert later.count(notice) == 1
    assert later[-1] == UserMessage("thanks")
    assert [n.message for n in tasks.notices] == [notice]
    assert parent.messages.count(notice) == 1


async def test_background_child_that_stopped_early_is_still_completed() -> None:
    sub = await researcher(reply("Partial", stop=REFUSED))
    parent_model = ScriptedModel(
        reply("", [call("start_researcher", {"task": "t"})]),
        reply("", [call("await_tasks", {})]),
        reply("It was refused."),
    )
    with anyio.fail_after(5):
        async with BackgroundTasks() as tasks:

            async def await_tasks() -> str:
                """Wait for background tasks."""
                await tasks.wait_all()
                return "all done"

            parent = await create_agent(
                parent_model, tools=[tasks.tool(sub), await_tasks], extensions=[tasks.extension]
            )
            message = await parent.run("go")
    task = tasks.tasks["bg-1"]
    assert task.status is TaskStatus.COMPLETED
    assert task.stop == REFUSED
    assert task.note == (
        "completed, but the subagent stopped early: refusal (cyber): This request was declined."
    )
    # Mid-run: the notice is in the very next request, after the tool result.
    sent = parent_model.requests[2].messages
    assert isinstance(sent[-2], ToolResultMessage)
    assert sent[-2].content == "all done"
    assert sent[-1] == UserMessage(f'[background task bg-1 ("researcher") {task.note}]\nPartial')
    assert message.text == "It was refused."


async def test_parallel_background_tasks_run_concurrently() -> None:
    arrived = 0
    both = anyio.Event()

    async def rendezvous() -> str:
        """Wait until both children are here."""
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both.set()
        await both.wait()
        return "met"

    subs = [
        await researcher(reply("", [call("rendezvous", {})]), reply(n), tools=[rendezvous], name=n)
        for n in ("alpha", "beta")
    ]
    parent_model = ScriptedModel(
        reply(
            "", [call("start_alpha", {"task": "a"}, "c1"), call("start_beta", {"task": "b"}, "c2")]
        ),
        reply("Both started."),
    )
    with anyio.fail_after(5):
        async with BackgroundTasks() as tasks:
            parent = await create_agent(
                parent_model, tools=[tasks.tool(s) for s in subs], extensions=[tasks.extension]
            )
            await parent.run("go")
            finished = await tasks.wait_all()
    assert [(t.name, t.status, t.result.text if t.result else None) for t in finished] == [
        ("alpha", TaskStatus.COMPLETED, "alpha"),
        ("beta", TaskStatus.COMPLETED, "beta"),
    ]


async def test_cancellation_is_bounded_and_keeps_partial_text() -> None:
    entered = 0
    both_in = anyio.Event()

    async def forever() -> str:
        """Never returns."""
        nonlocal entered
        entered += 1
        if entered == 2:
            both_in.set()
        await anyio.sleep_forever()
        return ""

    turn = reply("Working on it", [call("forever", {})])
    sub = await researcher(turn, turn, tools=[forever])  # one turn for each run
    ended: list[BackgroundTask] = []
    with anyio.fail_after(5):
        async with BackgroundTasks(on_complete=ended.append) as tasks:
            first = tasks.start(sub, "slow")
            second = tasks.start(sub, "slow too")
            await both_in.wait()
            tasks.cancel(first.id)
            assert (await tasks.wait(first.id)).status is TaskStatus.CANCELLED
        # Leaving the scope cancels what still runs: nothing outlives it.
    assert second.status is TaskStatus.CANCELLED
    assert ended == [first, second]
    for task in (first, second):
        assert task.result is not None
        assert task.result.text == "Working on it"
        assert task.stop is not None
        assert task.stop.raw == "cancelled"
        assert task.notice().startswith(f'[background task {task.id} ("researcher") cancelled]')
    assert sub.results == [first.result, second.result]


async def test_background_failure_start_outside_scope_and_wait_with_nothing() -> None:
    sub = await researcher(ProviderHTTPError("bad", provider="x", status=500))
    tasks = BackgroundTasks()
    outside = await tasks.tool(sub).call(call("start_researcher", {"task": "t"}))
    assert outside.is_error
    assert "not running" in outside.content
    with anyio.fail_after(5):
        async with tasks:
            task = await tasks.start(sub, "t").wait()
            assert await tasks.wait() is task
            with pytest.raises(LookupError):
                await tasks.wait()
    assert task.status is TaskStatus.FAILED
    assert task.note.startswith("failed: interrupted")
    assert task.result is not None
    assert isinstance(task.result.error, ProviderHTTPError)
