"""MCP tools end to end: a replayed model (ReplayServer, real HTTP) calls the tools of
a real MCP server over stdio (tests/mcp_servers/counting_server.py, which logs every
call it receives). The log proves which calls reached the server: withheld
(REFUSAL, INTERRUPTED) and cut-off calls never do."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_helpers import (
    calls_in,
    counting_command,
    need_mcp,
    sent_tool_results,
    text_reply,
    tool_reply,
)
from zett_agent import AgentEventType, ConfigError, Model, StopReason, create_agent
from zett_agent.testing import ReplayServer

pytestmark = pytest.mark.mcp

E = AgentEventType


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "calls.jsonl"


@pytest.fixture
async def counting(log: Path, tmp_path: Path) -> AsyncIterator[Any]:
    """MCPTools over the counting server; its stderr goes to a file."""
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    with open(tmp_path / "server.log", "w") as errors:
        server = MCPServer.stdio(
            *counting_command(), env={"ZETT_MCP_CALLS": str(log)}, timeout=5, log=errors
        )
        async with MCPTools([server]) as tools:
            yield tools


def model_for(server: ReplayServer) -> Model:
    return Model("anthropic", "m", base_url=server.url, api_key="test-key")


async def run_with(
    counting: Any, replies: list[Any], prompt: str = "go"
) -> tuple[Any, ReplayServer]:
    with ReplayServer(replies) as replay:
        agent = await create_agent(model_for(replay))
        counting.attach(agent)
        events = [event async for event in agent.stream(prompt)]
        await agent.aclose()
    return events, replay


async def test_tools_are_listed_and_sent_to_the_model_with_their_schemas(counting: Any) -> None:
    events, replay = await run_with(counting, [text_reply("hi")])
    sent = {tool["name"]: tool for tool in replay.requests[0].json["tools"]}
    assert {"add", "fail", "crash", "hang", "picture", "weather", "grow"} <= set(sent)
    schema = sent["add"]["input_schema"]
    assert schema["type"] == "object" and set(schema["required"]) == {"a", "b"}
    assert schema["properties"]["a"]["type"] == "integer"
    assert sent["add"]["description"] == "Add two whole numbers."
    assert events[-1].type is E.RUN_COMPLETED


async def test_a_call_reaches_the_server_and_its_result_reaches_the_model(
    counting: Any, log: Path
) -> None:
    replies = [tool_reply(("c1", "add", '{"a": 2, "b": 40}')), text_reply("42")]
    events, replay = await run_with(counting, replies)
    assert calls_in(log) == [{"tool": "add", "arguments": {"a": 2, "b": 40}}]
    results = sent_tool_results(replay.requests[1].json)
    assert results[0]["tool_use_id"] == "c1" and results[0]["content"] == "42"
    assert not results[0].get("is_error")
    assert events[-1].message.text == "42"


async def test_is_error_becomes_an_error_result_and_the_run_goes_on(
    counting: Any, log: Path
) -> None:
    replies = [tool_reply(("c1", "fail", '{"message": "boom"}')), text_reply("sorry")]
    events, replay = await run_with(counting, replies)
    [result] = sent_tool_results(replay.requests[1].json)
    assert result["is_error"] is True
    assert "fail" in result["content"]
    assert [c["tool"] for c in calls_in(log)] == ["fail"]
    assert events[-1].message.text == "sorry"


async def test_invalid_arguments_never_reach_the_server(counting: Any, log: Path) -> None:
    replies = [
        tool_reply(("c1", "add", '{"a": "two", "b": 1}'), ("c2", "add", "[1, 2]")),
        text_reply("ok"),
    ]
    _, replay = await run_with(counting, replies)
    results = sent_tool_results(replay.requests[1].json)
    assert [r["is_error"] for r in results] == [True, True]
    assert "invalid arguments: a" in results[0]["content"]
    assert "not a JSON object" in results[1]["content"]
    assert calls_in(log) == []


async def test_a_server_that_crashes_mid_call_gives_an_error_result_and_the_run_goes_on(
    counting: Any, log: Path
) -> None:
    replies = [
        tool_reply(("c1", "crash", "{}")),
        tool_reply(("c2", "add", '{"a": 1, "b": 1}')),
        text_reply("the server is gone"),
    ]
    events, replay = await run_with(counting, replies)
    first = sent_tool_results(replay.requests[1].json)[0]
    second = sent_tool_results(replay.requests[2].json)[0]
    assert first["is_error"] is True and "crash" in first["content"]
    assert second["is_error"] is True  # the server exited: later calls fail too
    assert events[-1].type is E.RUN_COMPLETED
    assert events[-1].message.text == "the server is gone"


async def test_a_hanging_call_ends_at_the_timeout_and_the_server_is_told_to_cancel(
    log: Path, tmp_path: Path
) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    server = MCPServer.stdio(
        *counting_command(),
        env={"ZETT_MCP_CALLS": str(log)},
        timeout=1.0,
        log=open(tmp_path / "server.log", "w"),  # noqa: SIM115
    )
    replies = [tool_reply(("c1", "hang", "{}")), text_reply("it hung")]
    async with MCPTools([server]) as tools:
        with anyio.fail_after(20):
            events, replay = await run_with(tools, replies)
        with anyio.fail_after(60):  # a guard: the server process may be slow under load
            while {"cancelled": "hang"} not in calls_in(log):
                await anyio.sleep(0.05)
    [result] = sent_tool_results(replay.requests[1].json)
    assert result["is_error"] is True and "timeout of 1 seconds" in result["content"]
    assert events[-1].message.text == "it hung"


async def test_cancelling_the_run_sends_mcp_cancellation(counting: Any, log: Path) -> None:
    with ReplayServer([tool_reply(("c1", "hang", "{}"))]) as replay:
        agent = await create_agent(model_for(replay))
        counting.attach(agent)
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:

                async def cancel_once_the_call_arrives() -> None:
                    while not calls_in(log):
                        await anyio.sleep(0.05)
                    group.cancel_scope.cancel()

                group.start_soon(cancel_once_the_call_arrives)
                async for _ in agent.stream("go"):
                    pass
        await agent.aclose()
    with anyio.fail_after(60):  # a guard: the server process may be slow under load
        while {"cancelled": "hang"} not in calls_in(log):
            await anyio.sleep(0.05)
    last = agent.messages[-1]
    assert last.is_error and "cancelled" in last.content  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (
            tool_reply(
                ("c1", "add", '{"a": 1, "b": 2}'),
                stop_reason="refusal",
                stop_details={"type": "refusal", "category": "cyber", "explanation": "No."},
            ),
            StopReason.REFUSAL,
        ),
        (
            tool_reply(("c1", "add", '{"a": 1, "b": 2}'), drop_after_calls=True),
            StopReason.INTERRUPTED,
        ),
    ],
    ids=["refusal", "interrupted"],
)
async def test_withheld_calls_never_reach_the_server(
    counting: Any, log: Path, reply: Any, reason: StopReason
) -> None:
    events, replay = await run_with(counting, [reply])
    final = events[-1].message
    assert final.stop is not None and final.stop.reason is reason
    assert final.stop.detail["withheld_tool_calls"] == ["add"]
    assert calls_in(log) == []
    assert len(replay.requests) == 1


async def test_a_cut_off_call_never_reaches_the_server_and_a_whole_one_does(
    counting: Any, log: Path
) -> None:
    reply = tool_reply(
        ("c1", "add", '{"a": 1, "b": 2}'),
        ("c2", "add", '{"a": 1, "b'),
        stop_reason="max_tokens",
    )
    _, replay = await run_with(counting, [reply, text_reply("done")])
    results = sent_tool_results(replay.requests[1].json)
    assert [r.get("is_error", False) for r in results] == [False, True]
    assert "cut off" in results[1]["content"]
    assert calls_in(log) == [{"tool": "add", "arguments": {"a": 1, "b": 2}}]


async def test_results_map_text_images_resources_and_structured_content(counting: Any) -> None:
    replies = [
        tool_reply(("c1", "picture", "{}"), ("c2", "weather", '{"city": "Oslo"}')),
        text_reply("seen"),
    ]
    _, replay = await run_with(counting, replies)
    picture, weather = sent_tool_results(replay.requests[1].json)
    text, image = picture["content"]  # Anthropic takes images in tool results: sent as one
    assert text["text"].splitlines() == [
        "a red dot",
        "[image image/png, 8 bytes]",
        "[resource file:///notes.txt text/plain]",
        "note text",
        "[resource link file:///big.bin: big — a big file]",
    ]
    source = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    assert image == {"type": "image", "source": source}
    assert json.loads(weather["content"]) == {"city": "Oslo", "temperature": 21}


async def test_a_long_result_is_cut_at_the_limit(log: Path, tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    server = MCPServer.stdio(
        *counting_command(),
        env={"ZETT_MCP_CALLS": str(log)},
        max_result_chars=100,
        log=open(tmp_path / "server.log", "w"),  # noqa: SIM115
    )
    replies = [tool_reply(("c1", "shout", '{"text": "ab"}')), text_reply("ok")]
    async with MCPTools([server]) as tools:
        _, replay = await run_with(tools, replies)
    [result] = sent_tool_results(replay.requests[1].json)
    assert result["content"].startswith("AB" * 50 + "\n[result cut: 2000 characters")


async def test_list_changed_refreshes_the_tools_before_the_next_request(
    counting: Any, log: Path
) -> None:
    replies = [
        tool_reply(("c1", "grow", "{}")),
        tool_reply(("c2", "late", "{}")),
        text_reply("done"),
    ]
    _, replay = await run_with(counting, replies)
    first = {t["name"] for t in replay.requests[0].json["tools"]}
    second = {t["name"] for t in replay.requests[1].json["tools"]}
    assert "late" not in first and "late" in second
    assert [c["tool"] for c in calls_in(log)] == ["grow", "late"]
    result = sent_tool_results(replay.requests[2].json)[0]
    assert result["content"] == "late tool ran"


async def test_list_changed_over_the_2026_protocol_listen_stream(log: Path, tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    server = MCPServer.stdio(
        *counting_command(),
        env={"ZETT_MCP_CALLS": str(log)},
        mode="auto",
        log=open(tmp_path / "server.log", "w"),  # noqa: SIM115
    )
    replies = [
        tool_reply(("c1", "grow", "{}")),
        tool_reply(("c2", "late", "{}")),
        text_reply("done"),
    ]
    async with MCPTools([server]) as tools:
        assert (tools.connections[0].protocol_version or "") >= "2026-07-28"
        _, replay = await run_with(tools, replies)
    assert "late" in {t["name"] for t in replay.requests[1].json["tools"]}
    assert [c["tool"] for c in calls_in(log)] == ["grow", "late"]


async def test_allow_deny_prefix_and_collisions(log: Path, tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    errors = open(tmp_path / "server.log", "w")  # noqa: SIM115
    env = {"ZETT_MCP_CALLS": str(log)}
    first = MCPServer.stdio(*counting_command(), env=env, allow=["add", "fail"], log=errors)
    second = MCPServer.stdio(*counting_command(), env=env, deny=["crash"], log=errors)
    third = MCPServer.stdio(*counting_command(), env=env, prefix="c3", allow=["add"], log=errors)

    def add(a: int, b: int) -> int:
        """The agent's own add."""
        return a + b

    async with MCPTools([first, second, third]) as tools:
        with ReplayServer([text_reply("hi")]) as replay:
            agent = await create_agent(model_for(replay), tools=[add])
            tools.attach(agent)
            await agent.run("hi")
            await agent.aclose()
    names = [t["name"] for t in replay.requests[0].json["tools"]]
    assert names[0] == "add"  # the agent's own tool keeps its name
    assert "counting_add" in names and "counting_fail" in names  # namespaced, not dropped
    assert "counting_add_2" in names  # the second server's add
    assert "crash" not in names and "counting_crash" not in names
    assert "c3_add" in names
    assert len(names) == len(set(names))


