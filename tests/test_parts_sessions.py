"""A session with an image survives reload and ``resume()``, on every protocol, streamed
and not: the answer is cut (a dropped stream, or the output limit), a fresh store
reopens the SQLite file, and the resumed request and a later turn carry the image's
bytes as they were sent first. A durable run checkpoints a tool's image by hash."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from faults.wire import WIRES, Wire, whole_text
from sdk_shapes import CHECKS
from zett_agent import (
    Agent,
    AgentClient,
    ImagePart,
    Model,
    SQLiteSessionStore,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from zett_agent._parts import BLOB_THRESHOLD, MediaPart
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.timeout(60)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * (BLOB_THRESHOLD // 256 + 4)  # kept as a blob
PNG64 = base64.b64encode(PNG).decode()


def _output_message(text: str) -> dict[str, Any]:
    """A Responses output message as the API sends it (replayed in the next request)."""
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


CUT_BODIES: dict[str, Any] = {  # a whole answer stopped by the output limit
    "anthropic": {
        "type": "message",
        "model": "m",
        "content": [{"type": "text", "text": "A red"}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 300, "output_tokens": 2},
    },
    "openai-chat": {
        "choices": [
            {"message": {"role": "assistant", "content": "A red"}, "finish_reason": "length"}
        ]
    },
    "openai-responses": {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [_output_message("A red")],
    },
    "gemini": {
        "candidates": [{"content": {"parts": [{"text": "A red"}]}, "finishReason": "MAX_TOKENS"}]
    },
    "ollama": {
        "message": {"role": "assistant", "content": "A red"},
        "done": True,
        "done_reason": "length",
    },
}
WHOLE_TEXT: dict[str, Any] = {
    **whole_text(" dot."),
    # the Responses message as the API sends it (replayed in the next request)
    "openai-responses": {"status": "completed", "output": [_output_message(" dot.")]},
}


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture(params=[True, False], ids=["streamed", "whole"])
def streamed(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def cut_reply(wire: Wire, streamed: bool) -> Reply:
    if not streamed:
        return Reply.json(CUT_BODIES[wire.name])
    chunks = [*wire.head(), *wire.text("A red")]
    return wire.reply(chunks, drop_after=len(chunks))  # the connection drops mid-answer


def text_reply(wire: Wire, streamed: bool) -> Reply:
    if streamed:
        return wire.reply(wire.answer([" dot."]))
    return Reply.json(WHOLE_TEXT[wire.name])


def image_sent(body: dict[str, Any]) -> int:
    """How many times the image's bytes are in a request body."""
    return str(body).count(PNG64)


async def test_a_session_with_an_image_survives_reload_and_resume(
    wire: Wire, streamed: bool, tmp_path: Path
) -> None:
    path = tmp_path / "sessions.sqlite3"
    photo = ImagePart(media_type="image/png", data=PNG, name="dot.png")
    question = UserMessage("What is in this picture?", (photo,))
    replies = [cut_reply(wire, streamed), text_reply(wire, streamed), text_reply(wire, streamed)]
    with ReplayServer(replies) as server:

        def agent() -> Agent:
            model = Model(wire.vendor, "m", base_url=server.url, api_key="k", stream=streamed)
            return Agent(model)

        first = agent()
        async with AgentClient(first, SQLiteSessionStore(path), session_id="pic") as client:
            cut = await client.run(question)
            assert cut.stop is not None
            assert cut.stop.reason in (StopReason.INTERRUPTED, StopReason.MAX_OUTPUT)
            await client.store.aclose()
        await first.aclose()

        # another process, in effect: a fresh store on the same file, a fresh agent
        store = SQLiteSessionStore(path)
        stored = await store.load("pic")
        assert stored[0] == question  # equal by hash and size
        part = stored[0].parts[0] if isinstance(stored[0], UserMessage) else None
        assert isinstance(part, MediaPart) and part.needs_loading  # loaded lazily
        second = agent()
        async with AgentClient(second, store, session_id="pic") as client:
            resumed = await client.resume()
            assert resumed.stop is None and resumed.text.endswith("dot.")
            later = await client.run("And its colour?")
            assert later.stop is None
        await store.aclose()
        await second.aclose()
    assert server.unexpected == []
    bodies = [request.json for request in server.requests]
    assert [image_sent(body) for body in bodies] == [1, 1, 1]  # every request has it once
    for body in bodies:
        CHECKS[wire.name](body)


async def test_a_durable_run_checkpoints_a_tools_image_by_hash(tmp_path: Path) -> None:
    pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")
    from dbos import DBOS

    from zett_agent.durable import DurableAgent, DurableConfig, launch, shutdown
    from zett_agent.testing import ScriptedModel, reply

    def draw() -> list[Any]:
        """Draw the chart."""
        return ["the chart", ImagePart(media_type="image/png", data=PNG)]

    model = ScriptedModel(reply("Drawing.", [ToolCall("c1", "draw", "{}")]), reply("Done."))
    await launch(DurableConfig(f"sqlite:///{tmp_path / 'dbos.sqlite3'}", executor_id="test"))
    try:
        agent = Agent(model, tools=[draw])
        async with DurableAgent(agent, tmp_path / "s.sqlite3", name="parts") as durable:
            assert (await durable.run("chart?", session_id="s", run_id="r-parts")).text == "Done."
            steps = await DBOS.list_workflow_steps_async("r-parts")
            output = next(s for s in steps if s["function_name"] == "parts.tool.draw")["output"]
            digest = ImagePart(media_type="image/png", data=PNG).sha256
            assert f'"blob":"{digest}"' in output and PNG64[:100] not in output  # by hash
            assert await durable.store.get_blob("s", digest or "") == PNG
            result = (await durable.store.load("s"))[2]
            assert isinstance(result, ToolResultMessage)
            assert result.parts == (ImagePart(media_type="image/png", data=PNG),)
            sent = model.requests[1].messages[-1]  # the model got the result with its part
            assert isinstance(sent, ToolResultMessage) and sent.parts == result.parts
    finally:
        shutdown()


async def test_a_durable_runs_image_prompt_is_a_workflow_input_by_hash(tmp_path: Path) -> None:
    pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")
    from dbos import DBOS

    from zett_agent.durable import DurableAgent, DurableConfig, launch, shutdown
    from zett_agent.testing import ScriptedModel, reply

    photo = ImagePart(media_type="image/png", data=PNG, name="dot.png")
    question = UserMessage("What is in this picture?", (photo,))
    model = ScriptedModel(reply("A dot."))
    await launch(DurableConfig(f"sqlite:///{tmp_path / 'dbos.sqlite3'}", executor_id="test"))
    try:
        async with DurableAgent(Agent(model), tmp_path / "s.sqlite3", name="ask") as durable:
            final = await durable.run(question, session_id="s", run_id="r-ask")
            assert final.text == "A dot."
            assert (await durable.store.load("s"))[0] == question
            assert model.requests[0].messages[0] == question
            [status] = await DBOS.list_workflows_async(workflow_ids=["r-ask"])
            given = repr(status.input)
            assert photo.sha256 in given and PNG64[:100] not in given  # by hash
            assert await durable.store.get_blob("s", photo.sha256 or "") == PNG
    finally:
        shutdown()
