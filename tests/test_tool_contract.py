"""The tool contract (issue 12): whatever a tool does, its call gets a result, the
run goes on, and the stored session stays valid for the next request."""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from zett_agent import (
    AgentClient,
    AgentEventType,
    AgentRunConfig,
    Model,
    ToolCall,
    ToolResultMessage,
    create_agent,
)
from zett_agent.testing import ReplayTransport, Reply, ScriptedModel, reply
from zett_agent.tools import NOT_RUN, Tool, as_tool

pytestmark = pytest.mark.looptime  # virtual time: tool timeouts and waits cost no wall time

E = AgentEventType
RAN: list[str] = []


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def call(name: str, args: dict[str, Any] | None = None, id: str = "c1") -> ToolCall:  # noqa: A002
    return ToolCall(id, name, json.dumps(args or {}))


def weather(city: str) -> str:
    """Weather for a city."""
    RAN.append(city)
    return f"sunny in {city}"


def results_of(messages: list[Any]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


async def run_with(tools: list[Any], calls: list[ToolCall], **config: Any) -> list[Any]:
    """Run one answer with ``calls`` then a final text; the stored session."""
    model = ScriptedModel(reply("", calls), reply("done"))
    agent = await create_agent(model, AgentRunConfig(**config), tools=tools)
    async with AgentClient(agent, session_id="s") as client:
        final = await client.run("go")
        assert final.text == "done"  # the run went on
        return await client.messages()


async def test_a_return_value_json_cannot_encode_is_an_error_result_for_that_call() -> None:
    def tuple_keys() -> dict[Any, str]:
        """Returns what JSON cannot encode."""
        RAN.append("tuple_keys")
        return {(1, 2): "x"}

    stored = await run_with(
        [tuple_keys, weather], [call("tuple_keys"), call("weather", {"city": "Lima"}, "c2")]
    )
    first, second = results_of(stored)
    assert first.is_error and "cannot be encoded as JSON" in first.content
    assert "it ran" in first.content and sorted(RAN) == ["Lima", "tuple_keys"]
    assert not second.is_error and second.content == "sunny in Lima"


@pytest.mark.parametrize("close", ["aclose", "break"])
async def test_closing_the_stream_after_one_result_stores_every_finished_result(
    close: str,
) -> None:
    model = ScriptedModel(
        reply("", [call("weather", {"city": "Lima"}, "a"), call("weather", {"city": "Oslo"}, "b")])
    )
    agent = await create_agent(model, tools=[weather])
    async with AgentClient(agent, session_id="s") as client:
        stream = client.stream("go")
        if close == "aclose":
            async for event in stream:
                if event.type is E.TOOL_CALL_COMPLETED:
                    break
            await stream.aclose()
        else:
            async with aclosing(stream):
                async for event in stream:
                    if event.type is E.TOOL_CALL_COMPLETED:
                        break
        stored = await client.messages()
    assert sorted(RAN) == ["Lima", "Oslo"]
    results = results_of(stored)
    assert [(r.tool_call_id, r.content) for r in results] == [
        ("a", "sunny in Lima"),
        ("b", "sunny in Oslo"),
    ]
    assert NOT_RUN not in {r.content for r in results}


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_cancelled_error_raised_by_a_tool_is_that_tools_failure(kind: str) -> None:
    async def async_cancels() -> str:
        """Raises CancelledError itself (as code awaiting a cancelled future does)."""
        raise asyncio.CancelledError()

    def sync_cancels() -> str:
        """Raises CancelledError in its thread."""
        raise asyncio.CancelledError()

    tool = async_cancels if kind == "async" else sync_cancels
    stored = await run_with(
        [tool, weather], [call(tool.__name__), call("weather", {"city": "Rome"}, "c2")]
    )
    failed, ok = results_of(stored)
    assert failed.is_error and "CancelledError" in failed.content
    assert ok.content == "sunny in Rome"


async def test_cancelling_the_run_while_a_tool_runs_still_cancels() -> None:
    started = anyio.Event()

    async def slow() -> str:
        """Waits."""
        started.set()
        await anyio.sleep(30)
        return "never"

    agent = await create_agent(ScriptedModel(reply("", [call("slow")])), tools=[slow])
    task = asyncio.ensure_future(agent.run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (result,) = results_of(agent.messages)
    assert result.is_error and "cancelled while this tool call was running" in result.content


def anthropic_two_calls_one_id() -> Reply:
    events = [
        {"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant",
         "model": "m", "content": [], "stop_reason": None,
         "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",
         "id": "toolu_1", "name": "weather", "input": {"city": "Lima"}}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use",
         "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return Reply.sse((event["type"], event) for event in events)


def anthropic_text(text: str) -> Reply:
    events = [
        {"type": "message_start", "message": {"id": "m2", "type": "message", "role": "assistant",
         "model": "m", "content": [], "stop_reason": None,
         "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return Reply.sse((event["type"], event) for event in events)


async def test_two_calls_with_one_id_run_once_and_the_next_request_has_distinct_ids() -> None:
    with ReplayTransport(
        [anthropic_two_calls_one_id(), anthropic_text("done"), anthropic_text("again")]
    ) as server:
        model = Model("anthropic", "m", base_url=server.url, api_key="k", client=server.client())
        agent = await create_agent(model, tools=[weather])
        async with AgentClient(agent, session_id="s") as client:
            assert (await client.run("go")).text == "done"
            assert (await client.run("and now?")).text == "again"  # the stored turn replays
            stored = await client.messages()
        await agent.aclose()
    assert RAN == ["Lima"]
    first, second = results_of(stored)
    assert (first.tool_call_id, first.is_error) == ("toolu_1", False)
    assert second.tool_call_id != "toolu_1" and second.is_error
    assert "repeated the id 'toolu_1'" in second.content
    for request in server.requests[1:]:
        messages = request.json["messages"]
        uses = [b["id"] for b in messages[1]["content"] if b["type"] == "tool_use"]
        answered = [b["tool_use_id"] for b in messages[2]["content"]]
        assert len(set(uses)) == 2 and answered == uses


async def test_a_tool_over_its_timeout_is_answered_and_the_run_goes_on() -> None:
    async def slow() -> str:
        """Waits."""
        await anyio.sleep(30)
        return "never"

    stored = await run_with(
        [as_tool(slow, timeout=0.2), weather],
        [call("slow"), call("weather", {"city": "Oslo"}, "c2")],
    )
    timed_out, ok = results_of(stored)
    assert timed_out.is_error and "timeout of 0.2 seconds" in timed_out.content
    assert "it was stopped" in timed_out.content and ok.content == "sunny in Oslo"


async def test_the_run_default_timeout_applies_to_tools_without_their_own() -> None:
    async def slow() -> str:
        """Waits."""
        await anyio.sleep(30)
        return "never"

    async def quick() -> str:
        """Waits less than its own timeout, more than the run's."""
        await anyio.sleep(0.3)
        return "quick done"

    tools = [slow, as_tool(quick, timeout=5)]
    stored = await run_with(tools, [call("slow"), call("quick", id="c2")], tool_timeout=0.1)
    timed_out, ok = results_of(stored)
    assert timed_out.is_error and "timeout of 0.1 seconds" in timed_out.content
    assert ok.content == "quick done"


async def test_a_sync_tool_over_its_timeout_is_answered_saying_it_may_still_run() -> None:
    release, finished = threading.Event(), threading.Event()

    def blocking() -> str:
        """Blocks its thread until released."""
        release.wait(10)
        finished.set()
        return "late"

    try:
        stored = await run_with([as_tool(blocking, timeout=0.2)], [call("blocking")])
        assert not finished.is_set()  # the run did not wait for the thread
    finally:
        release.set()
    (result,) = results_of(stored)
    assert result.is_error and "may still be running" in result.content


async def test_limits_on_calls_argument_size_and_result_size() -> None:
    def big(n: int) -> str:
        """A long result."""
        RAN.append(f"big{n}")
        return "x" * n

    calls = [
        call("weather", {"city": "Lima"}, "a"),
        call("weather", {"city": "L" * 100}, "b"),
        call("big", {"n": 50}, "c"),
        call("weather", {"city": "Oslo"}, "d"),
    ]
    stored = await run_with(
        [weather, big],
        calls,
        max_tool_calls=3,
        max_tool_argument_chars=60,
        max_tool_result_chars=20,
    )
    ok, too_long, cut, too_many = results_of(stored)
    assert sorted(RAN) == ["Lima", "big50"]  # parallel: any order
    assert ok.content == "sunny in Lima" and not ok.is_error
    assert too_long.is_error and "more than the limit of 60" in too_long.content
    assert cut.content.startswith("x" * 20 + "\n") and "first 20 of 50 characters" in cut.content
    assert too_many.is_error and "at most 3 run per answer" in too_many.content


class _Arguments(BaseModel):
    pass


@dataclass(frozen=True)
class RawTool(Tool):
    """A tool from another source (as MCP tools are): its own ``call``."""

    async def call(self, call: ToolCall) -> ToolResultMessage:
        await anyio.sleep(30)
        return ToolResultMessage(call.id, call.name, "y" * 1000)


async def test_limits_and_timeouts_hold_for_tools_from_any_source() -> None:
    raw = RawTool("raw", "A raw tool.", lambda: None, _Arguments)
    stored = await run_with([raw], [call("raw"), call("raw", {"x": "z" * 80}, "c2")],
                            tool_timeout=0.1, max_tool_argument_chars=60)  # fmt: skip
    timed_out, too_long = results_of(stored)
    assert timed_out.is_error and "timeout of 0.1 seconds" in timed_out.content
    assert too_long.is_error and "more than the limit of 60" in too_long.content


async def test_a_tool_that_turns_its_timeout_into_another_error_is_answered_as_timed_out() -> None:
    async def wraps() -> str:
        """Turns cancellation into its own error, as some client libraries do."""
        try:
            await anyio.sleep(30)
        except asyncio.CancelledError:
            raise RuntimeError("request aborted") from None
        return "never"

    stored = await run_with([as_tool(wraps, timeout=0.2)], [call("wraps")])
    (result,) = results_of(stored)
    assert result.is_error and "timeout of 0.2 seconds" in result.content