async def test_a_server_that_cannot_start_is_a_config_error_naming_the_command() -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    missing = MCPServer.stdio("/nonexistent/zett-mcp-server", "--flag")
    with pytest.raises(ConfigError, match="/nonexistent/zett-mcp-server --flag"):
        async with MCPTools([missing]):
            pass
    exits = MCPServer.stdio(sys.executable, "-c", "raise SystemExit(2)", connect_timeout=10)
    with pytest.raises(ConfigError, match="could not be started"):
        async with MCPTools([exits]):
            pass


async def test_an_unreachable_url_is_a_config_error_naming_it() -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    with anyio.fail_after(20):
        with pytest.raises(ConfigError, match=r"http://127\.0\.0\.1:9/mcp"):
            async with MCPTools([MCPServer.http("http://127.0.0.1:9/mcp", connect_timeout=5)]):
                pass


async def test_an_mcp_tool_that_needs_approval_reaches_the_server_only_once_approved(
    log: Path, tmp_path: Path
) -> None:
    need_mcp()
    from zett_agent.approvals import approve
    from zett_agent.mcp import MCPServer, MCPTools

    server = MCPServer.stdio(
        *counting_command(),
        env={"ZETT_MCP_CALLS": str(log)},
        approval=["add"],
        log=open(tmp_path / "server.log", "w"),  # noqa: SIM115
    )
    replies = [
        tool_reply(("c1", "add", '{"a": 1, "b": 1}'), ("c2", "weather", '{"city": "Rome"}')),
        text_reply("2"),
    ]
    async with MCPTools([server]) as tools:
        with ReplayServer(replies) as replay:
            agent = await create_agent(model_for(replay))
            tools.attach(agent)
            await agent.run("go")
            assert agent.pending_approval is not None and agent.pending_approval.ids == ["c1"]
            assert [c["tool"] for c in calls_in(log)] == ["weather"]  # add did not reach it
            final = await agent.approve({"c1": approve()})
            await agent.aclose()
    assert [c["tool"] for c in calls_in(log)] == ["weather", "add"]
    assert final.text == "2"


