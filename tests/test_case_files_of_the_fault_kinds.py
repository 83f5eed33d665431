"""Every file in ``tests/cases/{cut-tool-calls,one-answer,replay}`` (copied from
``../shared/cases``) served over a real socket by ``ReplayServer`` and run through
the public API (``create_agent`` + ``agent.stream``) with the tools the case names.

The right result of each file is the one in ``../shared/cases/README.md``; a file
added to a folder without an expectation here fails
(``test_every_case_file_has_an_expectation``).
"""

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
    create_agent,
)
from zett_agent.testing import ReplayServer, Reply
from zett_agent.tools import CUT_OFF_ARGUMENTS

CASES = Path(__file__).parent / "cases"
E = AgentEventType
RAN: list[tuple[str, dict[str, Any]]] = []


def delete_all() -> str:
    """Delete everything."""
    RAN.append(("delete_all", {}))
    return "deleted everything"


def write_file(path: str, content: str) -> str:
    """Write a file."""
    RAN.append(("write_file", {"path": path, "content": content}))
    return "written"


def lookup(query: str) -> str:
    """Look something up."""
    RAN.append(("lookup", {"query": query}))
    return "alpha is the first letter"


TOOLS = [delete_all, write_file, lookup]


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def text_reply(vendor: str, text: str = "ok") -> Reply:
    """A plain answer in the vendor's wire format (the turn after the tool results)."""
    if vendor == "anthropic":
        return Reply.sse(
            (event["type"], event)
            for event in [
                {"type": "message_start", "message": {"model": "test-model", "usage": {}}},
                {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": text}},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
                {"type": "message_stop"},
            ]
        )  # fmt: skip
    return Reply.sse(
        [
            (None, {"choices": [{"index": 0, "delta": {"content": text}}]}),
            (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            (None, "[DONE]"),
        ]
    )


async def run(
    vendor: str, replies: list[Reply], *, max_tokens: int | None = None, stream: bool = True
) -> tuple[list[Any], ReplayServer]:
    with ReplayServer(replies) as server:
        model = Model(vendor, "test-model", base_url=server.url, api_key="k", stream=stream)
        agent = await create_agent(
            model, AgentRunConfig("cases", max_tokens=max_tokens), tools=TOOLS
        )
        events = [event async for event in agent.stream("go")]
        await agent.aclose()
    return events, server


def answers(events: list[Any]) -> list[AssistantMessage]:
    return [e.message for e in events if e.type is E.MODEL_COMPLETED]


# ---------------------------------------------------------------- cut-tool-calls

CUT = {
    # file: (vendor, requested max_tokens, the cut call, its id, raw)
    "anthropic_tool_block_never_closed.sse": ("anthropic", None, "delete_all", "toolu_x1",
                                              "max_tokens"),
    "openai_length_call_name_only.sse": ("openai", None, "delete_all", "call_x1", "length"),
    "openai_tool_calls_label_unterminated_args.sse": ("openai", 24, "write_file", "call_r1",
                                                      "tool_calls"),
}  # fmt: skip


def _sent_tool_result(vendor: str, body: dict[str, Any]) -> dict[str, Any]:
    """The tool result the second request carried, as ``{id, content, is_error}``."""
    last = body["messages"][-1]
    if vendor == "anthropic":
        block = last["content"][0]
        assert block["type"] == "tool_result"
        return {
            "id": block["tool_use_id"],
            "content": block["content"],
            "is_error": block.get("is_error", False),
        }
    assert last["role"] == "tool"
    return {"id": last["tool_call_id"], "content": last["content"], "is_error": None}


@pytest.mark.parametrize("name", sorted(CUT))
async def test_cut_tool_call_case_never_runs_and_is_answered(name: str) -> None:
    vendor, max_tokens, tool, call_id, raw = CUT[name]
    replies = [Reply.file(CASES / "cut-tool-calls" / name), text_reply(vendor)]
    events, server = await run(vendor, replies, max_tokens=max_tokens)

    assert RAN == []  # the tool did NOT run
    first, last = answers(events)
    assert first.stop is not None
    assert (first.stop.reason, first.stop.raw) == (StopReason.MAX_OUTPUT, raw)  # raw kept
    assert first.stop.detail["cut_tool_calls"] == [tool]  # the host hears which
    assert [(c.name, c.closed) for c in first.tool_calls] == [(tool, False)]
    stopped = [e.stop.reason for e in events if e.type is E.MODEL_STOPPED]
    assert stopped == [StopReason.MAX_OUTPUT]
    # the model is answered for that call with the cut-off error result; the run goes on
    result = _sent_tool_result(vendor, server.requests[1].json)
    assert result["id"] == call_id and result["content"] == CUT_OFF_ARGUMENTS
    assert result["is_error"] in (True, None)
    assert last.text == "ok" and last.stop is None
    assert len(server.requests) == 2 and server.remaining == 0


# ---------------------------------------------------------------- one-answer


async def test_one_answer_case_gemini_no_candidates_same_stop_streamed_or_not() -> None:
    folder = CASES / "one-answer"
    streamed, s_server = await run(
        "google", [Reply.file(folder / "gemini_stream_no_candidates.sse")] * 4
    )
    whole, b_server = await run(
        "google", [Reply.file(folder / "gemini_body_no_candidates.json")] * 4, stream=False
    )
    (s_answer,), (b_answer,) = answers(streamed), answers(whole)
    assert s_answer.stop is not None and b_answer.stop is not None
    assert s_answer.stop == b_answer.stop  # reason, raw, category, message, detail
    assert s_answer.stop.reason is StopReason.INTERRUPTED
    assert s_answer.stop.detail == {"no_candidates": True}  # names the missing candidates
    assert "no candidates" in (s_answer.stop.message or "")
    # one request each: the stream that sent "candidates": [] is not retried
    assert len(s_server.requests) == 1 and len(b_server.requests) == 1
    assert [e.type for e in streamed][-1] is E.RUN_COMPLETED


# ---------------------------------------------------------------- replay


async def test_replay_case_deepseek_empty_reasoning_content_is_sent_back() -> None:
    replies = [
        Reply.file(CASES / "replay" / "deepseek_empty_reasoning_then_tool.sse"),
        text_reply("deepseek", "done"),
    ]
    events, server = await run("deepseek", replies)
    assert RAN == [("lookup", {"query": "alpha"})]
    sent = server.requests[1].json["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert assistant == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "",  # DeepSeek thinking mode requires it on tool-call turns
        "tool_calls": [
            {
                "id": "call_50",
                "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"query": "alpha"})},
            }
        ],
    }
    assert answers(events)[-1].text == "done"


def test_every_case_file_has_an_expectation() -> None:
    files = {
        "cut-tool-calls": set(CUT),
        "one-answer": {"gemini_stream_no_candidates.sse", "gemini_body_no_candidates.json"},
        "replay": {"deepseek_empty_reasoning_then_tool.sse"},
    }
    for folder, expected in files.items():
        assert {p.name for p in (CASES / folder).iterdir()} == expected
