"""Usage, cost and budgets over replayed traffic: cache read and write tokens and
reasoning tokens read from recorded usage blocks on every protocol; the cost of a
known model at the request's time from the pinned genai-prices table (never from
the network); unknown prices say so; ``max_cost`` and ``max_total_tokens`` end a
run like ``max_turns`` (own raw value, own exit status), and ``max_cost`` with an
unknown price refuses to start."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from conftest import RECORDINGS
from faults.wire import WIRES
from zett_agent import (
    AgentEventType,
    AgentRunConfig,
    ConfigError,
    Cost,
    Model,
    ModelRequest,
    Usage,
    UserMessage,
    create_agent,
)
from zett_agent.model._costs import price
from zett_agent.testing import ReplayServer, Reply

JAN = datetime.datetime(2026, 1, 15, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("vendor", "recording", "usage"),
    [
        (
            "anthropic",
            "anthropic__doc_usage_cache_read_write.json",
            Usage(4250, 80, 3000, None, 1200),
        ),
        (
            "openai",
            "openai_chat__doc_usage_cached_reasoning.json",
            Usage(2006, 300, 1920, 128, None),
        ),
        (
            "openai-responses",
            "openai_responses__doc_usage_cached_reasoning.json",
            Usage(2006, 300, 1920, 128, None),
        ),
        # Gemini: implicit-cache hits are cachedContentTokenCount; output includes thoughts
        ("google", "gemini__doc_usage_implicit_cache.json", Usage(2006, 300, 1920, 100, None)),
        ("ollama", "ollama__doc_usage_counts.json", Usage(26, 7, None, None, None)),
        ("openrouter", "openrouter__doc_usage_cache_write.json", Usage(4250, 80, 3000, None, 1200)),
    ],
)
async def test_cache_and_reasoning_tokens_come_from_recorded_usage(
    vendor: str, recording: str, usage: Usage
) -> None:
    body = (RECORDINGS / recording).read_bytes()
    with ReplayServer([Reply.body(body)]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=False)
        response = await model.complete(ModelRequest("m", [UserMessage("hi")]))
        await model.aclose()
    assert response.text == "Cached."
    assert response.usage == usage
    assert response.usage.cache_read_tokens == usage.cached_input_tokens


def test_cost_of_a_known_model_at_the_request_time() -> None:
    usage = Usage(
        input_tokens=4250, output_tokens=80, cached_input_tokens=3000, cache_write_tokens=1200
    )
    # Claude Sonnet 4.5: $3 / M input, $3.75 / M cache write, $0.30 / M cache read, $15 / M output
    expected = 50 * 3e-6 + 1200 * 3.75e-6 + 3000 * 0.30e-6 + 80 * 15e-6
    cost = price("anthropic", "claude-sonnet-4-5-20250929", usage, JAN)
    assert cost.usd == pytest.approx(expected) == pytest.approx(0.00675)
    # GPT-5: $1.25 / M input, $0.125 / M cached input, $10 / M output
    gpt = price("openai", "gpt-5", Usage(2006, 300, 1920), JAN)
    assert gpt.usd == pytest.approx(86 * 1.25e-6 + 1920 * 0.125e-6 + 300 * 10e-6)


def test_unknown_prices_say_unknown_not_zero() -> None:
    usage = Usage(100, 10)
    local = price("llamacpp", "smollm2", usage, JAN)
    assert local.usd is None and str(local) == "unknown" and "llamacpp" in (local.unknown or "")
    missing = price("openai", "no-such-model-9", usage, JAN)
    assert missing.usd is None and "no price" in (missing.unknown or "")
    assert (Cost(0.5) + local).usd is None  # a sum with an unknown part is unknown


def test_prices_never_come_from_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import genai_prices.update_prices as updates
    import httpx2  # genai-prices' HTTP client, used only by its UpdatePrices

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("genai-prices tried the network")

    monkeypatch.setattr(httpx2, "get", refuse)
    monkeypatch.setattr(updates.UpdatePrices, "start", refuse)
    cost = price("openai", "gpt-5", Usage(1000, 100), JAN)
    assert cost.usd is not None and cost.usd > 0
    from genai_prices import data_snapshot

    assert data_snapshot.get_snapshot().from_auto_update is False  # the bundled table


async def test_each_answer_and_the_run_carry_their_cost() -> None:
    wire = WIRES["anthropic"]  # usage: 10 input, 5 output per answer
    with ReplayServer([wire.reply(wire.answer(["ok"]))]) as server:
        model = Model("anthropic", "claude-sonnet-4-5", base_url=server.url, api_key="k")
        agent = await create_agent(model, AgentRunConfig(cost=True))
        events = [event async for event in agent.stream("hi")]
        await agent.aclose()
    done = events[-1]
    assert done.type is AgentEventType.RUN_COMPLETED and done.message is not None
    assert done.message.cost is not None and done.message.cost.usd == pytest.approx(
        10 * 3e-6 + 5 * 15e-6
    )
    assert done.cost == done.message.cost and done.usage == Usage(10, 5)
    record = done.to_dict()
    assert record["cost"]["usd"] == pytest.approx(1.05e-4) and record["usage"]["total_tokens"] == 15


async def test_max_cost_with_an_unknown_price_refuses_to_start() -> None:
    with ReplayServer([]) as server:
        model = Model("openai", "not-a-priced-model", base_url=server.url, api_key="k")
        agent = await create_agent(model, AgentRunConfig(max_cost=1.0))
        with pytest.raises(ConfigError, match="price of openai:not-a-priced-model is unknown"):
            await agent.run("hi")
        await agent.aclose()
    assert server.requests == []


def _tool_loop(n: int) -> list[Reply]:
    wire = WIRES["anthropic"]
    from faults.wire import Call

    calls = [wire.reply(wire.answer(["Looking."], Call(("x",)))) for _ in range(n)]
    return [*calls, wire.reply(wire.answer(["Done."]))]


def note(text: str) -> str:
    """Write a note."""
    return "noted"


@pytest.mark.parametrize(
    ("budget", "raw"),
    [({"max_total_tokens": 30}, "max_total_tokens"), ({"max_cost": 0.0002}, "max_cost")],
)
async def test_budgets_end_the_run_like_max_turns(budget: dict[str, Any], raw: str) -> None:
    with ReplayServer(_tool_loop(5)) as server:
        model = Model("anthropic", "claude-sonnet-4-5", base_url=server.url, api_key="k")
        agent = await create_agent(model, AgentRunConfig(**budget), tools=[note])
        events = [event async for event in agent.stream("hi")]
        await agent.aclose()
    # each call used 15 tokens and cost $0.000105: the budget is spent after two calls
    assert len(server.requests) == 2
    final = events[-1].message
    assert final is not None and final.stop is not None
    assert (final.stop.raw, final.stop.reason.value) == (raw, "other")
    assert final.stop.detail["marker"] is True and raw in final.stop.detail
    assert AgentEventType.BUDGET_REACHED in [event.type for event in events]
    assert agent.messages[-1] == final  # stored, as the max_turns marker is


def test_zett_run_exits_with_the_budgets_own_status() -> None:
    replies = _tool_loop(5)
    with ReplayServer(replies) as server:
        env = {
            **os.environ,
            "ZETT_ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "k",
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "zett_agent.cli",
                "run",
                "--json",
                "--tools",
                "none",
                "--model",
                "anthropic:claude-sonnet-4-5",
                "--max-total-tokens",
                "10",
                "hi",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 11, done.stderr  # EXIT_CODES["max_total_tokens"]
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[-1]["type"] == "run_completed"
    assert records[-1]["stop"]["raw"] == "max_total_tokens"
    assert records[-1]["cost"]["usd"] == pytest.approx(1.05e-4)  # --json prices the run
    from zett_agent.cli import EXIT_CODES

    assert (EXIT_CODES["max_cost"], EXIT_CODES["max_total_tokens"]) == (10, 11)
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)  # never a reused number