async def test_http_headers_reach_the_server_and_a_401_is_an_authorization_error() -> None:
    need_mcp()
    from zett_agent import MCPAuthorizationError
    from zett_agent.mcp import MCPServer, MCPTools
    from zett_agent.testing import Reply

    denied = Reply.json({"error": "unauthorized"}, status=401)
    with ReplayServer([denied]) as replay:
        url = f"{replay.url}/mcp"
        server = MCPServer.http(
            url, headers={"Authorization": "Bearer t0k3n-secret"}, connect_timeout=5
        )
        with anyio.fail_after(20), pytest.raises(MCPAuthorizationError) as raised:
            async with MCPTools([server]):
                pass
    assert isinstance(raised.value, ConfigError) and raised.value.status == 401
    assert "needs authorization" in str(raised.value) and url in str(raised.value)
    assert "t0k3n-secret" not in str(raised.value)
    first = replay.requests[0]
    assert first.method == "POST" and first.path == "/mcp"
    headers = {k.lower(): v for k, v in first.headers.items()}
    assert headers["authorization"] == "Bearer t0k3n-secret"
    assert first.json["method"] == "initialize"


async def test_leaving_the_block_takes_the_tools_out_of_the_agent(counting: Any) -> None:
    def own() -> str:
        """The agent's own tool."""
        return "own"

    agent = await create_agent(
        Model("anthropic", "m", base_url="http://127.0.0.1:9", api_key="k"), tools=[own]
    )
    counting.attach(agent)
    assert {"own", "add"} <= set(agent.tools)
    await counting.__aexit__(None, None, None)
    assert set(agent.tools) == {"own"}
    await agent.aclose()
