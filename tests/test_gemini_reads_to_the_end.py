"""Gemini answers are read to their end, streamed and as a body (a JSON list of the
chunks), through the public API and a real socket, and so is ``zett inspect``.

* ``tests/cases/wire-2/gemini_stream_leading_empty_stop.sse``: two empty candidates
  saying ``STOP``, then the answer, then ``STOP``: the answer with a normal end (it was
  dropped: the decoder stopped at the first finishReason);
* content after a finishReason reopens the answer; the last finish after the last
  content wins, but ``STOP`` never hides an abnormal one;
* the finished chunk sent again is read once; an error chunk after the end is not read;
* ``CONTINUATION`` is a pause continued with its ``continuationToken``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handwritten_wire import g
from zett_agent import (
    AgentEventType,
    AssistantMessage,
    Model,
    ModelRequest,
    ModelResponse,
    StopReason,
    UserMessage,
    create_agent,
)
from zett_agent.cli import app
from zett_agent.errors import StreamError
from zett_agent.testing import ReplayServer, Reply

CASE = Path(__file__).parent / "cases" / "wire-2" / "gemini_stream_leading_empty_stop.sse"
ANSWER = "The capital of France is Paris."
GEMINI = ["google", "vertex", "vertex-express"]
R = StopReason
RAN: list[str] = []


def lookup(query: str) -> str:
    """Look something up."""
    RAN.append(query)
    return "found"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def case_chunks() -> list[Any]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in CASE.read_text().splitlines()
        if line.startswith("data: ")
    ]


def reply(chunks: list[Any], stream: bool) -> Reply:
    """The chunks as an ``alt=sse`` stream, or as the JSON list a body holds."""
    return Reply.sse((None, c) for c in chunks) if stream else Reply.json(chunks)


async def complete(vendor: str, chunks: list[Any], stream: bool) -> ModelResponse:
    with ReplayServer([reply(chunks, stream)]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
        try:
            return await model.complete(ModelRequest("m", [UserMessage("hi")]))
        finally:
            await model.aclose()


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize("vendor", GEMINI)
async def test_leading_empty_stop_case_gives_the_whole_answer(vendor: str, stream: bool) -> None:
    with ReplayServer([reply(case_chunks(), stream)]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
        agent = await create_agent(model)
        events = [event async for event in agent.stream("What is the capital of France?")]
        await agent.aclose()
    final = events[-1].message
    assert isinstance(final, AssistantMessage)
    assert final.text == ANSWER and final.stop is None
    assert AgentEventType.MODEL_STOPPED not in [e.type for e in events]
    assert final.usage.output_tokens == 9  # the last chunk's usage


@pytest.mark.parametrize("stream_flag", ["--stream", "--no-stream"])
def test_zett_inspect_reads_the_case_to_the_end(tmp_path: Path, stream_flag: str) -> None:
    from typer.testing import CliRunner

    path = CASE
    if stream_flag == "--no-stream":
        path = tmp_path / "body.json"
        path.write_text(json.dumps(case_chunks()))
    result = CliRunner().invoke(
        app, ["inspect", "--json", "--provider", "google", stream_flag, str(path)]
    )
    record = json.loads(result.stdout)
    assert result.exit_code == 0
    assert (record["reason"], record["raw"], record["text"]) == ("end_turn", "STOP", ANSWER)


EMPTY_STOP = g([], "STOP")
TEXT = g([{"text": "Hi there."}])
CALL = g([{"functionCall": {"name": "lookup", "args": {"query": "alpha"}}}], "STOP")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize(
    ("chunks", "reason", "raw", "finishes"),
    [
        # a finish before content is not the end; the one after the content is
        ([EMPTY_STOP, TEXT, g([], "MAX_TOKENS")], R.MAX_OUTPUT, "MAX_TOKENS",
         ["STOP", "MAX_TOKENS"]),
        # STOP after an abnormal finish never hides it
        ([g([{"text": "Hi"}], "SAFETY"), EMPTY_STOP], R.REFUSAL, "SAFETY", ["SAFETY", "STOP"]),
        ([TEXT, g([], "MAX_TOKENS"), EMPTY_STOP], R.MAX_OUTPUT, "MAX_TOKENS",
         ["MAX_TOKENS", "STOP"]),
        # the last of several abnormal finishes
        ([TEXT, g([], "RECITATION"), g([], "SAFETY")], R.REFUSAL, "SAFETY",
         ["RECITATION", "SAFETY"]),
        # content after the last finish: the answer never finished
        ([EMPTY_STOP, TEXT], R.INTERRUPTED, None, ["STOP"]),
    ],
    ids=["stop-text-max", "safety-stop", "max-stop", "recitation-safety", "stop-text-end"],
)  # fmt: skip
async def test_the_last_finish_after_the_content_wins(
    chunks: list[Any], reason: StopReason, raw: str | None, finishes: list[str], stream: bool
) -> None:
    response = await complete("google", chunks, stream)
    info = response.stop_info
    assert (info.reason, info.raw) == (reason, raw)
    assert info.detail["finish_reasons"] == finishes
    assert response.text.startswith("Hi")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
async def test_a_call_after_a_leading_stop_runs(stream: bool) -> None:
    chunks = [EMPTY_STOP, EMPTY_STOP, CALL]
    done = g([{"text": "ok"}], "STOP")
    with ReplayServer([reply(chunks, stream), reply([done], stream)]) as server:
        model = Model("google", "m", base_url=server.url, api_key="k", stream=stream)
        agent = await create_agent(model, tools=[lookup])
        message = await agent.run("go")
        await agent.aclose()
    assert RAN == ["alpha"] and message.text == "ok"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
async def test_the_finished_chunk_sent_again_is_read_once(stream: bool) -> None:
    response = await complete("google", [g([{"text": "Hi"}]), CALL, CALL], stream)
    assert [c.name for c in response.tool_calls] == ["lookup"]
    assert response.text == "Hi"
    assert response.stop_info.reason is R.TOOL_USE
    assert response.stop_info.detail["repeated_chunks"] == 1
    record = response.provider_record
    assert record is not None
    assert [p for p in record["content"]["parts"] if "functionCall" in p] == [
        {"functionCall": {"name": "lookup", "args": {"query": "alpha"}}}
    ]


async def test_an_error_chunk_after_the_end_is_not_read() -> None:
    error = {"error": {"code": 503, "message": "late", "status": "UNAVAILABLE"}}
    response = await complete("google", [TEXT, EMPTY_STOP, error], True)
    assert response.stop_info.reason is R.END_TURN and response.text == "Hi there."


async def test_an_error_after_a_leading_stop_is_an_error() -> None:
    error = {"error": {"code": 503, "message": "down", "status": "UNAVAILABLE"}}
    with ReplayServer([reply([EMPTY_STOP, error], True)] * 3) as server:
        model = Model("google", "m", base_url=server.url, api_key="k")
        with pytest.raises(StreamError, match="down"):
            await model.complete(ModelRequest("m", [UserMessage("hi")]))
        await model.aclose()


# ---------------------------------------------------------------- CONTINUATION


def continuation(text: str, token: str) -> dict[str, Any]:
    chunk = g([{"text": text}], "CONTINUATION")
    chunk["candidates"][0]["continuationToken"] = token
    return chunk


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
async def test_continuation_is_continued_with_its_token(stream: bool) -> None:
    replies = [reply([continuation("Part one, ", "tok-1")], stream),
               reply([g([{"text": "part two."}], "STOP")], stream)]  # fmt: skip
    with ReplayServer(replies) as server:
        model = Model("google", "m", base_url=server.url, api_key="k", stream=stream)
        agent = await create_agent(model)
        events = [event async for event in agent.stream("Write it")]
        messages = list(agent.messages)
        await agent.aclose()
    first, second = (r.json for r in server.requests)
    assert "continuationToken" not in first
    assert second["continuationToken"] == "tok-1"
    assert second["contents"] == first["contents"]  # the same request, with the token
    assert AgentEventType.MODEL_STOPPED not in [e.type for e in events]
    paused, answer = [m for m in messages if isinstance(m, AssistantMessage)]
    assert paused.stop is not None and paused.stop.reason is R.PAUSED
    assert paused.stop.raw == "CONTINUATION"
    assert paused.stop.detail["continuation_token"] == "tok-1"
    assert (paused.text, answer.text, answer.stop) == ("Part one, ", "part two.", None)


async def test_continuation_is_reported_when_continuations_run_out() -> None:
    replies = [reply([continuation(f"part {n} ", f"tok-{n}")], True) for n in range(3)]
    with ReplayServer(replies) as server:
        agent = await create_agent(Model("google", "m", base_url=server.url, api_key="k"))
        agent.max_pause_continuations = 2
        events = [event async for event in agent.stream("Write it")]
        await agent.aclose()
    tokens = [r.json.get("continuationToken") for r in server.requests]
    assert tokens == [None, "tok-0", "tok-1"]
    stopped = [e.stop for e in events if e.type is AgentEventType.MODEL_STOPPED]
    assert len(stopped) == 1 and stopped[0] is not None
    assert (stopped[0].reason, stopped[0].detail["continuation_token"]) == (R.PAUSED, "tok-2")
