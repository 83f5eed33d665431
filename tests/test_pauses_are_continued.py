"""PAUSED is continued silently and reported only when the continuations run out
(seed 001), for every pause the wire can send, streamed and as a body, through a real
socket:

* Anthropic ``pause_turn`` with a client ``tool_use`` block: the call runs, that step
  has no stop and no MODEL_STOPPED (``pause_turn`` is kept in ``detail["paused"]``),
  and it counts as a continuation (it used to report PAUSED at once);
* Anthropic's beta ``compaction`` stop: the compaction block (its ``compaction_delta``
  content) is sent back and the turn goes on.

Gemini's ``CONTINUATION`` is in ``tests/test_gemini_reads_to_the_end.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from handwritten_wire import A_START, a_body, a_end, a_text, a_tool, named
from zett_agent import (
    AgentEventType,
    AssistantMessage,
    Model,
    ModelResponse,
    StopReason,
    ToolResultMessage,
    create_agent,
)
from zett_agent.extensions import Extension
from zett_agent.testing import ReplayServer, Reply

E = AgentEventType
RAN: list[str] = []


def lookup(query: str) -> str:
    """Look something up."""
    RAN.append(query)
    return f"found {query}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def paused_with_call(query: str, stream: bool, call_id: str = "tu_1") -> Reply:
    arguments = json.dumps({"query": query})
    if stream:
        return named(A_START, *a_tool(0, call_id, "lookup", arguments), *a_end("pause_turn"))
    call = {"type": "tool_use", "id": call_id, "name": "lookup", "input": {"query": query}}
    return a_body([call], "pause_turn")


def done(stream: bool) -> Reply:
    if stream:
        return named(A_START, *a_text("done"), *a_end("end_turn"))
    return a_body([{"type": "text", "text": "done"}], "end_turn")


class Seen(Extension):
    def __init__(self) -> None:
        self.stops: list[Any] = []

    def after_model(self, response: ModelResponse) -> None:
        self.stops.append(response.stop_info)


async def run(replies: list[Reply], stream: bool, continuations: int = 5) -> Any:
    seen = Seen()
    with ReplayServer(replies) as server:
        model = Model("anthropic", "m", base_url=server.url, api_key="k", stream=stream)
        agent = await create_agent(model, tools=[lookup], extensions=[seen])
        agent.max_pause_continuations = continuations
        events = [event async for event in agent.stream("go")]
        messages = list(agent.messages)
        await agent.aclose()
    return events, messages, server, seen


STREAMS = pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])


@STREAMS
async def test_pause_turn_with_a_client_call_runs_it_silently(stream: bool) -> None:
    events, messages, server, seen = await run([paused_with_call("alpha", stream),
                                                done(stream)], stream)  # fmt: skip
    assert RAN == ["alpha"]
    assert E.MODEL_STOPPED not in [e.type for e in events]
    paused = messages[1]
    assert isinstance(paused, AssistantMessage) and paused.stop is None
    assert [c.name for c in paused.tool_calls] == ["lookup"]
    assert seen.stops[0].reason is StopReason.TOOL_USE
    assert (seen.stops[0].raw, seen.stops[0].detail["paused"]) == ("pause_turn", "pause_turn")
    final = events[-1].message
    assert final is not None and final.text == "done" and final.stop is None
    sent = server.requests[1].json["messages"][-1]["content"]
    assert [b["type"] for b in sent] == ["tool_result"] and sent[0]["tool_use_id"] == "tu_1"


@STREAMS
async def test_a_pause_with_calls_counts_as_a_continuation(stream: bool) -> None:
    replies = [paused_with_call("alpha", stream, "tu_1"), paused_with_call("beta", stream, "tu_2"),
               done(stream)]  # fmt: skip
    events, messages, server, _ = await run(replies, stream, continuations=1)
    assert len(server.requests) == 2  # the second pause found no continuation left
    assert RAN == ["alpha", "beta"]  # its calls still ran: no call is left unanswered
    stopped = [e.stop for e in events if e.type is E.MODEL_STOPPED]
    assert len(stopped) == 1 and stopped[0] is not None
    assert (stopped[0].reason, stopped[0].raw) == (StopReason.PAUSED, "pause_turn")
    final = events[-1]
    assert final.type is E.RUN_COMPLETED and final.stop is not None
    assert final.stop.reason is StopReason.PAUSED
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    assert answered == {"tu_1", "tu_2"}


@STREAMS
async def test_pauses_with_and_without_calls_share_the_count(stream: bool) -> None:
    plain = (
        named(A_START, *a_text("searching"), *a_end("pause_turn"))
        if stream
        else a_body([{"type": "text", "text": "searching"}], "pause_turn")
    )
    events, _, server, _ = await run([plain, paused_with_call("alpha", stream)], stream, 1)
    assert len(server.requests) == 2
    assert [e.stop.reason for e in events if e.type is E.MODEL_STOPPED and e.stop] == [
        StopReason.PAUSED
    ]


def compaction(stream: bool) -> Reply:
    if stream:
        start = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "compaction", "content": None},
        }
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "compaction_delta", "content": "Summary so far.",
                           "encrypted_content": "enc-1"}}  # fmt: skip
        return named(A_START, start, delta, {"type": "content_block_stop", "index": 0},
                     *a_end("compaction"))  # fmt: skip
    block = {"type": "compaction", "content": "Summary so far.", "encrypted_content": "enc-1"}
    return a_body([block], "compaction")


@STREAMS
async def test_compaction_is_continued_with_its_block_sent_back(stream: bool) -> None:
    events, messages, server, _ = await run([compaction(stream), done(stream)], stream)
    assert E.MODEL_STOPPED not in [e.type for e in events]
    paused = messages[1]
    assert isinstance(paused, AssistantMessage) and paused.stop is not None
    assert (paused.stop.reason, paused.stop.raw) == (StopReason.PAUSED, "compaction")
    sent = server.requests[1].json["messages"][-1]
    assert sent["role"] == "assistant"
    assert sent["content"] == [
        {"type": "compaction", "content": "Summary so far.", "encrypted_content": "enc-1"}
    ]
    final = events[-1].message
    assert final is not None and final.text == "done"
