"""Every transport failure of an MCP server, at any point, is that server's calls'
error result: the server is marked unavailable (a streamable HTTP one is connected
again on its next call), the run goes on, and nothing escapes ``async with
MCPTools``. Real servers (stdio and streamable HTTP) killed at chosen moments, a
replayed model over a real socket."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_helpers import (
    FAULTY,
    SERVERS,
    counting_server,
    free_port,
    http_server,
    need_mcp,
    sent_tool_results,
    text_reply,
    tool_reply,
)
from zett_agent import AgentEventType, Model, ToolCall, create_agent
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.mcp

CASES = Path(__file__).parent / "cases" / "mcp"
DIES = SERVERS / "http_server_dies_mid_call.py"


def model_for(replay: ReplayServer) -> Model:
    return Model("anthropic", "m", base_url=replay.url, api_key="test-key")


async def run(tools: Any, replies: list[Reply]) -> tuple[list[Any], ReplayServer]:
    with ReplayServer(replies) as replay:
        agent = await create_agent(model_for(replay))
        tools.attach(agent)
        events = [event async for event in agent.stream("go")]
        await agent.aclose()
    return events, replay


@pytest.mark.realclock  # a real process and socket: a wall-clock bound, wide margin
async def test_the_case_an_http_server_that_dies_mid_call_never_ends_the_run(
    tmp_path: Path,
) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    replies = [
        Reply.file(CASES / "anthropic_call_greet.sse"),
        Reply.file(CASES / "anthropic_call_ping.sse"),
        text_reply("the server is gone"),
    ]
    with http_server([str(DIES), "{port}"], log=tmp_path / "server.log") as (url, _):
        started = time.monotonic()
        with anyio.fail_after(300):
            async with MCPTools([MCPServer.http(url, timeout=180)]) as tools:
                events, replay = await run(tools, replies)
        took = time.monotonic() - started
    greet = sent_tool_results(replay.requests[1].json)[0]
    ping = sent_tool_results(replay.requests[2].json)[0]
    assert greet["is_error"] is True and url in greet["content"]
    assert "failed during the call of its tool 'greet'" in greet["content"]
    assert ping["is_error"] is True and "is unavailable" in ping["content"]
    assert "connecting again failed" in ping["content"]
    assert events[-1].type is AgentEventType.RUN_COMPLETED
    assert events[-1].message.text == "the server is gone"
    assert took < 90  # prompt: neither call waited for its 180 s timeout


async def test_an_http_server_that_comes_back_is_connected_again(tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    port = free_port()
    ping = ToolCall("p", "ping", "{}")
    with http_server([str(DIES), "{port}"], port=port, log=tmp_path / "a.log"):
        async with MCPTools([MCPServer.http(f"http://127.0.0.1:{port}/mcp")]) as tools:
            tool = tools.tools["ping"]
            assert (await tool.call(ping)).content == "pong"
            greet = await tools.tools["greet"].call(ToolCall("g", "greet", "{}"))
            assert greet.is_error
            down = await tool.call(ping)  # nothing listens: one attempt, refused
            assert down.is_error and "connecting again failed" in down.content
            soon = await tool.call(ping)  # within the backoff (1 s): not tried
            assert soon.is_error and "next reconnection attempt" in soon.content
            with http_server([str(DIES), "{port}"], port=port, log=tmp_path / "b.log"):
                await anyio.sleep(1.1)
                back = await tool.call(ping)
                assert not back.is_error and back.content == "pong"
                assert tools.connections[0].failure is None
                assert tools.connections[0].changed  # its tools are listed again
                assert await tools.refresh()
                assert set(tools.tools) == {"greet", "ping"}


async def test_a_stdio_server_killed_between_calls_gives_error_results_and_leaving_raises_nothing(
    tmp_path: Path,
) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    server, log = counting_server(tmp_path)
    async with MCPTools([server]) as tools:
        add = tools.tools["add"]
        assert (await add.call(ToolCall("a", "add", '{"a": 1, "b": 2}'))).content == "3"
        os.kill(_stdio_pid(log), signal.SIGKILL)
        await anyio.sleep(0.3)
        results = [await add.call(ToolCall(f"a{i}", "add", '{"a": 1, "b": 2}')) for i in range(2)]
        events, replay = await run(
            tools, [tool_reply(("c1", "add", '{"a": 1, "b": 1}')), text_reply("ok")]
        )
    assert all(r.is_error for r in results)
    assert "failed during the call of its tool 'add'" in results[0].content
    assert "is unavailable" in results[1].content and "was not sent" in results[1].content
    assert sent_tool_results(replay.requests[1].json)[0]["is_error"] is True
    assert events[-1].type is AgentEventType.RUN_COMPLETED


def _stdio_pid(log: Path) -> int:
    """The counting server's pid (its first logged call was made by it)."""
    import subprocess

    out = subprocess.run(
        ["pgrep", "-f", "counting_server.py", "-P", str(os.getpid())],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 1, out
    return pids[0]


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("how", ["error", "garbage", "invalid", "hangup"])
async def test_a_failing_refresh_keeps_the_tools_and_the_run_goes_on(
    tmp_path: Path, transport: str, how: str
) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    args = [str(FAULTY), "tools/list", how, "--nth", "2"]
    replies = [
        tool_reply(("c1", "change", "{}")),  # sends list_changed: the refresh fails
        tool_reply(("c2", "echo", '{"text": "still here"}')),
        text_reply("done"),
    ]
    with anyio.fail_after(30):
        if transport == "stdio":
            server = MCPServer.stdio(sys.executable, *args, timeout=5)
            async with MCPTools([server]) as tools:
                events, replay = await run(tools, replies)
        else:
            with http_server([*args, "--http", "{port}"]) as (url, _):
                async with MCPTools([MCPServer.http(url, timeout=5)]) as tools:
                    events, replay = await run(tools, replies)
    assert {"echo", "change"} <= {t["name"] for t in replay.requests[1].json["tools"]}
    [echo] = sent_tool_results(replay.requests[2].json)
    if how == "hangup" and transport == "stdio":  # the process is gone: the call says so
        assert echo["is_error"] is True and "is unavailable" in echo["content"]
    else:  # an HTTP hangup closes one connection: the next request is answered
        assert echo["content"] == "still here"
    assert events[-1].type is AgentEventType.RUN_COMPLETED
