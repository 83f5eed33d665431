"""resume(): continuing a cut-off answer, offline (ScriptedModel) and over a real
socket (ReplayServer); cancellation storing the partial answer; a killed process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest

from zett_agent import (
    AgentClient,
    AgentEventType,
    AssistantMessage,
    InMemorySessionStore,
    Message,
    Model,
    ResumeError,
    SQLiteSessionStore,
    StopInfo,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    ZettError,
    create_agent,
)
from zett_agent._exchange import ModelRequest, ModelResponse, StreamEvent, TextDelta, ToolCallDelta
from zett_agent._resume import (
    CANCELLED_MESSAGE,
    CONTINUE_PROMPT,
    continues_by_prefill,
    plan_resume,
)
from zett_agent.testing import ReplayServer, Reply, ScriptedModel, reply
from zett_agent.tools import NOT_RUN

pytestmark = pytest.mark.timeout(60)

E = AgentEventType
SRC = Path(__file__).resolve().parents[1] / "src"


def cut(text: str, reason: StopReason = StopReason.INTERRUPTED) -> Any:
    return reply(text, stop=StopInfo(reason, raw=reason.value))


def texts(messages: list[Message]) -> list[str]:
    return [
        m.content if isinstance(m, UserMessage | ToolResultMessage) else m.text for m in messages
    ]  # type: ignore[union-attr]


# ---------------------------------------------------------------- offline, ScriptedModel


@pytest.mark.parametrize("reason", [StopReason.INTERRUPTED, StopReason.MAX_OUTPUT])
async def test_resume_without_prefill_adds_a_continuation_turn(reason: StopReason) -> None:
    model = ScriptedModel(cut("Once upon a ", reason), reply("time, the end."))
    assert not continues_by_prefill(model)
    client = AgentClient(await create_agent(model))
    first = await client.run("Tell a story", session_id="s")
    assert first.stop is not None
    assert first.stop.reason is reason
    final = await client.resume("s")
    assert final.stop is None
    assert final.text == "time, the end."
    sent = model.requests[1].messages
    assert sent[-2:] == [first, UserMessage(CONTINUE_PROMPT)]
    assert texts(await client.messages("s")) == [
        "Tell a story",
        "Once upon a ",
        CONTINUE_PROMPT,
        "time, the end.",
    ]


async def test_resume_with_prefill_joins_the_answer_and_keeps_the_cut_row() -> None:
    model = ScriptedModel(cut("Once upon a "), reply(" time, the end."))
    model.supports_prefill = True  # type: ignore[attr-defined]
    store = InMemorySessionStore()
    client = AgentClient(await create_agent(model), store, session_id="s")
    await client.run("Tell a story")
    events = [event async for event in client.resume_stream()]
    # the request ends with the partial answer, trailing whitespace trimmed
    assert model.requests[1].messages[-1] == AssistantMessage("Once upon a")
    assert model.requests[1].messages[-2] == UserMessage("Tell a story")
    deltas = "".join(e.text or "" for e in events if e.type is E.TEXT_DELTA)
    assert deltas == " time, the end."  # only the new text streams
    final = events[-1].message
    assert final is not None
    assert final.text == "Once upon a time, the end."
    assert final.stop is None
    assert final.provider_record is None  # a record of another protocol cannot be joined
    assert await store.load("s") == [UserMessage("Tell a story"), final]
    rows = await store.rows("s")
    assert [(r.seq, r.replaces) for r in rows] == [(1, None), (2, None), (3, 2)]
    assert rows[1].message.text == "Once upon a "  # type: ignore[union-attr]


async def test_agent_resume_on_its_own_messages() -> None:
    model = ScriptedModel(cut("Hel"), reply("lo!"))
    model.supports_prefill = True  # type: ignore[attr-defined]
    agent = await create_agent(model)
    await agent.run("greet")
    message = await agent.resume()
    assert message.text == "Hello!"
    assert agent.messages == [UserMessage("greet"), message]
    with pytest.raises(ResumeError, match="nothing to resume: the last answer ended normally"):
        await agent.resume()
    assert len(model.requests) == 2


@pytest.mark.parametrize(
    ("stop", "why"),
    [
        (StopInfo(StopReason.REFUSAL, "refusal", "cyber", "Declined."), "refusal \\(cyber\\)"),
        (StopInfo(StopReason.CONTEXT_FULL, "model_context_window_exceeded"), "context window"),
        (None, "ended normally"),
        (StopInfo(StopReason.OTHER, "MODEL_ARMOR"), "ended with other"),
    ],
)
async def test_what_cannot_be_resumed_raises_before_sending(
    stop: StopInfo | None, why: str
) -> None:
    model = ScriptedModel()
    client = AgentClient(await create_agent(model), session_id="s")
    await client.store.append("s", UserMessage("q"))
    await client.store.append("s", AssistantMessage("partial", stop=stop))
    with pytest.raises(ResumeError, match=why) as info:
        await client.resume()
    assert isinstance(info.value, ZettError)
    assert info.value.stop == stop
    assert model.requests == []
    assert len(await client.messages()) == 2


async def test_empty_session_cannot_be_resumed() -> None:
    client = AgentClient(await create_agent(ScriptedModel()))
    with pytest.raises(ResumeError, match="conversation is empty"):
        await client.resume("nobody")


async def test_a_run_that_died_before_its_answer_is_run_again() -> None:
    model = ScriptedModel(reply("answer"))
    client = AgentClient(await create_agent(model), session_id="s")
    await client.store.append("s", UserMessage("q"))
    assert (await client.resume()).text == "answer"
    assert model.requests[0].messages == [UserMessage("q")]
    assert texts(await client.messages()) == ["q", "answer"]


async def test_orphaned_tool_call_is_repaired_on_resume() -> None:
    model = ScriptedModel(reply("done"))
    client = AgentClient(await create_agent(model), session_id="s")
    asked = AssistantMessage("", (ToolCall("c1", "weather", '{"city": "X"}'),))
    await client.store.append("s", UserMessage("q"))
    await client.store.append("s", asked)  # killed while the tool ran: no result stored
    await client.resume()
    assert model.requests[0].messages == [
        UserMessage("q"),
        asked,
        ToolResultMessage("c1", "weather", NOT_RUN, is_error=True),
    ]


async def test_cut_answer_without_text_is_asked_again_and_replaced() -> None:
    withheld = StopInfo(StopReason.INTERRUPTED, detail={"withheld_tool_calls": ["weather"]})
    model = ScriptedModel(reply("", stop=withheld), reply("fresh answer"))
    client = AgentClient(await create_agent(model), session_id="s")
    await client.run("q")
    await client.resume()
    assert model.requests[1].messages == [UserMessage("q")]
    assert texts(await client.messages()) == ["q", "fresh answer"]
    assert len(await client.store.rows("s")) == 3


async def test_runs_on_one_session_wait_for_each_other() -> None:
    gate = anyio.Event()

    async def slow(request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        await gate.wait()
        yield ModelResponse("a", (), StopInfo(StopReason.END_TURN))

    class Gated(ScriptedModel):
        def stream(self, request: ModelRequest) -> Any:
            self.requests.append(request)
            return slow(request)

    model = Gated()
    client = AgentClient(await create_agent(model), session_id="s")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(client.run, "one")
            group.start_soon(client.run, "two")
            await anyio.wait_all_tasks_blocked()
            assert len(model.requests) == 1  # the second run waits for the session
            gate.set()
    assert texts(await client.messages()) == ["one", "a", "two", "a"]
    assert texts(model.requests[1].messages) == ["one", "a", "two"]


# ---------------------------------------------------------------- cancellation


class HangingModel:
    """Streams some text and a tool-call fragment, then waits forever."""

    provider = "hanging"
    name = "hang-1"

    def __init__(self, *pieces: StreamEvent) -> None:
        self.pieces = pieces or (
            TextDelta("Hello "),
            TextDelta("wor"),
            ToolCallDelta(0, "c1", "weather", '{"ci'),
        )
        self.streaming = anyio.Event()
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        self.requests.append(request)
        for piece in self.pieces:
            yield piece
        self.streaming.set()
        await anyio.sleep_forever()
        yield ModelResponse("", (), StopInfo(StopReason.END_TURN))  # pragma: no cover

    def without_tool_calls(self, record: object) -> None:
        return None

    async def aclose(self) -> None:
        pass


def assert_cancelled(message: Message, text: str, withheld: list[str] | None = None) -> None:
    assert isinstance(message, AssistantMessage)
    assert message.text == text
    assert message.tool_calls == ()
    stop = message.stop
    assert stop is not None
    assert stop.reason is StopReason.INTERRUPTED
    assert stop.raw is None
    assert stop.message == CANCELLED_MESSAGE
    assert stop.detail["cancelled"] is True
    if withheld is not None:
        assert stop.detail["withheld_tool_calls"] == withheld


async def test_cancel_scope_stores_the_partial_answer(tmp_path: Path) -> None:
    model = HangingModel()
    client = AgentClient(await create_agent(model), tmp_path / "s.sqlite3", session_id="s")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(client.run, "go")
            await model.streaming.wait()
            group.cancel_scope.cancel()
    history = await client.messages()
    assert history[0] == UserMessage("go")
    assert_cancelled(history[1], "Hello wor", ["weather"])
    assert history[1].model == "hang-1"
    assert history[1].provider == "hanging"
    # and the run can be resumed
    client.agent.model = ScriptedModel(reply("ld"))
    assert (await client.resume()).text == "ld"
    assert texts(await client.messages()) == ["go", "Hello wor", CONTINUE_PROMPT, "ld"]
    await client.aclose()


async def test_closing_the_stream_stores_the_partial_answer(tmp_path: Path) -> None:
    model = HangingModel(TextDelta("Hel"), TextDelta("lo"))
    client = AgentClient(await create_agent(model), tmp_path / "s.sqlite3", session_id="s")
    with anyio.fail_after(10):
        async with aclosing(client.stream("go")) as events:
            async for event in events:
                if event.type is E.TEXT_DELTA and event.text == "lo":
                    break
    assert_cancelled((await client.messages())[-1], "Hello")
    await client.aclose()


@pytest.mark.looptime  # the 0.2 s deadline is virtual: a loaded machine cannot hit it first
async def test_timeout_on_agent_run_stores_into_agent_messages() -> None:
    model = HangingModel(TextDelta("partial"))
    agent = await create_agent(model)
    stored: list[Message] = []
    with anyio.move_on_after(0.2) as scope:
        async for _ in agent.stream("go", on_message=stored.append):
            pass
    assert scope.cancelled_caught
    assert_cancelled(agent.messages[-1], "partial")
    assert stored == agent.messages


@pytest.mark.looptime
async def test_cancel_before_any_output_records_the_cancelled_stop() -> None:
    model = HangingModel(TextDelta(""))  # nothing received yet
    model.pieces = ()
    client = AgentClient(await create_agent(model), session_id="s")
    with anyio.move_on_after(0.2):
        await client.run("go")
    stored = await client.messages()
    assert stored[0] == UserMessage("go")
    assert_cancelled(stored[-1], "")  # the session says the run was cancelled
    assert len(stored) == 2
    plan = plan_resume(stored, model)  # an empty cut-off answer is asked again
    assert plan.replaces == 1 and plan.prefill is None


async def test_cancelled_continuation_is_joined_and_still_resumable() -> None:
    hanging = HangingModel(TextDelta(" wor"))
    hanging.supports_prefill = True  # type: ignore[attr-defined]
    client = AgentClient(await create_agent(hanging), session_id="s")
    await client.store.append("s", UserMessage("greet"))
    await client.store.append(
        "s", AssistantMessage("Hello ", stop=StopInfo(StopReason.INTERRUPTED))
    )
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(client.resume)
            await hanging.streaming.wait()
            group.cancel_scope.cancel()
    history = await client.messages()
    assert len(history) == 2
    assert_cancelled(history[1], "Hello wor")
    finish = ScriptedModel(reply("ld"))
    finish.supports_prefill = True  # type: ignore[attr-defined]
    client.agent.model = finish
    assert (await client.resume()).text == "Hello world"
    assert finish.requests[0].messages[-1] == AssistantMessage("Hello wor")
    assert [r.replaces for r in await client.store.rows("s")] == [None, None, 2, 3]


# ---------------------------------------------------------------- over a real socket


def sse(kind: str, **fields: Any) -> tuple[str, Any]:
    """One Anthropic SSE event: the event name and its data."""
    return kind, {"type": kind, **fields}


def anthropic_events(*pieces: str, stop_reason: str = "end_turn") -> list[tuple[str, Any]]:
    return [
        sse("message_start", message={"model": "claude-x", "usage": {"input_tokens": 9}}),
        sse("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        *(
            sse("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
            for piece in pieces
        ),
        sse("content_block_stop", index=0),
        sse("message_delta", delta={"stop_reason": stop_reason}, usage={"output_tokens": 4}),
        sse("message_stop"),
    ]


def anthropic_tool_use(name: str, arguments: dict[str, Any]) -> list[tuple[str, Any]]:
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
    return [
        sse("message_start", message={"model": "claude-x"}),
        sse("content_block_start", index=0, content_block=block),
        sse("content_block_delta", index=0, delta=delta),
        sse("content_block_stop", index=0),
        sse("message_delta", delta={"stop_reason": "tool_use"}),
        sse("message_stop"),
    ]


async def test_anthropic_resume_sends_a_prefill_and_stores_the_joined_text(tmp_path: Path) -> None:
    dropped = Reply.sse(anthropic_events("The old pond, ", "a frog "), drop_after=4)
    rest = Reply.sse(anthropic_events(" jumps in."))
    path = tmp_path / "s.sqlite3"
    with ReplayServer([dropped, rest]) as server:
        model = Model("anthropic", "claude-x", base_url=server.url, api_key="test", max_retries=0)
        async with AgentClient(await create_agent(model), path, session_id="h") as client:
            first = await client.run("A haiku, please")
            assert first.stop is not None
            assert first.stop.reason is StopReason.INTERRUPTED
            assert first.text == "The old pond, a frog "
            final = await client.resume()
            server.add(Reply.sse(anthropic_events("Sure.")))
            await client.run("Another?")
        await model.aclose()
        assert server.unexpected == []
        sent = server.requests[1].json["messages"]
        cached = {"type": "ephemeral"}  # the breakpoint goes before the prefill
        assert sent[-2] == {
            "role": "user",
            "content": [{"type": "text", "text": "A haiku, please", "cache_control": cached}],
        }
        assert sent[-1] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "The old pond, a frog"}],
        }
        # the joined answer is replayed later as one assistant message
        later = server.requests[2].json["messages"]
        joined_block = {"type": "text", "text": "The old pond, a frog jumps in."}
        assert later[1] == {"role": "assistant", "content": [joined_block]}
    assert final.text == "The old pond, a frog jumps in."
    assert final.stop is None
    assert final.usage.input_tokens == 18  # both calls counted
    async with SQLiteSessionStore(path) as store:
        history = await store.load("h")
        assert texts(history) == [
            "A haiku, please",
            "The old pond, a frog jumps in.",
            "Another?",
            "Sure.",
        ]
        rows = await store.rows("h")
        assert rows[1].message.text == "The old pond, a frog "  # type: ignore[union-attr]
        assert rows[2].replaces == rows[1].seq


async def test_a_model_that_refuses_prefill_gets_a_continuation_turn() -> None:
    dropped = Reply.sse(anthropic_events("Once ", "upon"), drop_after=4)
    error = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "This model does not support assistant message prefill. "
            "The conversation must end with a user message.",
        },
    }
    with ReplayServer([dropped, Reply.json(error, status=400)]) as server:
        server.add(Reply.sse(anthropic_events("Once upon a time.")))
        model = Model("anthropic", "claude-x", base_url=server.url, api_key="t", max_retries=0)
        client = AgentClient(await create_agent(model), session_id="s")
        await client.run("Tell a story")
        events = [event async for event in client.resume_stream()]
        await model.aclose()
        bodies = [request.json for request in server.requests]
    assert bodies[1]["messages"][-1]["role"] == "assistant"  # the prefill, refused
    assert bodies[2]["messages"][-2:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Once upon"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": CONTINUE_PROMPT, "cache_control": {"type": "ephemeral"}}
            ],
        },
    ]
    assert E.RUN_FAILED not in [event.type for event in events]
    assert texts(await client.messages()) == [
        "Tell a story",
        "Once upon",
        CONTINUE_PROMPT,
        "Once upon a time.",
    ]


def chat_chunks(*pieces: str) -> list[tuple[str | None, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "c", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [choice]}

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"content": piece})) for piece in pieces]
    events += [(None, chunk({}, "stop")), (None, "[DONE]")]
    return events


async def test_openai_chat_resume_adds_a_continuation_turn() -> None:
    dropped = Reply.sse(chat_chunks("Once ", "upon", " a time"), drop_after=3)
    rest = Reply.sse(chat_chunks(" a time, the end."))
    with ReplayServer([dropped, rest]) as server:
        model = Model("openai", "gpt-x", base_url=server.url, api_key="test", max_retries=0)
        assert not continues_by_prefill(model)
        client = AgentClient(await create_agent(model), session_id="s")
        first = await client.run("Tell a story")
        assert first.stop is not None
        assert first.stop.reason is StopReason.INTERRUPTED
        final = await client.resume()
        await model.aclose()
        sent = server.requests[1].json["messages"]
    assert sent[-1] == {"role": "user", "content": CONTINUE_PROMPT}
    assert sent[-2]["role"] == "assistant"
    assert sent[-2]["content"] == "Once upon"
    assert final.text == " a time, the end."
    assert texts(await client.messages()) == [
        "Tell a story",
        "Once upon",
        CONTINUE_PROMPT,
        final.text,
    ]


# ---------------------------------------------------------------- a killed process

CHILD = """
import sys
import anyio
sys.path.insert(0, {src!r})
from zett_agent import AgentClient, Model, create_agent

