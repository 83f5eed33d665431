"""Every request the MCP client makes, failed by the server in every way it can
fail: before the run (``initialize``, ``tools/list``) it is the documented
``ConfigError`` naming the server (``MCPAuthorizationError`` for 401/403), never
an ``ExceptionGroup``; during the run (``tools/call``) it is the call's error
result and the run goes on. A hand-written server (``tests/mcp_servers/
faulty_server.py``) over stdio and streamable HTTP; ``zett run --mcp`` too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_helpers import FAULTY, http_server, need_mcp, sent_tool_results, text_reply, tool_reply
from zett_agent import AgentEventType, ConfigError, MCPAuthorizationError, Model, create_agent
from zett_agent.testing import ReplayServer

pytestmark = pytest.mark.mcp

ANSWERS = ["error", "garbage", "invalid", "hangup", "silent"]
HTTP_ONLY = ["http500", "http401", "http403"]
CASES = [("stdio", how) for how in ANSWERS] + [("http", how) for how in ANSWERS + HTTP_ONLY]


async def enter(transport: str, method: str, how: str, tmp_path: Path) -> BaseException:
    """What entering MCPTools raised for a server failing ``method`` by ``how``."""
    from zett_agent.mcp import MCPServer, MCPTools

    args = [str(FAULTY), method, how]
    env = {"FAULTY_LOG": str(tmp_path / "requests.jsonl")}
    options: dict[str, Any] = {"connect_timeout": 3, "timeout": 3}
    with anyio.fail_after(30):
        if transport == "stdio":
            server = MCPServer.stdio(sys.executable, *args, env=env, **options)
            with pytest.raises(Exception) as raised:  # noqa: PT011 - the type is the test
                async with MCPTools([server]):
                    pass
        else:
            with http_server([*args, "--http", "{port}"], env=env) as (url, _):
                server = MCPServer.http(url, **options)
                with pytest.raises(Exception) as raised:  # noqa: PT011
                    async with MCPTools([server]):
                        pass
    assert server.label in str(raised.value)
    return raised.value


@pytest.mark.parametrize(("transport", "how"), CASES)
@pytest.mark.parametrize("method", ["initialize", "tools/list"])
async def test_a_failing_request_before_the_run_is_a_config_error_naming_the_server(
    transport: str, how: str, method: str, tmp_path: Path
) -> None:
    need_mcp()
    error = await enter(transport, method, how, tmp_path)
    assert not isinstance(error, BaseExceptionGroup)
    if how in ("http401", "http403"):
        assert type(error) is MCPAuthorizationError
        assert error.status == int(how[-3:]) and "needs authorization" in str(error)
        assert error.scope == ("files:write" if how == "http403" else None)
    else:
        assert type(error) is ConfigError
        doing = "could not be started" if method == "initialize" else "listing its tools failed"
        assert doing in str(error)


@pytest.mark.parametrize(("transport", "how"), CASES)
async def test_a_failing_tool_call_is_an_error_result_and_the_run_goes_on(
    transport: str, how: str, tmp_path: Path
) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    args = [str(FAULTY), "tools/call", how]
    replies = [tool_reply(("c1", "echo", '{"text": "hi"}')), text_reply("carried on")]

    async def run(server: Any) -> tuple[list[Any], ReplayServer]:
        async with MCPTools([server]) as tools:
            with ReplayServer(replies) as replay:
                agent = await create_agent(
                    Model("anthropic", "m", base_url=replay.url, api_key="k")
                )
                tools.attach(agent)
                events = [e async for e in agent.stream("go")]
                await agent.aclose()
        return events, replay

    with anyio.fail_after(30):
        if transport == "stdio":
            events, replay = await run(MCPServer.stdio(sys.executable, *args, timeout=3))
        else:
            with http_server([*args, "--http", "{port}"]) as (url, _):
                events, replay = await run(MCPServer.http(url, timeout=3))
    [result] = sent_tool_results(replay.requests[1].json)
    assert result["is_error"] is True and "echo" in result["content"]
    if how in ("http401", "http403"):
        assert "needs authorization" in result["content"]
    if how == "silent":
        assert "timeout of 3 seconds" in result["content"]
    assert events[-1].type is AgentEventType.RUN_COMPLETED
    assert events[-1].message.text == "carried on"


async def test_the_client_identifies_itself_as_zett_agent(tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    log = tmp_path / "requests.jsonl"
    server = MCPServer.stdio(
        sys.executable, str(FAULTY), "none", "error", env={"FAULTY_LOG": str(log)}
    )
    async with MCPTools([server]):
        pass
    with http_server(
        [str(FAULTY), "none", "error", "--http", "{port}"], env={"FAULTY_LOG": str(log)}
    ) as (url, _):
        async with MCPTools([MCPServer.http(url)]):
            pass
    greetings = [json.loads(line) for line in log.read_text().splitlines()]
    infos = [g["clientInfo"] for g in greetings if g["method"] == "initialize"]
    assert infos == [{"name": "zett-agent", "version": version("zett-agent")}] * 2


@pytest.mark.parametrize("method", ["initialize", "tools/list"])
def test_zett_run_names_the_server_and_exits_1(method: str, tmp_path: Path) -> None:
    need_mcp()
    command = f"{sys.executable} {FAULTY} {method} error"
    with ReplayServer([text_reply("never asked")]) as replay:
        argv = ["run", "--model", "anthropic:m", "--mcp", command, "hi"]
        env = {"ANTHROPIC_API_KEY": "k", "ZETT_ANTHROPIC_BASE_URL": replay.url, "COLUMNS": "200"}
        done = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", *argv],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 1, done.stderr
    assert str(FAULTY) in done.stderr and "ExceptionGroup" not in done.stderr
    assert "internal error" not in done.stderr
