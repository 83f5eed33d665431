"""One ledger per run, over real sockets: an answer without usage is an unknown
spend that ends a run under a budget (never $0), on every protocol; the answer
that crosses a budget finishes but its tool calls never start (unless the host
opts in); the spend of fallback attempts, retried structured outputs,
summaries, MCP sampling, subagents and background runs counts toward the run's
budget and every ancestor's (parallel children share one remaining budget);
Gemini's ``toolUsePromptTokenCount`` is input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from conftest import RECORDINGS
from faults.wire import WIRES, Call
from zett_agent import (
    AgentEventType,
    AgentRunConfig,
    FallbackModel,
    Model,
    ModelRequest,
    StopReason,
    SubAgent,
    ToolCall,
    Usage,
    UserMessage,
    create_agent,
)
from zett_agent.model._budgets import BUDGET_NOT_RUN
from zett_agent.testing import ReplayServer, Reply

# a model with a known price per protocol (Ollama has no price table: tokens only)
PRICED = {
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-5",
    "openai-responses": "gpt-5",
    "gemini": "gemini-2.5-flash",
}
_USAGE_KEYS = {"usage", "usageMetadata", "prompt_eval_count", "eval_count"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _USAGE_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def without_usage(chunks: list[bytes]) -> list[bytes]:
    """The same answer with every usage field taken out (a relay that sends none)."""
    out: list[bytes] = []
    for chunk in chunks:
        lines = []
        for line in chunk.decode().split("\n"):
            data = line[len("data: ") :] if line.startswith("data: ") else ""
            if data and data.strip().startswith("{"):
                lines.append("data: " + json.dumps(_strip(json.loads(data))))
            elif line.strip().startswith("{"):
                lines.append(json.dumps(_strip(json.loads(line))))
            else:
                lines.append(line)
        out.append("\n".join(lines).encode())
    return out


ran: list[str] = []


def write_note(text: str) -> str:
    """Write a note."""
    ran.append(text)
    return "noted"


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_an_answer_without_usage_ends_a_run_under_a_budget(wire: str) -> None:
    w = WIRES[wire]
    ran.clear()
    answer = w.answer(["Looking."], Call(("x",)))
    replies = [w.reply(without_usage(answer)) for _ in range(12)]
    budget: dict[str, Any] = {"max_cost": 2.5e-4} if wire in PRICED else {"max_total_tokens": 1000}
    with ReplayServer(replies) as server:
        model = Model(w.vendor, PRICED.get(wire, "m"), base_url=server.url, api_key="k")
        agent = await create_agent(model, AgentRunConfig(**budget), tools=[write_note])
        events = [event async for event in agent.stream("hi")]
        await agent.aclose()
    assert len(server.requests) == 1  # not 12 calls to max_turns
    answer_message = next(e.message for e in events if e.type is AgentEventType.MODEL_COMPLETED)
    assert answer_message is not None and answer_message.usage.input_tokens is None
    final = events[-1].message
    assert final is not None and final.stop is not None
    raw = next(iter(budget))
    assert final.stop.raw == raw and final.stop.detail["unknown"]
    assert ran == []  # its tool call never started
    assert final.stop.detail["not_run_tool_calls"] == ["write_note"]
    if "max_cost" in budget:
        assert answer_message.cost is not None and answer_message.cost.usd is None
        assert events[-1].cost is not None and events[-1].cost.usd is None  # never $0.00


async def test_an_answer_without_usage_is_an_unknown_cost_not_zero() -> None:
    w = WIRES["anthropic"]
    with ReplayServer([w.reply(without_usage(w.answer(["ok"])))]) as server:
        model = Model("anthropic", "claude-sonnet-4-5", base_url=server.url, api_key="k")
        agent = await create_agent(model, AgentRunConfig(cost=True))
        done = [event async for event in agent.stream("hi")][-1]
        await agent.aclose()
    assert done.cost is not None and done.cost.usd is None
    assert done.cost.unknown == "the provider sent no usage"


def _calls(n: int) -> list[bytes]:
    """An Anthropic answer with ``n`` tool calls (usage 10 in, 5 out)."""
    w = WIRES["anthropic"]
    chunks = [*w.head(), *w.text("Working.")]
    chunks.append(
        b'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}\n\n'
    )
    for i in range(1, n + 1):
        start = {
            "type": "content_block_start",
            "index": i,
            "content_block": {"type": "tool_use", "id": f"c{i}", "name": "write_note", "input": {}},
        }
        delta = {
            "type": "content_block_delta",
            "index": i,
            "delta": {"type": "input_json_delta", "partial_json": json.dumps({"text": str(i)})},
        }
        stop = {"type": "content_block_stop", "index": i}
        for event in (start, delta, stop):
            chunks.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    tail = {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    chunks.append(f"event: message_delta\ndata: {json.dumps(tail)}\n\n".encode())
    chunks.append(b'event: message_stop\ndata: {"type": "message_stop"}\n\n')
    return chunks


@pytest.mark.parametrize("finish", [False, True])
async def test_no_tool_starts_after_the_budget(finish: bool) -> None:
    ran.clear()
    w = WIRES["anthropic"]
    replies = [w.reply(_calls(10)), w.reply(w.answer(["Done."]))]
    config = AgentRunConfig(max_total_tokens=15, finish_tools_over_budget=finish)
    with ReplayServer(replies) as server:
        model = Model("anthropic", "claude-sonnet-4-5", base_url=server.url, api_key="k")
        agent = await create_agent(model, config, tools=[write_note])
        events = [event async for event in agent.stream("hi")]
        await agent.aclose()
    assert len(server.requests) == 1
    final = events[-1].message
    assert final is not None and final.stop is not None and final.stop.raw == "max_total_tokens"
    results = [e.tool_result for e in events if e.type is AgentEventType.TOOL_CALL_COMPLETED]
    if finish:  # the host opted in: the crossing answer's calls ran, nothing after
        assert sorted(ran, key=int) == [str(i) for i in range(1, 11)]
    else:
        assert ran == []  # 0 of 10 started
        assert [r.content for r in results if r is not None] == [BUDGET_NOT_RUN] * 10
        assert final.stop.detail["not_run_tool_calls"] == ["write_note"] * 10
        assert AgentEventType.TOOL_CALL_STARTED not in [e.type for e in events]
    assert AgentEventType.BUDGET_REACHED in [e.type for e in events]


async def test_a_fallback_attempt_that_was_discarded_is_counted() -> None:
    w = WIRES["anthropic"]
    refusal = [c.replace(b'"end_turn"', b'"refusal"') for c in w.answer(["No."])]
    with (
        ReplayServer([w.reply(refusal)]) as first,
        ReplayServer([w.reply(w.answer(["Yes."]))]) as second,
    ):
        chain = FallbackModel(
            [
                Model("anthropic", "claude-sonnet-4-5", base_url=first.url, api_key="k"),
                Model("anthropic", "claude-sonnet-4-5", base_url=second.url, api_key="k"),
            ],
            fallback_on={StopReason.REFUSAL},
            after_output=True,
            breaker=None,
        )
        agent = await create_agent(chain, AgentRunConfig(cost=True))
        done = [event async for event in agent.stream("hi")][-1]
        await chain.aclose()
    assert done.message is not None and done.message.text == "Yes."
    [discarded, _answered] = done.message.attempts
    assert discarded.outcome == "stopped" and discarded.usage == Usage(10, 5)
    # both answers were billed: 2 x (10 input, 5 output) at Sonnet 4.5 prices
    assert done.cost is not None and done.cost.usd == pytest.approx(2 * (10 * 3e-6 + 5 * 15e-6))


class City(BaseModel):
    name: str


async def test_a_retried_structured_output_is_counted() -> None:
    w = WIRES["anthropic"]
    replies = [w.reply(w.answer(['{"nome": "x"}'])), w.reply(w.answer(['{"name": "Oslo"}']))]
    with ReplayServer(replies) as server:
        model = Model("anthropic", "claude-sonnet-4-5", base_url=server.url, api_key="k")
        agent = await create_agent(model, AgentRunConfig(output_mode="native"), output_type=City)
        done = [event async for event in agent.stream("hi")][-1]
        await agent.aclose()
    assert len(server.requests) == 2 and done.output == City(name="Oslo")
    assert done.usage == Usage(20, 10)


async def test_a_subagents_spend_counts_toward_the_parents_budget() -> None:
    """Three children run in parallel under a parent budget of 40 tokens: they
    share what is left of it (each answer 15 tokens), so the budget stops them and
    the parent, instead of each child spending a copy of it."""
    w = WIRES["anthropic"]
    three = [*w.head(), *w.text("Asking.")]
    for i in range(3):
        for event in (
            {
                "type": "content_block_start",
                "index": i + 1,
                "content_block": {
                    "type": "tool_use",
                    "id": f"r{i}",
                    "name": "researcher",
                    "input": {},
                },
            },
            {
                "type": "content_block_delta",
                "index": i + 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"task": "look"}'},
            },
            {"type": "content_block_stop", "index": i + 1},
        ):
            three.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
    three += w.tail("", Call(("",)))[-2:]
    child_turn = w.answer(["Looking."], Call(("x",)))
    with (
        ReplayServer([w.reply(three), w.reply(w.answer(["Done."]))]) as parent_server,
        ReplayServer([w.reply(child_turn) for _ in range(30)]) as child_server,
    ):
        child_model = Model(
            "anthropic", "claude-sonnet-4-5", base_url=child_server.url, api_key="k"
        )
        child = await create_agent(child_model, tools=[write_note])
        researcher = SubAgent(child, name="researcher", description="Finds sources.")
        model = Model("anthropic", "claude-sonnet-4-5", base_url=parent_server.url, api_key="k")
        parent = await create_agent(
            model, AgentRunConfig(max_total_tokens=40), tools=[researcher.tool]
        )
        done = [event async for event in parent.stream("hi")][-1]
        await parent.aclose()
        await child.aclose()
    # the parent's first answer (15) left 25. The three children start together
    # (nothing of theirs spent yet) and share what is left: once their answers are
    # in, every ledger says the budget is used up. With a copy of the budget each,
    # every child would go on to its max_turns (20 calls each).
    assert 3 <= len(child_server.requests) <= 4
    assert done.message is not None and done.message.stop is not None
    assert done.message.stop.raw == "max_total_tokens"
    assert len(parent_server.requests) == 1  # the parent asked nothing more
    stops = [r.stop for r in researcher.results]
    assert all(s is not None and s.raw == "max_total_tokens" for s in stops)
    # the run's ledger: the parent's answer and every child's
    assert done.usage.total_tokens == 15 * (1 + len(child_server.requests))


async def test_gemini_tool_use_prompt_tokens_are_input() -> None:
    """A google_search answer: total 832 = prompt 209 + candidates 301 + thoughts 36
    + toolUsePrompt 286 (google-genai's GenerateContentResponseUsageMetadata)."""
    expected = Usage(209 + 286, 301 + 36, None, 36, None)
    for recording, stream in (
        ("gemini__stream_doc_usage_tool_use_prompt_search.sse", True),
        ("gemini__doc_usage_tool_use_prompt_search.json", False),
    ):
        with ReplayServer([Reply.file(RECORDINGS / recording)]) as server:
            model = Model(
                "google", "gemini-2.5-flash", base_url=server.url, api_key="k", stream=stream
            )
            response = await model.complete(ModelRequest("gemini-2.5-flash", [UserMessage("?")]))
            await model.aclose()
        assert response.usage == expected
        assert response.usage.total_tokens == 832


@pytest.mark.mcp
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_mcp_sampling_spend_is_counted_and_reported() -> None:
    import sys

    from mcp_helpers import SERVERS, need_mcp
    from zett_agent.testing import ScriptedModel, reply

    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    w = WIRES["anthropic"]
    server = MCPServer.stdio(
        sys.executable, "-W", "ignore", str(SERVERS / "asking_server.py"), mode="legacy",
        sampling=2,
    )  # fmt: skip
    with ReplayServer([w.reply(w.answer(["Short."]))]) as sampling_server:
        sampler = Model("anthropic", "claude-sonnet-4-5", base_url=sampling_server.url, api_key="k")
        async with MCPTools([server], sampling_model=sampler) as tools:
            call = ToolCall("c1", "summarize", '{"text": "a long text"}')
            agent = await create_agent(
                ScriptedModel(reply(tool_calls=[call]), reply("ok")), AgentRunConfig(cost=True)
            )
            tools.attach(agent)
            events = [event async for event in agent.stream("go")]
            await agent.aclose()
        await sampler.aclose()
    kinds = [e.type for e in events]
    asked = kinds.index(AgentEventType.SAMPLING_REQUESTED)
    done = kinds.index(AgentEventType.SAMPLING_COMPLETED)
    assert kinds.index(AgentEventType.TOOL_CALL_STARTED) < asked < done
    assert done < kinds.index(AgentEventType.TOOL_CALL_COMPLETED)
    data = events[done].data
    assert data is not None and data["model"] == "claude-sonnet-4-5"
    assert data["usage"]["input_tokens"] == 10 and data["usage"]["output_tokens"] == 5
    assert data["cost_usd"] == pytest.approx(10 * 3e-6 + 5 * 15e-6)
    final = events[-1]
    # the scripted answers have no usage: the run's cost is unknown, and its tokens
    # hold the sampling call's (before, the run reported only its own answers)
    assert final.usage is not None and final.usage.input_tokens == 10
    assert final.cost is not None and final.cost.usd is None


async def test_a_summary_made_by_the_model_is_counted() -> None:
    from zett_agent import ContextCompaction, ToolResultMessage
    from zett_agent._messages import AssistantMessage
    from zett_agent.testing import ScriptedModel, reply

    history: list[Any] = []
    for n in range(6):
        history += [
            UserMessage(f"weather in city {n}?"),
            AssistantMessage("", (ToolCall(f"c{n}", "weather", "{}"),)),
            ToolResultMessage(f"c{n}", "weather", "sunny"),
            AssistantMessage(f"city {n} is sunny"),
        ]
    used = Usage(100, 20)
    model = ScriptedModel(
        reply("", stop=StopReason.CONTEXT_FULL, usage=Usage(10, 0)),
        reply("They were all sunny.", usage=used),  # the summary
        reply("ok", usage=Usage(10, 2)),
    )
    agent = await create_agent(model, extensions=[ContextCompaction(summarize="model")])
    done = [event async for event in agent.stream("next", history=history)][-1]
    assert len(model.requests) == 3
    assert done.usage == Usage(10, 0) + used + Usage(10, 2)


async def test_a_background_runs_spend_counts_toward_the_run_that_started_it() -> None:
    import anyio

    from zett_agent import BackgroundTasks
    from zett_agent.testing import ScriptedModel, reply

    child = await create_agent(ScriptedModel(reply("Found 3 sources.", usage=Usage(40, 10))))
    researcher = SubAgent(child, name="researcher", description="Finds sources.")
    parent_model = ScriptedModel(
        reply(
            "",
            [
                ToolCall("b1", "start_researcher", '{"task": "look"}'),
                ToolCall("w1", "await_tasks", "{}"),
            ],
            usage=Usage(10, 5),
        ),
        reply("Never asked.", usage=Usage(10, 5)),
    )
    async with BackgroundTasks() as tasks:

        async def await_tasks() -> str:
            """Wait for background tasks."""
            with anyio.fail_after(10):
                await tasks.wait_all()
            return "all done"

        parent = await create_agent(
            parent_model,
            AgentRunConfig(max_total_tokens=50, parallel_tools=False),
            tools=[tasks.tool(researcher), await_tasks],
        )
        done = [event async for event in parent.stream("research in the background")][-1]
    # 15 of the parent's own + 50 of the background child's: the budget of 50 is
    # used up before the parent's second call
    assert len(parent_model.requests) == 1
    assert done.message is not None and done.message.stop is not None
    assert done.message.stop.raw == "max_total_tokens"
    assert done.usage == Usage(50, 15)


def test_zett_run_max_cost_starts_no_tool_of_the_crossing_answer() -> None:
    import os
    import subprocess
    import sys

    body = b"".join(_calls(3)).replace(b'"write_note"', b'"get_time"')
    body = body.replace(b'{\\"text\\": ', b'{\\"timezone\\": ')
    with ReplayServer([Reply([body], content_type="text/event-stream")]) as server:
        env = {**os.environ, "ZETT_ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "k"}
        done = subprocess.run(
            [
                sys.executable, "-m", "zett_agent.cli", "run", "--json", "--tools", "demo",
                "--model", "anthropic:claude-sonnet-4-5", "--max-cost", "0.0001", "what time?",
            ],
            env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 10, done.stderr  # EXIT_CODES["max_cost"], as before
    records = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [r["type"] for r in records]
    assert "tool_call_started" not in kinds
    results = [r["tool_result"]["content"] for r in records if r["type"] == "tool_call_completed"]
    assert results == [BUDGET_NOT_RUN] * 3
    assert records[-1]["stop"]["raw"] == "max_cost"
    assert records[-1]["stop"]["detail"]["not_run_tool_calls"] == ["get_time"] * 3
    assert len(server.requests) == 1


@pytest.mark.mcp
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_mcp_sampling_is_refused_once_the_budget_is_reached() -> None:
    import sys

    from mcp_helpers import SERVERS, need_mcp
    from zett_agent.testing import ScriptedModel, reply

    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    server = MCPServer.stdio(
        sys.executable, "-W", "ignore", str(SERVERS / "asking_server.py"), mode="legacy",
        sampling=2,
    )  # fmt: skip
    sampler = ScriptedModel()  # never asked
    async with MCPTools([server], sampling_model=sampler) as tools:
        call = ToolCall("c1", "summarize", '{"text": "a long text"}')
        config = AgentRunConfig(max_total_tokens=10, finish_tools_over_budget=True)
        parent = ScriptedModel(reply(tool_calls=[call], usage=Usage(10, 5)))
        agent = await create_agent(parent, config)
        tools.attach(agent)
        events = [event async for event in agent.stream("go")]
        await agent.aclose()
    [result] = [e.tool_result for e in events if e.type is AgentEventType.TOOL_CALL_COMPLETED]
    assert result is not None and "the run's budget was reached" in result.content
    assert sampler.requests == []
    assert AgentEventType.SAMPLING_REQUESTED not in [e.type for e in events]


async def test_a_retry_a_recovery_sent_is_counted_with_the_answer_it_replaced() -> None:
    from zett_agent import RefusalFallback

    w = WIRES["anthropic"]
    refusal = [c.replace(b'"end_turn"', b'"refusal"') for c in w.answer(["No."])]
    with (
        ReplayServer([w.reply(refusal)]) as first,
        ReplayServer([w.reply(w.answer(["Yes."]))]) as second,
    ):
        model = Model("anthropic", "claude-sonnet-4-5", base_url=first.url, api_key="k")
        other = Model("anthropic", "claude-haiku-4-5", base_url=second.url, api_key="k")
        agent = await create_agent(
            model,
            AgentRunConfig(max_cost=1.0),
            extensions=[RefusalFallback(lambda n: other, model="claude-haiku-4-5")],
        )
        done = [event async for event in agent.stream("hi")][-1]
        await agent.aclose()
        await other.aclose()
    assert done.message is not None and done.message.text == "Yes."
    assert done.usage == Usage(20, 10)  # the superseded refusal was billed too
    # Sonnet 4.5's refusal ($3 / $15 per M) and Haiku 4.5's answer ($1 / $5 per M)
    assert done.cost is not None
    assert done.cost.usd == pytest.approx(10 * 3e-6 + 5 * 15e-6 + 10 * 1e-6 + 5 * 5e-6)
