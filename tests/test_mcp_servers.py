"""MCP servers nobody here wrote, driven by a replayed model: from npm
``@modelcontextprotocol/server-everything`` (stdio and streamable HTTP) and
``@modelcontextprotocol/server-filesystem`` (on a temp dir), from PyPI
``mcp-server-time``. Installed by .ci/run (npm ci in tests/mcp_servers, pip);
nothing downloads here: a missing server skips (fails under ZETT_MCP_REQUIRED=1)."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_helpers import need, need_mcp, need_node_server, sent_tool_results, text_reply, tool_reply
from zett_agent import Model, StopReason, create_agent
from zett_agent.testing import ReplayServer

pytestmark = pytest.mark.mcp


async def run_tools(servers: list[Any], replies: list[Any]) -> tuple[Any, ReplayServer]:
    """Run a replayed model with the servers' tools; the final message and the replay."""
    from zett_agent.mcp import MCPTools

    async with MCPTools(servers) as tools:
        with ReplayServer(replies) as replay:
            agent = await create_agent(
                Model("anthropic", "m", base_url=replay.url, api_key="test-key")
            )
            tools.attach(agent)
            final = await agent.run("go")
            await agent.aclose()
    return final, replay


def quiet(tmp_path: Path, name: str) -> Any:
    return open(tmp_path / f"{name}.log", "w")


async def test_everything_over_stdio_lists_and_calls_tools(tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer

    server = MCPServer.stdio(
        str(need_node_server("mcp-server-everything")), log=quiet(tmp_path, "e")
    )
    replies = [
        tool_reply(
            ("c1", "get-sum", '{"a": 2, "b": 3}'),
            ("c2", "get-tiny-image", "{}"),
            ("c3", "get-structured-content", '{"location": "Chicago"}'),
        ),
        text_reply("done"),
    ]
    final, replay = await run_tools([server], replies)
    names = {t["name"] for t in replay.requests[0].json["tools"]}
    assert {"echo", "get-sum", "get-tiny-image", "get-structured-content"} <= names
    total, image, weather = sent_tool_results(replay.requests[1].json)
    assert total["content"] == "The sum of 2 and 3 is 5."
    text, picture = image["content"]  # the server's PNG reaches Anthropic as an image block
    assert "[image image/png, " in text["text"]
    assert picture["source"]["media_type"] == "image/png"
    assert base64.b64decode(picture["source"]["data"]).startswith(b"\x89PNG")
    assert '"conditions":"Light rain / drizzle"' in weather["content"]
    assert final.text == "done"


@pytest.fixture
def everything_http(tmp_path: Path) -> Iterator[str]:
    """server-everything's streamable HTTP transport on a free local port."""
    launcher = need_node_server("mcp-server-everything")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [str(launcher), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=quiet(tmp_path, "http"),
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("server-everything (streamableHttp) did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def test_everything_over_streamable_http(everything_http: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer

    server = MCPServer.http(everything_http, headers={"X-Test": "1"}, prefix="ev")
    replies = [tool_reply(("c1", "ev_echo", '{"message": "over http"}')), text_reply("ok")]
    _, replay = await run_tools([server], replies)
    names = {t["name"] for t in replay.requests[0].json["tools"]}
    assert "ev_echo" in names and "ev_get-sum" in names
    [echo] = sent_tool_results(replay.requests[1].json)
    assert echo["content"] == "Echo: over http" and not echo.get("is_error")


async def test_filesystem_reads_in_its_folder_and_refuses_outside(tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer

    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "a.txt").write_text("hello file")
    launcher = need_node_server("mcp-server-filesystem")
    server = MCPServer.stdio(str(launcher), str(folder), log=quiet(tmp_path, "fs"))
    outside = str(tmp_path / "secret.txt")
    replies = [
        tool_reply(
            ("c1", "read_text_file", f'{{"path": "{folder / "a.txt"}"}}'),
            ("c2", "read_text_file", f'{{"path": "{outside}"}}'),
        ),
        text_reply("read"),
    ]
    _, replay = await run_tools([server], replies)
    inside, denied = sent_tool_results(replay.requests[1].json)
    assert inside["content"] == "hello file" and not inside.get("is_error")
    assert denied["is_error"] is True and "outside allowed directories" in denied["content"]


async def test_filesystem_never_receives_a_refused_write(tmp_path: Path) -> None:
    """The server's own effect is the proof: the file a refused call would write is absent."""
    need_mcp()
    from zett_agent.mcp import MCPServer

    folder = tmp_path / "files"
    folder.mkdir()
    launcher = need_node_server("mcp-server-filesystem")
    server = MCPServer.stdio(str(launcher), str(folder), log=quiet(tmp_path, "fs"))
    target = folder / "written.txt"
    refused = tool_reply(
        ("c1", "write_file", f'{{"path": "{target}", "content": "x"}}'),
        stop_reason="refusal",
        stop_details={"type": "refusal", "category": "cyber", "explanation": "No."},
    )
    final, replay = await run_tools([server], [refused])
    assert final.stop is not None and final.stop.reason is StopReason.REFUSAL
    assert not target.exists() and len(replay.requests) == 1


async def test_mcp_server_time_from_pypi(tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer

    try:
        import mcp_server_time  # noqa: F401
    except ImportError:
        need(False, "mcp-server-time is not installed (pip install mcp-server-time==2026.10.19)")
    server = MCPServer.stdio(sys.executable, "-m", "mcp_server_time", log=quiet(tmp_path, "t"))
    replies = [
        tool_reply(
            ("c1", "get_current_time", '{"timezone": "UTC"}'),
            ("c2", "get_current_time", '{"timezone": "Not/AZone"}'),
        ),
        text_reply("it is now"),
    ]
    _, replay = await run_tools([server], replies)
    now, bad = sent_tool_results(replay.requests[1].json)
    assert '"timezone": "UTC"' in now["content"] and not now.get("is_error")
    assert bad["is_error"] is True
