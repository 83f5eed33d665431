"""The sync API: ``run_sync``, ``stream_sync``, ``create_agent_sync`` and the
``AgentClient`` ones run on one private event-loop thread, with no loop running
and inside a running one, give what the async API gives, keep a model's pool on
one loop, and cancel cleanly on Ctrl-C (a real SIGINT to a child process)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from faults.wire import WIRES
from helpers import default_sigint
from zett_agent import (
    AgentClient,
    AgentEventType,
    Model,
    OutputValidationError,
    StopReason,
    ToolCall,
    create_agent,
    create_agent_sync,
)
from zett_agent._sync import loop_thread
from zett_agent.testing import ReplayServer, ScriptedModel, reply

CHAT = WIRES["openai-chat"]


class City(BaseModel):
    name: str
    population: int


OK = '{"name": "Paris", "population": 2102650}'


def answers(*texts: str) -> list[Any]:
    return [CHAT.reply(CHAT.answer([text])) for text in texts]


def test_run_sync_with_no_loop_running() -> None:
    with ReplayServer(answers("Hello", "Again")) as server:
        agent = create_agent_sync(Model("openai", "m", base_url=server.url, api_key="k"))
        with agent:
            first = agent.run_sync("hi")
            second = agent.run_sync("and again")
    assert (first.text, second.text) == ("Hello", "Again")
    assert first.stop is None
    assert len(server.requests) == 2
    # both calls ran on the one private loop, not in this thread
    assert loop_thread() is not None and threading.current_thread() is threading.main_thread()


def test_stream_sync_gives_the_events_of_stream() -> None:
    async def events_async() -> list[AgentEventType]:
        agent = await create_agent(ScriptedModel(reply("Hello there")))
        return [e.type async for e in agent.stream("hi")]

    expected = asyncio.run(events_async())
    agent = create_agent_sync(ScriptedModel(reply("Hello there")))
    got = [e.type for e in agent.stream_sync("hi")]
    assert got == expected
    assert got[0] is AgentEventType.RUN_STARTED and got[-1] is AgentEventType.RUN_COMPLETED


def test_the_same_typed_results_and_errors_as_async() -> None:
    agent = create_agent_sync(ScriptedModel(reply(OK)), output_type=City)
    message = agent.run_sync("hi")
    assert message.output == City(name="Paris", population=2102650)
    failing = create_agent_sync(ScriptedModel(reply("no"), reply("no")), output_type=City)
    with pytest.raises(OutputValidationError):
        failing.run_sync("hi")
    cut = create_agent_sync(ScriptedModel(reply('{"na', stop=StopReason.MAX_OUTPUT)))
    assert cut.run_sync("hi", output_type=City).stop.reason is StopReason.MAX_OUTPUT  # type: ignore[union-attr]


async def test_run_sync_inside_a_running_loop_does_not_deadlock() -> None:
    # a notebook cell: this coroutine runs on a loop, and calls the sync API
    with ReplayServer(answers("One", "Two")) as server:
        agent = await create_agent(Model("openai", "m", base_url=server.url, api_key="k"))
        here = asyncio.get_running_loop()
        assert agent.run_sync("hi").text == "One"
        assert [e.type for e in agent.stream_sync("again")][-1] is AgentEventType.RUN_COMPLETED
        agent.close_sync()
    assert asyncio.get_running_loop() is here
    assert len(server.requests) == 2


def test_an_agent_made_under_asyncio_run_is_used_by_run_sync() -> None:
    with ReplayServer(answers("Made", "Used", "Again")) as server:
        model = Model("openai", "m", base_url=server.url, api_key="k")
        agent = asyncio.run(create_agent(model))
        # used once on a loop that then closes: its pooled connection is bound to it
        assert asyncio.run(agent.run("first")).text == "Made"
        assert agent.run_sync("second").text == "Used"
        assert agent.run_sync("third").text == "Again"
        agent.close_sync()


def test_agent_client_run_sync_and_stream_sync(tmp_path: Path) -> None:
    agent = create_agent_sync(ScriptedModel(reply("One"), reply("Two")))
    with AgentClient(agent, tmp_path / "s.sqlite3", session_id="s") as client:
        assert client.run_sync("hi").text == "One"
        kinds = [e.type for e in client.stream_sync("again")]
        assert kinds[-1] is AgentEventType.RUN_COMPLETED
        stored = client.messages_sync("s")
    assert [getattr(m, "text", getattr(m, "content", None)) for m in stored] == [
        "hi",
        "One",
        "again",
        "Two",
    ]


@pytest.mark.realclock  # a real process and socket: a wall-clock bound, wide margin
def test_leaving_stream_sync_early_closes_the_run(tmp_path: Path) -> None:
    chunks = [*CHAT.head(), *CHAT.text("Hel"), *CHAT.text("lo")]
    slow = CHAT.reply(chunks, stall_after=len(chunks), stall_seconds=300)
    with ReplayServer([slow]) as server:
        agent = create_agent_sync(Model("openai", "m", base_url=server.url, api_key="k"))
        client = AgentClient(agent, tmp_path / "s.sqlite3", session_id="s")
        started = time.monotonic()
        for event in client.stream_sync("hi"):
            if event.type is AgentEventType.TEXT_DELTA and event.text == "lo":
                break
        stored = client.messages_sync("s")
        client.close_sync()
        agent.close_sync()
    assert time.monotonic() - started < 60  # not the server's 300 s stall (load-proof margin)
    last = stored[-1]
    assert last.stop is not None and last.stop.reason is StopReason.INTERRUPTED  # type: ignore[union-attr]
    assert last.stop.detail["cancelled"] is True  # type: ignore[union-attr]
    assert last.text == "Hello"  # type: ignore[union-attr]


def test_a_sync_call_on_the_sync_loop_itself_is_refused() -> None:
    async def nested() -> str:
        inner = create_agent_sync(ScriptedModel(reply("x")))
        return inner.run_sync("hi").text

    agent = create_agent_sync(
        ScriptedModel(reply(tool_calls=[ToolCall("c1", "nested", "{}")]), reply("done")),
        tools=[nested],
    )
    message = agent.run_sync("hi")
    results = [m for m in agent.messages if getattr(m, "tool_call_id", None) == "c1"]
    assert "RuntimeError" in results[0].content and "would wait on itself" in results[0].content  # type: ignore[union-attr]
    assert message.text == "done"


CHILD = r"""
import json, sys
from zett_agent import AgentClient, AgentEventDispatcher, Model, create_agent_sync
from zett_agent.testing import ReplayServer
sys.path.insert(0, sys.argv[3])
from faults.wire import WIRES

