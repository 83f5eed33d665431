"""A tool name the model has seen keeps meaning the same server and tool for the
life of an ``MCPTools`` object (so for every conversation of its agents): a new
collision gets the new name, a tool that disappears answers its calls with an
error result saying so. Real stdio servers (``tests/mcp_servers``), a replayed
model over a real socket, and the servers' own call logs."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_helpers import (
    SERVERS,
    calls_in,
    counting_server,
    need_mcp,
    sent_tool_results,
    text_reply,
    tool_reply,
)
from zett_agent import ConfigError, Model, create_agent
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.mcp

CASES = Path(__file__).parent / "cases" / "mcp"


def model_for(replay: ReplayServer) -> Model:
    return Model("anthropic", "m", base_url=replay.url, api_key="test-key")


def offered(request: Any) -> list[str]:
    return [tool["name"] for tool in request.json["tools"]]


@pytest.fixture
async def alpha_and_beta(tmp_path: Path) -> AsyncIterator[tuple[Any, Path]]:
    """beta offers ``search``; alpha's ``grow`` adds a ``search`` of its own."""
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    log = tmp_path / "calls.jsonl"
    env = {"CALLS_FILE": str(log)}
    errors = open(tmp_path / "servers.log", "w")  # noqa: SIM115
    alpha = MCPServer.stdio(
        sys.executable, str(SERVERS / "alpha_grows_search.py"), env=env, log=errors
    )
    beta = MCPServer.stdio(sys.executable, str(SERVERS / "beta_search.py"), env=env, log=errors)
    async with MCPTools([alpha, beta]) as tools:
        yield tools, log
    errors.close()


async def test_the_case_a_list_changed_collision_never_repoints_search(
    alpha_and_beta: tuple[Any, Path],
) -> None:
    tools, log = alpha_and_beta
    replies = [
        Reply.file(CASES / "anthropic_call_search_1.sse"),
        Reply.file(CASES / "anthropic_call_grow.sse"),
        Reply.file(CASES / "anthropic_call_search_2.sse"),
        text_reply("done"),
    ]
    with ReplayServer(replies) as replay:
        agent = await create_agent(model_for(replay))
        tools.attach(agent)
        final = await agent.run("search twice")
        await agent.aclose()
    assert final.text == "done"
    servers = [(c["server"], c["tool"]) for c in calls_in(log)]
    assert servers == [("beta", "search"), ("alpha", "grow"), ("beta", "search")]
    before, after = offered(replay.requests[0]), offered(replay.requests[2])
    assert "search" in before and "alpha_search" not in before
    assert "search" in after and "alpha_search" in after  # the newcomer is namespaced
    assert tools.tools["search"].server_name == "search"
    assert "beta_search.py" in tools.tools["search"].server
    assert "alpha_grows_search.py" in tools.tools["alpha_search"].server
    [second] = sent_tool_results(replay.requests[3].json)
    assert second["content"] == "beta: 2 private notes"


async def test_names_stay_the_same_in_the_next_conversation_and_for_another_agent(
    alpha_and_beta: tuple[Any, Path],
) -> None:
    tools, log = alpha_and_beta
    with ReplayServer(
        [Reply.file(CASES / "anthropic_call_grow.sse"), text_reply("grown")]
    ) as replay:
        agent = await create_agent(model_for(replay))
        tools.attach(agent)
        await agent.run("grow")
        await agent.aclose()
    with ReplayServer([tool_reply(("c9", "search", '{"query": "q"}')), text_reply("ok")]) as replay:
        other = await create_agent(model_for(replay))
        tools.attach(other)  # a second agent of the same MCPTools: the same names
        await other.run("search")
        await other.aclose()
    assert {"search", "alpha_search", "grow"} <= set(offered(replay.requests[0]))
    assert calls_in(log)[-1] == {"server": "beta", "tool": "search", "query": "q"}


async def test_an_agent_whose_own_tool_has_an_offered_name_cannot_be_attached(
    alpha_and_beta: tuple[Any, Path],
) -> None:
    tools, _ = alpha_and_beta
    first = await create_agent(Model("anthropic", "m", base_url="http://127.0.0.1:9", api_key="k"))
    tools.attach(first)

    def search(query: str) -> str:
        """The agent's own search."""
        return query

    second = await create_agent(
        Model("anthropic", "m", base_url="http://127.0.0.1:9", api_key="k"), tools=[search]
    )
    with pytest.raises(ConfigError, match="'search' has a name already offered"):
        tools.attach(second)
    await first.aclose()
    await second.aclose()


async def test_before_anything_is_offered_the_agents_own_tools_keep_their_names(
    alpha_and_beta: tuple[Any, Path],
) -> None:
    tools, _ = alpha_and_beta
    assert "search" in tools.tools  # beta's, not attached yet

    def search(query: str) -> str:
        """The agent's own search."""
        return query

    agent = await create_agent(
        Model("anthropic", "m", base_url="http://127.0.0.1:9", api_key="k"), tools=[search]
    )
    tools.attach(agent)
    assert agent.tools["search"].description == "The agent's own search."
    assert tools.tools["beta_search"].server_name == "search"
    await agent.aclose()


async def test_a_tool_that_disappears_answers_with_an_error_and_is_no_longer_offered(
    tmp_path: Path,
) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    server, log = counting_server(tmp_path)
    replies = [
        tool_reply(("c1", "drop", '{"name": "add"}')),
        tool_reply(("c2", "add", '{"a": 1, "b": 2}')),  # the model still calls it
        text_reply("done"),
    ]
    async with MCPTools([server]) as tools:
        with ReplayServer(replies) as replay:
            agent = await create_agent(model_for(replay))
            tools.attach(agent)
            final = await agent.run("go")
            assert "add" in tools.gone and "add" not in tools.tools
            # a call decided later (an approval, a replay) meets the tombstone
            from zett_agent import ToolCall

            late = await agent.tools["add"].call(ToolCall("c3", "add", '{"a": 1, "b": 2}'))
            await agent.aclose()
    assert final.text == "done"
    assert "add" in offered(replay.requests[0]) and "add" not in offered(replay.requests[1])
    [result] = sent_tool_results(replay.requests[2].json)
    assert result["is_error"] is True  # not offered by that request: never sent
    assert late.is_error and "no longer offers its tool 'add'" in late.content
    assert [c["tool"] for c in calls_in(log)] == ["drop"]


async def test_a_tool_that_comes_back_gets_its_old_name(tmp_path: Path) -> None:
    need_mcp()
    from zett_agent.mcp import MCPTools

    server, log = counting_server(tmp_path)
    replies = [
        tool_reply(("c1", "grow", "{}")),
        tool_reply(("c2", "drop", '{"name": "late"}')),
        tool_reply(("c3", "grow", "{}")),
        tool_reply(("c4", "late", "{}")),
        text_reply("done"),
    ]
    async with MCPTools([server]) as tools:
        with ReplayServer(replies) as replay:
            agent = await create_agent(model_for(replay))
            tools.attach(agent)
            await agent.run("go")
            await agent.aclose()
    assert [c["tool"] for c in calls_in(log)] == ["grow", "drop", "grow", "late"]
    assert ["late" in offered(r) for r in replay.requests] == [False, True, False, True, True]
    assert sent_tool_results(replay.requests[4].json)[0]["content"] == "late tool ran"
