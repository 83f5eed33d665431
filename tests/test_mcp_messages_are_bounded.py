"""An MCP server's messages are bounded (``MCPLimits``) on every transport, checked
before they are parsed: a real server process (tests/mcp_servers/hostile_server.py)
sends a 9 MiB message, 100,000 content blocks, a resource announced as 1 GB, one
over the resource limit and a sampling request over its limit; each call gets an
answer naming the limit, and the server stays usable. The stdio reader is linear
(the SDK's is quadratic): its time is measured by bench/mcp_stdio.py."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mcp_helpers import SERVERS, need_mcp
from zett_agent import AgentEventType, ToolCall, create_agent
from zett_agent.errors import ConfigError
from zett_agent.testing import ScriptedModel, reply

pytestmark = [pytest.mark.mcp, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

HOSTILE = SERVERS / "hostile_server.py"
MiB = 1024 * 1024


def hostile(mode: str = "legacy", **options: Any) -> Any:
    from zett_agent.mcp import MCPServer

    return MCPServer.stdio(sys.executable, "-W", "ignore", str(HOSTILE), mode=mode, **options)


async def results_of(tools: Any, calls: list[ToolCall]) -> dict[str, Any]:
    agent = await create_agent(ScriptedModel(reply(tool_calls=calls), reply("ok")))
    tools.attach(agent)
    events = [event async for event in agent.stream("go")]
    await agent.aclose()
    return {
        e.tool_call.id: e.tool_result
        for e in events
        if e.type is AgentEventType.TOOL_CALL_COMPLETED
    }


async def test_a_message_over_the_limit_is_an_error_result_and_the_server_goes_on() -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async with MCPTools([hostile()]) as tools:
        done = await results_of(
            tools,
            [ToolCall("c1", "big", f'{{"size": {9 * MiB}}}'), ToolCall("c2", "small", "{}")],
        )
    assert done["c1"].is_error
    assert "over the limit of 4194304 (MCPLimits.max_message_bytes)" in done["c1"].content
    assert done["c2"].content == "still here" and not done["c2"].is_error


async def test_a_small_limit_applies_and_the_next_call_is_answered() -> None:
    need_mcp()
    from zett_agent.mcp import MCPLimits, MCPTools

    server = hostile(limits=MCPLimits(max_message_bytes=64 * 1024))
    async with MCPTools([server]) as tools:
        done = await results_of(
            tools,
            [ToolCall("c1", "big", '{"size": 200000}'), ToolCall("c2", "big", '{"size": 1000}')],
        )
    assert "over the limit of 65536 (MCPLimits.max_message_bytes)" in done["c1"].content
    assert done["c2"].content == "x" * 1000


@pytest.mark.slow  # 2 s alone, over 5 s on a loaded machine: the server builds 100k blocks
async def test_a_hundred_thousand_content_blocks_are_refused_before_parsing() -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async with MCPTools([hostile()]) as tools:
        done = await results_of(
            tools,
            [ToolCall("c1", "blocks", '{"count": 100000}'), ToolCall("c2", "small", "{}")],
        )
    assert done["c1"].is_error
    assert "100000 content blocks, over the limit of 1000" in done["c1"].content
    assert "MCPLimits.max_content_blocks" in done["c1"].content
    assert done["c2"].content == "still here"


async def test_content_blocks_over_a_small_limit() -> None:
    need_mcp()
    from zett_agent.mcp import MCPLimits, MCPTools

    server = hostile(limits=MCPLimits(max_content_blocks=10))
    async with MCPTools([server]) as tools:
        done = await results_of(
            tools,
            [ToolCall("c1", "blocks", '{"count": 11}'), ToolCall("c2", "blocks", '{"count": 10}')],
        )
    assert "11 content blocks, over the limit of 10" in done["c1"].content
    assert not done["c2"].is_error


async def test_a_resource_announced_over_the_limit_is_not_read() -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    async with MCPTools([hostile()]) as tools:
        listed = {r.uri: r.size for r in await tools.list_resources()}
        assert listed["huge://announced"] == 10**9
        with pytest.raises(ConfigError, match=r"1000000000 bytes, over the limit of 2097152"):
            await tools.read_resource("huge://announced")  # it holds 4 bytes: never read
        with pytest.raises(ConfigError, match=r"MCPLimits.max_resource_bytes"):
            await tools.read_resource("big://blob")  # no size announced: 2.5 MiB read, refused
        done = await results_of(tools, [ToolCall("c1", "small", "{}")])
    assert done["c1"].content == "still here"


async def test_a_sampling_request_over_its_limit_never_reaches_the_model() -> None:
    need_mcp()
    from zett_agent.mcp import MCPLimits, MCPTools

    sampler = ScriptedModel(reply("summary"))
    server = hostile(sampling=2, limits=MCPLimits(max_sampling_chars=1000))
    async with MCPTools([server], sampling_model=sampler) as tools:
        done = await results_of(
            tools,
            [ToolCall("c1", "sample", '{"size": 5000}'), ToolCall("c2", "sample", '{"size": 10}')],
        )
    assert "5000 characters, over the limit of 1000 (MCPLimits.max_sampling_chars)" in (
        done["c1"].content
    )
    assert done["c2"].content == "sampled: summary"
    assert len(sampler.requests) == 1  # only the small one


async def test_an_8_mib_sampling_prompt_is_refused_by_the_message_limit() -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    sampler = ScriptedModel(reply("summary"))
    async with MCPTools([hostile(sampling=2)], sampling_model=sampler) as tools:
        done = await results_of(
            tools,
            [ToolCall("c1", "sample", f'{{"size": {8 * MiB}}}'), ToolCall("c2", "small", "{}")],
        )
    assert done["c1"].is_error and "max_message_bytes" in done["c1"].content
    assert done["c2"].content == "still here"
    assert sampler.requests == []


@pytest.mark.parametrize("answers", ["sse", "json"])
async def test_over_streamable_http_the_same_limits_hold(answers: str) -> None:
    need_mcp()
    from mcp_helpers import http_server
    from zett_agent.mcp import MCPLimits, MCPServer, MCPTools

    args = ["-W", "ignore", str(HOSTILE), "{port}", *(["json"] if answers == "json" else [])]
    limits = MCPLimits(max_message_bytes=256 * 1024, max_content_blocks=10)
    with http_server(args) as (url, _):
        async with MCPTools([MCPServer.http(url, limits=limits)]) as tools:
            done = await results_of(
                tools,
                [
                    ToolCall("c1", "big", '{"size": 1000000}'),
                    ToolCall("c2", "blocks", '{"count": 11}'),
                    ToolCall("c3", "small", "{}"),
                ],
            )
    assert done["c1"].is_error, done["c1"].content[:300]
    assert "over the limit of 262144 (MCPLimits.max_message_bytes)" in done["c1"].content
    assert "unavailable" not in done["c1"].content  # the session went on
    assert "11 content blocks, over the limit of 10" in done["c2"].content
    assert done["c3"].content == "still here"


async def test_the_stdio_reader_skips_a_long_line_at_any_limit_and_reads_the_next() -> None:
    """Straight on the transport's streams, with a limit smaller than one read."""
    need_mcp()
    from mcp.client.stdio import StdioServerParameters

    from zett_agent.mcp import MCPLimits
    from zett_agent.mcp._stdio import bounded_stdio

    script = "\n".join([
        "import json, sys",
        "for data in ('x' * 200000, 'x' * 1000):  # longer than a read; within one read",
        "    params = {'level': 'info', 'data': data}",
        "    note = {'jsonrpc': '2.0', 'method': 'notifications/message', 'params': params}",
        "    sys.stdout.write(json.dumps(note) + '\\n')",
        "params = {'progressToken': 1, 'progress': 1}",
        "note = {'jsonrpc': '2.0', 'method': 'notifications/progress', 'params': params}",
        "sys.stdout.write(json.dumps(note) + '\\n')",
        "sys.stdout.flush()",
        "sys.stdin.read()",
    ])  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=["-c", script])
    for limit in (120, 150, 900):  # the last line has about 100 bytes, the others more
        with open("/dev/null", "w") as quiet:
            async with bounded_stdio(params, quiet, MCPLimits(max_message_bytes=limit)) as (
                read,
                _,
            ):
                first = await read.receive()
        assert first.message.method == "notifications/progress", limit  # the long one: skipped


