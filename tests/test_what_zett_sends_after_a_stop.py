"""After any stop the conversation can go on: every request zett sends is one the
provider's documented rules accept (``tests/provider_rules.py``: the pinned SDK's
request types for the shape, one hand-written rule per invariant, each citing
its source).

Sans-IO, for every protocol: a recorded answer (``tests/recordings``) and a
hand-written one (``tests/faults/wire.py``) are cut at every event boundary (the
decoder fed events ``[:k]``), the answer stored as the loop stores it (calls
withheld under INTERRUPTED, results for the rest), and the next turn encoded and
checked. Then one real-socket run per protocol (``ReplayServer``, the connection
dropped mid-answer, then the next prompt). Beside them: one test per rule zett
repairs, that a host's history is never rewritten (``HistoryError``), and that a
message is checked once however many turns follow."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from faults.wire import WIRES, Call
from provider_rules import problems
from zett_agent import (
    AssistantMessage,
    HistoryError,
    Model,
    StopInfo,
    StopReason,
    ToolResultMessage,
    UserMessage,
    create_agent,
)
from zett_agent._exchange import ModelRequest, ModelResponse, ToolSpec
from zett_agent._history import repair_orphaned_tool_calls
from zett_agent._messages import Message
from zett_agent.errors import ZettError
from zett_agent.model._model import own_records
from zett_agent.protocols import get_protocol
from zett_agent.protocols._framing import LineFramer, SSEFramer
from zett_agent.protocols._sendable import sendable_record
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import get_vendor

RECORDINGS = Path(__file__).parent / "recordings"
MODEL = "m"


def sse_chunks(name: str) -> list[bytes]:
    """A recorded SSE stream as its events, one chunk each."""
    text = (RECORDINGS / name).read_bytes().replace(b"\r\n", b"\n")
    return [event + b"\n\n" for event in text.split(b"\n\n") if event.strip()]


def handwritten(protocol: str) -> list[bytes]:
    wire = WIRES[protocol]
    return wire.answer(["Let me ", "look."], Call(('{"q', 'uery": 1}')))


CASES: dict[str, tuple[str, str, list[bytes]]] = {
    # id: (protocol, vendor, chunks)
    "anthropic-thinking-server-tools": (
        "anthropic",
        "anthropic",
        sse_chunks("anthropic__stream_pause_turn_message_delta.sse"),
    ),
    "anthropic-tool-use": (
        "anthropic",
        "anthropic",
        sse_chunks("anthropic__stream_tool_use_input_json_delta.sse"),
    ),
    "anthropic-handwritten": ("anthropic", "anthropic", handwritten("anthropic")),
    "chat-parallel-calls": (
        "openai-chat",
        "openai",
        sse_chunks("openai_chat__stream_parallel_tool_calls_index.sse"),
    ),
    "chat-deepseek-reasoning": (
        "openai-chat",
        "deepseek",
        sse_chunks("deepseek__stream_reasoner_stop_usage.sse"),
    ),
    "chat-handwritten": ("openai-chat", "openai", handwritten("openai-chat")),
    "responses-reasoning-call": (
        "openai-responses",
        "openai-responses",
        sse_chunks("openai_responses__stream_function_call_args_delta.sse"),
    ),
    "responses-handwritten": (
        "openai-responses",
        "openai-responses",
        handwritten("openai-responses"),
    ),
    "gemini-call": (
        "gemini",
        "google",
        sse_chunks("gemini__stream_functionCall_then_STOP_empty_text.sse"),
    ),
    "gemini-handwritten": ("gemini", "google", handwritten("gemini")),
    "ollama-handwritten": ("ollama", "ollama", handwritten("ollama")),
}


def decode(protocol: str, vendor: str, chunks: list[bytes]) -> ModelResponse | None:
    """The answer a decoder makes of ``chunks`` (a stream cut after them), or None
    when nothing of an answer arrived (the transport raises then: nothing is stored)."""
    decoder = get_protocol(protocol).decoder(get_vendor(vendor))
    framer: Any = LineFramer(1 << 24) if protocol == "ollama" else SSEFramer(1 << 24)
    try:
        for chunk in chunks:
            for item in framer.feed(chunk):
                if protocol == "ollama":
                    decoder.feed_line(item)
                else:
                    decoder.feed_sse(*item)
        response = decoder.finish()
    except ZettError:
        return None  # an error before any output: raised, nothing stored
    if not (response.text or response.tool_calls or response.reasoning or response.provider_record):
        return None
    return response


def stored(protocol: str, vendor: str, response: ModelResponse) -> AssistantMessage:
    """The answer as the loop stores it: stamped with its origin (``Model``), calls
    withheld under INTERRUPTED and REFUSAL (``_Run._withhold``)."""
    record = response.provider_record
    if record is not None:
        record = {**record, "origin": {"provider": vendor, "model": MODEL}}
    response = replace(response, provider_record=record)
    withheld = response.stop_info.reason in (StopReason.INTERRUPTED, StopReason.REFUSAL)
    if withheld and response.tool_calls:
        response = replace(
            response,
            tool_calls=(),
            provider_record=get_protocol(protocol).without_tool_calls(record),
        )
    return response.to_message(vendor)


def next_request(protocol: str, vendor: str, answer: AssistantMessage | None) -> dict[str, Any]:
    """The body of the request after ``answer``: its calls' results, then the next
    prompt (a PAUSED answer is continued as it is, as the loop does)."""
    history: list[Message] = [UserMessage("first")]
    names: set[str] = set()
    if answer is not None:
        history.append(answer)
        for call in answer.tool_calls:
            history.append(ToolResultMessage(call.id, call.name, "done"))
            names.add(call.name)
        detail = answer.stop.detail if answer.stop else {}
        names |= set(detail.get("withheld_tool_calls", []))
    paused = (
        answer is not None and answer.stop is not None and answer.stop.reason is StopReason.PAUSED
    )
    if not paused:
        history.append(UserMessage("next"))
    origin = {"provider": vendor, "model": MODEL}
    messages = own_records(repair_orphaned_tool_calls(history), origin)
    tools = [
        ToolSpec(name, "a tool", {"type": "object", "properties": {}}) for name in sorted(names)
    ]
    request = ModelRequest(MODEL, messages, tools=tools or None)
    body: dict[str, Any] = dict(
        get_protocol(protocol).encode_request(request, get_vendor(vendor)).body
    )
    return body


@pytest.mark.parametrize("case", list(CASES))
def test_cut_at_every_event_boundary_then_the_next_turn_is_accepted(case: str) -> None:
    protocol, vendor, chunks = CASES[case]
    repaired = 0
    for k in range(len(chunks) + 1):
        response = decode(protocol, vendor, chunks[:k])
        answer = stored(protocol, vendor, response) if response is not None else None
        body = next_request(protocol, vendor, answer)
        assert problems(protocol, body) == [], f"cut after {k} of {len(chunks)} events"
        if answer is not None and answer.stop is not None and answer.stop.detail.get("not_resent"):
            repaired += 1
    if case in ("anthropic-thinking-server-tools", "responses-reasoning-call"):
        assert repaired > 0  # the recording holds what a cut leaves unsendable


# ---------------------------------------------------------------- over a real socket

REAL: dict[str, tuple[str, int]] = {
    # protocol: (case, events before the connection drops)
    "anthropic": ("anthropic-thinking-server-tools", 6),  # inside the thinking block
    "openai-chat": ("chat-parallel-calls", 8),
    "openai-responses": ("responses-reasoning-call", 39),  # just after the reasoning item
    "gemini": ("gemini-handwritten", 3),
    "ollama": ("ollama-handwritten", 2),
}


def finished(protocol: str) -> Reply:
    wire = WIRES[protocol]
    return wire.reply(wire.answer(["fine"]))


@pytest.mark.parametrize("protocol", list(REAL))
async def test_a_dropped_answer_then_the_next_prompt_over_a_socket(protocol: str) -> None:
    case, cut = REAL[protocol]
    _, vendor, chunks = CASES[case]
    content_type = WIRES[protocol].content_type
    replies = [Reply(chunks, content_type=content_type, drop_after=cut), finished(protocol)]
    with ReplayServer(replies) as server:
        model = Model(vendor, MODEL, base_url=server.url, api_key="k", max_retries=0)
        agent = await create_agent(model)
        try:
            first = await agent.run("first")
            await agent.run("next")
        finally:
            await agent.aclose()
    assert first.stop is not None and first.stop.reason is StopReason.INTERRUPTED
    assert len(server.requests) == 2
    assert problems(protocol, server.requests[1].json) == []


# ---------------------------------------------------------------- each rule zett repairs

ORIGIN = {"provider": "anthropic", "model": MODEL}
CUT = StopInfo(StopReason.INTERRUPTED, detail={"incomplete_stream": True})


def answer(
    record: dict[str, Any], *, own: bool = True, text: str = "", stop: StopInfo | None = CUT
) -> AssistantMessage:
    if own:
        record = {**record, "origin": ORIGIN}
    return AssistantMessage(text=text, stop=stop, provider_record=record)


def body_for(protocol: str, vendor: str, message: AssistantMessage) -> dict[str, Any]:
    request = ModelRequest(MODEL, [UserMessage("first"), message, UserMessage("next")])
    return dict(get_protocol(protocol).encode_request(request, get_vendor(vendor)).body)


SIGNED = {"type": "thinking", "thinking": "so", "signature": "c2ln"}
UNSIGNED = {"type": "thinking", "thinking": "half a thou", "signature": ""}
SEARCH = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}}
FOUND = {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []}
TEXT = {"type": "text", "text": "Looking"}


@pytest.mark.parametrize(
    ("blocks", "sent", "words"),
    [
        ([UNSIGNED], None, "thinking block 0: no signature"),
        ([SIGNED, TEXT, UNSIGNED], [SIGNED, TEXT], "thinking block 2"),
        ([{"type": "redacted_thinking", "data": ""}, TEXT], [TEXT], "redacted_thinking block 0"),
        ([SIGNED, TEXT, SEARCH], [SIGNED, TEXT], "server_tool_use block 2 (web_search)"),
        ([SIGNED, SEARCH, FOUND, TEXT], [SIGNED, SEARCH, FOUND, TEXT], None),
        ([{"type": "redacted_thinking", "data": "b3BhcXVl"}, TEXT], None, None),
    ],
)
def test_anthropic_leftovers_of_a_cut_answer_are_not_sent(
    blocks: list[dict[str, Any]], sent: list[dict[str, Any]] | None, words: str | None
) -> None:
    message = answer({"protocol": "anthropic", "content": blocks}, text="Looking")
    body = body_for("anthropic", "anthropic", message)
    assert problems("anthropic", body) == []
    content = body["messages"][1]["content"]
    if words is None:
        assert content == (sent or blocks)  # signed, redacted, answered: exactly as they came
        return
    assert content == (sent or [{"type": "text", "text": "Looking"}])


def test_the_answer_says_what_is_not_sent_again() -> None:
    chunks = CASES["anthropic-thinking-server-tools"][2]
    response = decode("anthropic", "anthropic", chunks[:6])  # inside the thinking block
    assert response is not None and response.stop_info.reason is StopReason.INTERRUPTED
    assert response.stop_info.detail["not_resent"] == [
        "thinking block 0: no signature (unfinished; left out)"
    ]
    whole = decode("anthropic", "anthropic", chunks)  # pause_turn: sent back as it is
    assert whole is not None and "not_resent" not in whole.stop_info.detail


def test_a_paused_answer_is_sent_back_exactly() -> None:
    message = answer(
        {"protocol": "anthropic", "content": [SIGNED, TEXT, SEARCH]},
        stop=StopInfo(StopReason.PAUSED, raw="pause_turn"),
    )
    request = ModelRequest(MODEL, [UserMessage("first"), message])
    body = get_protocol("anthropic").encode_request(request, get_vendor("anthropic")).body
    assert body["messages"][1]["content"] == [SIGNED, TEXT, SEARCH]


def test_responses_a_lone_reasoning_item_is_left_out_and_the_text_kept() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
    message = answer({"protocol": "openai-responses", "output": [reasoning]}, text="Half an ans")
    body = body_for("openai-responses", "openai-responses", message)
    assert problems("openai-responses", body) == []
    assert body["input"][1] == {"role": "assistant", "content": "Half an ans"}
    whole = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Done", "annotations": []}]}  # fmt: skip
    kept = answer({"protocol": "openai-responses", "output": [reasoning, whole]}, text="Done")
    assert body_for("openai-responses", "openai-responses", kept)["input"][1:3] == [
        reasoning,
        whole,
    ]


def test_gemini_a_part_without_data_is_left_out() -> None:
    record = {
        "protocol": "gemini",
        "content": {"role": "model", "parts": [{"text": "Half"}, {"thoughtSignature": "c2ln"}]},
    }
    body = body_for("gemini", "google", answer(record, text="Half"))
    assert problems("gemini", body) == []
    assert body["contents"][1] == {"role": "model", "parts": [{"text": "Half"}]}


def test_chat_a_recorded_message_with_neither_content_nor_calls_is_left_out() -> None:
    record = {"protocol": "openai-chat", "message": {"role": "assistant", "content": None}}
    body = body_for("openai-chat", "openai", answer(record, text="Half"))
    assert problems("openai-chat", body) == []
    assert body["messages"][1] == {"role": "assistant", "content": "Half"}


@pytest.mark.parametrize(
    ("protocol", "vendor", "record"),
    [
        ("anthropic", "anthropic", {"protocol": "anthropic", "content": [UNSIGNED, TEXT]}),
        ("anthropic", "anthropic", {"protocol": "anthropic", "content": [TEXT, SEARCH]}),
        (
            "openai-responses",
            "openai-responses",
            {
                "protocol": "openai-responses",
                "output": [{"type": "reasoning", "id": "rs_1", "summary": []}],
            },
        ),
        (
            "gemini",
            "google",
            {"protocol": "gemini", "content": {"role": "model", "parts": [{"thought": True}]}},
        ),
        (
            "openai-chat",
            "openai",
            {"protocol": "openai-chat", "message": {"role": "assistant", "content": None}},
        ),
    ],
)
@pytest.mark.parametrize("why", ["no origin", "ended normally"])
def test_a_history_zett_did_not_cut_is_never_rewritten(
    protocol: str, vendor: str, record: dict[str, Any], why: str
) -> None:
    message = (
        answer(record, own=False, text="x")
        if why == "no origin"
        else answer(record, text="x", stop=None)
    )
    with pytest.raises(HistoryError) as caught:
        body_for(protocol, vendor, message)
    assert caught.value.index == 1 and caught.value.protocol == protocol


def test_a_repair_is_logged_once_and_a_message_checked_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def rules(record: Any) -> tuple[Any, list[str]]:
        calls.append(1)
        return None, ["block 0: broken (left out)"]

    message = answer({"protocol": "anthropic", "content": [UNSIGNED]})
    with caplog.at_level(logging.INFO, logger="zett_agent.history"):
        for _ in range(50):  # fifty more turns: the message is checked once
            assert sendable_record(message, 1, "anthropic", rules) is None
    assert calls == [1]
    [logged] = [r for r in caplog.records if r.name == "zett_agent.history"]
    assert logged.getMessage() == "left out of a resent answer"
    assert logged.zett_repairs == ["block 0: broken (left out)"]  # type: ignore[attr-defined]
