"""Resources and prompts of MCP servers, in both protocol eras of ``mcp`` 2.3.0:
listed, read, added to a conversation as a user message, subscribed to (a 2025
``resources/subscribe``, a 2026-07-28 ``subscriptions/listen`` stream); prompts
as zett messages that a run sends. A real server over stdio
(``tests/mcp_servers/asking_server.py``); a failing request is a ConfigError
naming the server (``tests/mcp_servers/faulty_server.py``)."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

from mcp_helpers import FAULTY, SERVERS, need_mcp
from zett_agent import AssistantMessage, ConfigError, ToolCall, UserMessage, create_agent
from zett_agent.testing import ScriptedModel, reply

pytestmark = [pytest.mark.mcp, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ERAS = ["legacy", "auto"]


def asking(mode: str) -> Any:
    from zett_agent.mcp import MCPServer

    return MCPServer.stdio(
        sys.executable, "-W", "ignore", str(SERVERS / "asking_server.py"), mode=mode
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_resources_are_listed_read_and_become_user_messages(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async with MCPTools([asking(mode)]) as tools:
        listed = await tools.list_resources()
        text = await tools.resource_message("note://greeting")
        blob = await tools.resource_message("blob://dot")
        read = await tools.read_resource("note://greeting", server=0)
        model = ScriptedModel(reply("seen"))
        agent = await create_agent(model)
        tools.attach(agent)
        await agent.run("what does it say?", history=[text])
        await agent.aclose()
    assert [(r.uri, r.name, r.mime_type) for r in listed] == [
        ("note://greeting", "greeting", "text/plain"),
        ("blob://dot", "dot", "image/png"),
    ]
    assert text == UserMessage("[resource note://greeting text/plain]\nhello from a resource")
    assert blob.content == "[resource blob://dot image/png, 8 bytes]"
    [picture] = blob.parts  # an image blob is sent as an image part too
    assert (picture.kind, picture.media_type, picture.data) == (
        "image",
        "image/png",
        b"\x89PNG\r\n\x1a\n",
    )
    assert read.contents[0].text == "hello from a resource"  # type: ignore[union-attr]
    sent = model.requests[0].messages
    assert text in sent  # the resource reached the model as content


@pytest.mark.parametrize("mode", ERAS)
async def test_a_subscription_hears_of_each_change(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    changed: list[str] = []

    async def on_update(uri: str) -> None:
        changed.append(uri)

    async with MCPTools([asking(mode)]) as tools:
        await tools.subscribe("note://greeting", on_update)
        touch = tools.tools["touch"]
        for n in range(2):
            await touch.call(ToolCall(f"t{n}", "touch", '{"uri": "note://greeting"}'))
        with anyio.fail_after(10):
            while len(changed) < 2:
                await anyio.sleep(0.05)
    assert changed == ["note://greeting", "note://greeting"]


@pytest.mark.parametrize("mode", ERAS)
async def test_prompts_are_listed_and_become_messages(mode: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async with MCPTools([asking(mode)]) as tools:
        [prompt] = await tools.list_prompts()
        messages = await tools.get_prompt("greet", {"name": "Bo"})
    assert (prompt.name, prompt.description, prompt.arguments) == (
        "greet", "Greet someone.", (("name", "", True),)
    )  # fmt: skip
    assert messages == [UserMessage("Please greet Bo."), AssistantMessage("Hello, Bo!")]


@pytest.mark.parametrize("method", ["resources/list", "prompts/list"])
@pytest.mark.parametrize("how", ["error", "garbage", "invalid", "hangup"])
async def test_a_failing_request_is_a_config_error_naming_the_server(method: str, how: str) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    server = MCPServer.stdio(sys.executable, str(FAULTY), method, how, timeout=3)
    async with MCPTools([server]) as tools:
        call = tools.list_resources if method == "resources/list" else tools.list_prompts
        with anyio.fail_after(20), pytest.raises(ConfigError) as raised:
            await call(server=0)
    assert not isinstance(raised.value, BaseExceptionGroup)
    assert server.label in str(raised.value) and f"{method} failed" in str(raised.value)


async def test_an_unknown_server_or_uri_is_a_config_error() -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async with MCPTools([asking("legacy"), asking("legacy")]) as tools:
        with pytest.raises(ConfigError, match="no MCP server 'nope'"):
            await tools.list_prompts(server="nope")
        with pytest.raises(ConfigError, match="no MCP server lists the resource"):
            await tools.read_resource("note://missing")
