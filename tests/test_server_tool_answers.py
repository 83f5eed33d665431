"""Answers that used provider server tools, over replayed traffic: a ``pause_turn``
is continued with the server tool blocks sent back exactly (the seed's PAUSED
rule); server tool calls never run here and are kept through a refusal (only
client tool calls are withheld); Responses ``web_search_call`` items with their
citations and Gemini grounding metadata stay in the answer's record."""

from __future__ import annotations

import json
from typing import Any

from conftest import RECORDINGS
from zett_agent import (
    AgentRunConfig,
    Model,
    ModelRequest,
    ServerTool,
    StopReason,
    UserMessage,
    create_agent,
)
from zett_agent.testing import ReplayServer, Reply


def lookup(word: str) -> str:
    """Look a word up."""
    raise AssertionError("a tool of a refused answer must never run")


async def test_pause_turn_is_continued_with_the_server_tool_blocks_replayed() -> None:
    paused = json.loads((RECORDINGS / "anthropic__pause_turn_web_search.json").read_text())
    done = {
        "type": "message",
        "model": "claude-x",
        "content": [{"type": "text", "text": "Found it."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }
    with ReplayServer([Reply.json(paused), Reply.json(done)]) as server:
        model = Model("anthropic", "claude-x", base_url=server.url, api_key="k", stream=False)
        config = AgentRunConfig(
            server_tools=[ServerTool.web_search(max_uses=10)], prompt_cache=False
        )
        agent = await create_agent(model, config)
        message = await agent.run("What is new?")
        await agent.aclose()
    assert message.text == "Found it." and message.stop is None
    assert len(server.requests) == 2  # PAUSED: the turn was continued
    first, second = (r.json for r in server.requests)
    assert first["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 10}]
    replayed = second["messages"][-1]
    assert replayed["role"] == "assistant"
    kinds = [block["type"] for block in replayed["content"]]
    assert kinds == [block["type"] for block in paused["content"]]  # every block, in order
    assert "server_tool_use" in kinds and "web_search_tool_result" in kinds
    assert replayed["content"] == paused["content"]  # exactly as the provider sent them


async def test_a_refusal_after_a_server_tool_keeps_the_stop_rules() -> None:
    with ReplayServer(
        [Reply.file(RECORDINGS / "anthropic__stream_refusal_after_server_tool.sse")]
    ) as server:
        model = Model("anthropic", "claude-x", base_url=server.url, api_key="k")
        config = AgentRunConfig(server_tools=[ServerTool.web_search()])
        agent = await create_agent(model, config, tools=[lookup])
        message = await agent.run("Search")
        await agent.aclose()
    assert message.stop is not None and message.stop.reason is StopReason.REFUSAL
    assert message.tool_calls == ()
    blocks = (message.provider_record or {}).get("content", [])
    assert any(block.get("type") == "server_tool_use" for block in blocks)  # kept for replay
    assert all(block.get("type") != "tool_use" for block in blocks)


async def test_responses_search_items_and_citations_stay_in_the_record() -> None:
    annotation = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": 5,
        "url": "https://example.com",
        "title": "Ex",
    }
    body = {
        "id": "resp_1",
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "news"},
            },
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Today", "annotations": [annotation]}],
            },
        ],
    }
    with ReplayServer(
        [Reply.json(body), Reply.json({**body, "output": body["output"][1:]})]
    ) as server:
        model = Model("openai-responses", "gpt-5", base_url=server.url, api_key="k", stream=False)
        agent = await create_agent(model, AgentRunConfig(server_tools=[ServerTool.web_search()]))
        message = await agent.run("news?")
        await agent.run("more")
        await agent.aclose()
    assert message.text == "Today" and message.tool_calls == ()
    output = (message.provider_record or {})["output"]
    assert output[0]["type"] == "web_search_call"
    assert output[1]["content"][0]["annotations"] == [annotation]
    replayed = server.requests[1].json["input"]
    assert {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "news"},
    } in replayed


async def test_gemini_grounding_metadata_is_kept_and_not_replayed() -> None:
    grounding = {
        "webSearchQueries": ["news"],
        "groundingChunks": [{"web": {"uri": "https://example.com", "title": "Ex"}}],
    }
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Today"}]},
                "finishReason": "STOP",
                "groundingMetadata": grounding,
            }
        ]
    }
    with ReplayServer([Reply.json(body), Reply.json(body)]) as server:
        model = Model("google", "gemini-x", base_url=server.url, api_key="k", stream=False)
        agent = await create_agent(model, AgentRunConfig(server_tools=[ServerTool.web_search()]))
        message = await agent.run("news?")
        await agent.run("more")
        await agent.aclose()
    assert (message.provider_record or {})["groundingMetadata"] == grounding
    sent: list[dict[str, Any]] = server.requests[1].json["contents"]
    assert sent[1] == {"role": "model", "parts": [{"text": "Today"}]}
    assert server.requests[0].json["tools"] == [{"googleSearch": {}}]


async def test_server_tool_calls_never_become_client_calls() -> None:
    wire_events = RECORDINGS / "anthropic__stream_pause_turn_message_delta.sse"
    with ReplayServer([Reply.file(wire_events)]) as server:
        model = Model("anthropic", "claude-x", base_url=server.url, api_key="k")
        response = await model.complete(ModelRequest("claude-x", [UserMessage("hi")]))
        await model.aclose()
    assert response.stop_info.reason is StopReason.PAUSED
    assert response.tool_calls == ()