def note(text: str) -> str:
    \"\"\"Take a note.

    Args:
        text: what to note.
    \"\"\"
    return "noted: " + text

async def main(url: str, path: str) -> None:
    model = Model("anthropic", "claude-x", base_url=url, api_key="test", max_retries=0)
    client = AgentClient(await create_agent(model, tools=[note]), path, session_id="k")
    await client.run("Take a note, then tell me a story")

anyio.run(main, sys.argv[1], sys.argv[2])
"""


def count_rows(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


@pytest.mark.slow
def test_killed_process_keeps_every_complete_message_and_resumes(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD.format(src=str(SRC))))
    path = tmp_path / "sessions.sqlite3"
    stalled = Reply.sse(anthropic_events("Once upon ", "a time"), stall_after=3, stall_seconds=20)
    with ReplayServer([Reply.sse(anthropic_tool_use("note", {"text": "milk"})), stalled]) as server:
        child = subprocess.Popen(
            [sys.executable, str(script), server.url, str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 30
            while not (len(server.requests) >= 2 and count_rows(path) >= 3):
                assert child.poll() is None, child.communicate()[1].decode()
                assert time.monotonic() < deadline, "the child did not reach the stalled answer"
                time.sleep(0.05)
            time.sleep(0.2)  # the first text of the stalled answer is in flight
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=10)
        finally:
            if child.poll() is None:  # pragma: no cover
                child.kill()
                child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL

        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

        async def reopen_and_resume() -> None:
            async with SQLiteSessionStore(path) as store:
                history = await store.load("k")
                assert [type(m).__name__ for m in history] == [
                    "UserMessage",
                    "AssistantMessage",
                    "ToolResultMessage",
                ]
                assert history[2] == ToolResultMessage("toolu_1", "note", "noted: milk")
                server.add(Reply.sse(anthropic_events("A story.")))
                model = Model("anthropic", "claude-x", base_url=server.url, api_key="test")
                client = AgentClient(await create_agent(model), store, session_id="k")
                final = await client.resume()
                await model.aclose()
                assert final.text == "A story."
                assert final.stop is None
                assert len(await store.load("k")) == 4
                assert await store.integrity_check() == "ok"

        anyio.run(reopen_and_resume)
        resent = server.requests[2].json["messages"]
        assert resent[-1]["content"][0]["type"] == "tool_result"