chat = WIRES["openai-chat"]
chunks = [*chat.head(), *chat.text("Hello"), *chat.text(" world")]
# the server stalls after " world" (before the next chunk), so Ctrl-C meets a stream
# that is waiting for bytes, as a user's does
stalled = chat.reply([*chunks, *chat.text("!")], stall_after=len(chunks), stall_seconds=300)

class Tell(AgentEventDispatcher):
    def on_text_delta_event(self, event):
        if event.text == " world":
            print("streaming", flush=True)

with ReplayServer([stalled]) as server:
    agent = create_agent_sync(Model("openai", "m", base_url=server.url, api_key="k"))
    client = AgentClient(agent, sys.argv[1], session_id="s")
    try:
        if sys.argv[2] == "stream":
            for event in client.stream_sync("hi"):
                if event.type == "text_delta" and event.text == " world":
                    print("streaming", flush=True)
        else:
            client.run_sync("hi", dispatcher=Tell())
        print(json.dumps({"finished": True}), flush=True)
    except KeyboardInterrupt:
        last = client.messages_sync("s")[-1]
        stop = last.stop
        found = {"reason": stop.reason, "text": last.text}
        found["cancelled"] = stop.detail.get("cancelled")
        print(json.dumps(found), flush=True)
"""


@pytest.mark.realclock  # a real process and socket: a wall-clock bound, wide margin
@pytest.mark.parametrize("how", ["run", "stream"])
def test_ctrl_c_cancels_a_sync_run_cleanly(tmp_path: Path, how: str) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    tests = str(Path(__file__).parent)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "s.sqlite3"), how, tests],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint,  # the SIGINT below works even from a background job
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "streaming", child.stderr.read() if child.stderr else ""
        started = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
        elapsed = time.monotonic() - started
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {"reason": "interrupted", "cancelled": True, "text": "Hello world"}
    assert elapsed < 60  # not the server's 300 s stall (load-proof margin)