async def test_an_over_limit_answer_with_its_id_mid_message_fails_the_one_request() -> None:
    need_mcp()
    import anyio
    import mcp_types
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.message import SessionMessage

    from zett_agent.mcp import MCPLimits
    from zett_agent.mcp._stdio import bounded_stdio

    script = "\n".join([
        "import json, sys",
        "request = json.loads(sys.stdin.readline())",
        "pad = 'p' * 20000",
        "sys.stdout.write('{\"result\": {\"pad\": \"' + pad + '\"}, \"id\": ' + str(request['id'])"
        " + ', \"more\": \"' + pad + '\", \"jsonrpc\": \"2.0\"}\\n')",
        "sys.stdout.flush()",
        "sys.stdin.read()",
    ])  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=["-c", script])
    with open("/dev/null", "w") as quiet:
        limits = MCPLimits(max_message_bytes=1000)
        async with bounded_stdio(params, quiet, limits) as (read, write):
            ping = mcp_types.JSONRPCRequest(jsonrpc="2.0", id=7, method="ping")
            await write.send(SessionMessage(ping))
            with anyio.fail_after(20):  # before: no answer, the call waited for its timeout
                answer = await read.receive()
    assert isinstance(answer.message, mcp_types.JSONRPCError) and answer.message.id == 7
    assert "over the limit of 1000 (MCPLimits.max_message_bytes)" in answer.message.error.message
